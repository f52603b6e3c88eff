package timingwheel

import (
	"errors"
	"fmt"
	"time"
	"unsafe"
)

// A Scheduler gives the times of a periodic timer's runs. Next returns the
// time of the run after the one scheduled at prev; it must be after prev.
// The zero time ends the series. So does a Next that panics or returns a
// time not after prev: the panic handler (see WithPanicHandler) receives
// the panic value or an error that says so (for the first Next, the caller
// of ScheduleFunc does).
type Scheduler interface {
	Next(prev time.Time) time.Time
}

// Every returns a Scheduler of runs d apart. ScheduleFunc rejects d <= 0.
func Every(d time.Duration) Scheduler { return every(d) }

type every time.Duration

func (e every) Next(prev time.Time) time.Time { return prev.Add(time.Duration(e)) }

var errBadEvery = errors.New("timingwheel: Every: the period must be positive")

// maxSkip bounds how many missed runs of a general Scheduler are skipped
// one Next at a time; see periodic.next.
const maxSkip = 1024

// ScheduleFunc runs f at the times s gives, starting with s.Next(now). Each
// run's time is computed from the previous scheduled time, not from when the
// previous run happened, so the series does not drift. Times are measured as
// time.Until measures them, so a Scheduler that gives wall-clock times (a
// cron schedule) is not moved by a step of the wall clock.
//
// Runs of one series never overlap. If a run overruns the next scheduled
// time, the times that have already passed are skipped, as time.Ticker drops
// ticks, and the series continues at the first scheduled time still ahead;
// past 1024 of them, at s.Next(now), so that Next is not called without
// bound.
// The returned Timer's Stop ends the series; Reset moves the next run, also
// during a run, which it then follows.
//
// Under WithMaxPending a series holds one place in the bound from
// ScheduleFunc until it ends, also while a run is in progress.
//
// The first s.Next runs in the caller's goroutine (a panic there reaches
// the caller). If it returns the zero time, nothing is scheduled and the
// returned Timer is inert; if it returns a time not after now, ScheduleFunc
// returns an error and schedules nothing.
func (st *SystemTimer) ScheduleFunc(s Scheduler, f func()) (*Timer, error) {
	st.mustBeMade("ScheduleFunc")
	switch {
	case s == nil:
		return nil, errNilScheduler
	case f == nil:
		return nil, errNilFunc
	}
	if e, ok := s.(every); ok && e <= 0 {
		return nil, errBadEvery
	}
	p := &periodic{sched: s, f: f}
	t := &p.t
	t.kind = kindPeriodic // runTimer calls p.run
	pc := st.attach(t, true)
	if st.closed.Load() {
		return nil, ErrStopped
	}
	first, ok, bad := p.first(st.clockNow())
	if bad != nil {
		return nil, bad.(error)
	}
	if !ok {
		return t, nil // idle
	}
	if !p.hold(true) {
		return nil, ErrTooManyPending
	}
	p.prev = first
	when, now := st.deadline(first)
	if err := st.arm(t, when, now, pc); err != nil {
		p.release()
		return nil, err
	}
	return t, nil
}

// A periodic is a timer made by ScheduleFunc. Its Timer comes first, so
// that a *Timer of kind kindPeriodic can be turned back into it.
//
// A periodic timer is fired from the moment its run is handed to the
// executor until rearm, after the run, schedules the next one: that is what
// keeps runs from overlapping. Stop and Reset during that time leave a
// request that rearm carries out.
type periodic struct {
	t     Timer
	sched Scheduler
	f     func()

	// Guarded by t.sh.mu.
	prev     time.Time // the time of the run last scheduled, as the Scheduler gave it or Reset set it
	stopReq  bool      // Stop was called while fired: the series ends after the run
	resetReq bool      // Reset was called while fired: the next run is at resetAt
	resetAt  time.Time
	held     bool // holds a place in WithMaxPending's bound
}

var _ = [1]struct{}{}[unsafe.Offsetof(periodic{}.t)] // t must be the first field

// periodicOf returns the periodic that t, of kind kindPeriodic, belongs to.
func periodicOf(t *Timer) *periodic { return (*periodic)(unsafe.Pointer(t)) }

// hold takes a place in WithMaxPending's bound for the series, if there is
// one, and reports false if the bound is reached. Called before the timer
// is armed, with collect (the places shards cache are collected before a
// refusal), or with t.sh.mu held, without (see reserve).
func (p *periodic) hold(collect bool) bool {
	st := p.t.sh.st
	if st.maxPending == 0 || p.held {
		return true
	}
	took := false
	if collect {
		took = st.takeFree(1) > 0 || st.collectAndTake()
	} else {
		took = p.t.sh.reserve() // under its lock: its own places, or st.free
	}
	if !took {
		st.rejected.Add(1)
		return false
	}
	p.held = true
	return true
}

// release gives back the series' place in the bound: the series ended.
func (p *periodic) release() {
	if p.held {
		p.held = false
		touchShared("pending")
		p.t.sh.st.free.Add(1)
	}
}

func (p *periodic) run() {
	defer p.rearm() // also after a panic: a panicking run does not end the series
	p.f()
}

// rearm schedules the next run after the one that just ran, or carries out
// a Stop or Reset made during the run.
//
// The Scheduler is user code: rearm calls it with the shard's lock released,
// and takes the lock again after it (no deferred unlock spans the call, so
// a panic in Next leaves the lock as it found it, released). A
// Next that panics, or that gives a time not after the previous one, ends
// the series, and the panic handler hears of it.
func (p *periodic) rearm() {
	t := &p.t
	sh := t.sh
	st := sh.st
	// The clock may be the user's (WithClock): read it with no lock held.
	// The deadline of a time measured against an earlier reading is the
	// same (see deadlineFrom).
	n := st.clockNow()
	sh.mu.Lock()
	for {
		if _, s := unpack(t.w.Load()); s != stateFired || sh.closed {
			if s == stateFired {
				// The series ends with the SystemTimer, which stopped
				// during this run: its place goes back.
				p.release()
			}
			sh.unlock()
			return // returned by SystemTimer.Stop
		}
		var at time.Time
		switch {
		case p.stopReq:
			p.stopReq = false
			t.w.Store(pack(0, stateStopped))
			p.release()
			sh.unlock()
			return
		case p.resetReq:
			p.resetReq = false
			at = p.resetAt
		default:
			prev := p.prev
			sh.unlock()
			failpoint("rearm:next")
			n = st.clockNow()
			next, ok, bad := p.nextOrExit(prev, n)
			sh.mu.Lock()
			if p.stopReq || p.resetReq || sh.closed {
				continue // Stop or Reset got there meanwhile
			}
			if !ok {
				t.w.Store(pack(0, stateStopped)) // the series ended
				p.release()
				sh.unlock()
				if bad != nil {
					st.pool.Report(bad)
				}
				return
			}
			at = next
		}
		p.prev = at
		when, now := st.deadlineFrom(at, n)
		t.w.Store(pack(st.toValue(when), statePending))
		sh.admit(t, now)
		sh.unlock()
		return
	}
}

// stop is Timer.Stop of a periodic timer.
func (p *periodic) stop() bool {
	t := &p.t
	sh := t.sh
	now := sh.st.now() // the clock may be the user's: read it with no lock held
	sh.mu.Lock()
	defer sh.unlock()
	touch(sh, "lock")
	sh.drain(now) // a queued timer becomes pending
	switch _, s := unpack(t.w.Load()); s {
	case statePending:
		sh.stopPending(t) // under mu, only this goroutine changes w
		p.release()
		return true
	case stateFired:
		// A run was handed over: the series ends after it.
		p.stopReq, p.resetReq = true, false
	}
	return false
}

// reset is Timer.Reset of a periodic timer: the next run moves to d from
// now, and the series continues from there.
func (p *periodic) reset(d time.Duration) (bool, error) {
	t := &p.t
	sh := t.sh
	st := sh.st
	at := st.clockNow().Add(max(d, 0))
	when, now := st.deadline(at)
	sh.mu.Lock()
	defer sh.unlock()
	touch(sh, "lock")
	if sh.closed {
		return false, ErrStopped
	}
	sh.drain(now)
	switch _, s := unpack(t.w.Load()); s {
	case stateFired:
		// A run was handed over: the next run is at, after it.
		p.resetReq, p.resetAt, p.stopReq = true, at, false
		return false, nil
	case statePending:
		t.unlink()
		p.prev = at
		t.w.Store(pack(st.toValue(when), statePending))
		sh.stats.moved++
		sh.relink(t, now)
		return true, nil
	case stateReturned:
		return false, ErrStopped
	default: // idle or stopped: the series starts again
		if !p.hold(false) { // under the lock: see reserve
			return false, ErrTooManyPending
		}
	}
	p.prev = at
	t.w.Store(pack(st.toValue(when), statePending))
	sh.admit(t, now)
	return false, nil
}

// nextOrExit is next that also survives a Next that ends its goroutine
// (runtime.Goexit, as t.FailNow does in a test's Scheduler): recover does not
// stop that, so the series would stay fired for ever. It ends the series
// then, and tells the panic handler, before the goroutine goes.
func (p *periodic) nextOrExit(prev, now time.Time) (next time.Time, ok bool, bad any) {
	returned := false
	defer func() {
		if returned {
			return
		}
		t := &p.t
		sh := t.sh
		sh.mu.Lock()
		if _, s := unpack(t.w.Load()); s == stateFired && !sh.closed {
			t.w.Store(pack(0, stateStopped))
			p.stopReq, p.resetReq = false, false
			p.release()
		}
		sh.unlock()
		sh.st.pool.Report(errors.New("timingwheel: Scheduler.Next called runtime.Goexit: the series ends"))
	}()
	next, ok, bad = p.next(prev, now)
	returned = true
	return next, ok, bad
}

// next returns the first scheduled time after prev that is after now, or
// ok false when the series ends: at the zero time, or, with bad saying
// why, when the Scheduler panicked or gave a time not after the one before.
func (p *periodic) next(prev, now time.Time) (next time.Time, ok bool, bad any) {
	defer func() {
		if r := recover(); r != nil {
			next, ok, bad = time.Time{}, false, r
		}
	}()
	next = p.sched.Next(prev)
	if next.IsZero() {
		return time.Time{}, false, nil
	}
	if !next.After(prev) {
		return time.Time{}, false, stalledError(prev, next)
	}
	if next.After(now) {
		return next, true, nil
	}
	if e, ok := p.sched.(every); ok {
		// Skip the missed runs in one step.
		k := now.Sub(prev)/time.Duration(e) + 1
		return prev.Add(k * time.Duration(e)), true, nil
	}
	for range maxSkip {
		n := p.sched.Next(next)
		if n.IsZero() {
			return time.Time{}, false, nil
		}
		if !n.After(next) {
			return time.Time{}, false, stalledError(next, n)
		}
		if next = n; next.After(now) {
			return next, true, nil
		}
	}
	// Still behind: the series goes on from now, never at a time passed.
	return p.first(now)
}

// first returns the first time of the series after now, s.Next(now): ok
// false at the zero time, and, with bad saying so, at a time not after now.
func (p *periodic) first(now time.Time) (next time.Time, ok bool, bad any) {
	next = p.sched.Next(now)
	switch {
	case next.IsZero():
		return time.Time{}, false, nil
	case !next.After(now):
		return time.Time{}, false, stalledError(now, next)
	}
	return next, true, nil
}

// stalledError is what the panic handler receives when a Scheduler's Next
// does not move forward: the series ends there.
func stalledError(prev, next time.Time) error {
	return fmt.Errorf("timingwheel: Scheduler.Next(%v) returned %v, not after it: the series ends", prev, next)
}
