package timingwheel

import (
	"errors"
	"time"
	"unsafe"
)

// A Scheduler gives the times of a periodic timer's runs. Next returns the
// time of the run after the one scheduled at prev; it must be after prev.
// The zero time ends the series.
type Scheduler interface {
	Next(prev time.Time) time.Time
}

// Every returns a Scheduler of runs d apart. ScheduleFunc rejects d <= 0.
func Every(d time.Duration) Scheduler { return every(d) }

type every time.Duration

func (e every) Next(prev time.Time) time.Time { return prev.Add(time.Duration(e)) }

var errBadEvery = errors.New("timingwheel: Every: the period must be positive")

// maxSkip bounds how many missed runs of a general Scheduler are skipped in
// one go; see periodic.rearm.
const maxSkip = 1024

// ScheduleFunc runs f at the times s gives, starting with s.Next(now). Each
// run's time is computed from the previous scheduled time, not from when the
// previous run happened, so the series does not drift.
//
// Runs of one series never overlap. If a run overruns the next scheduled
// time, the times that have already passed are skipped, as time.Ticker drops
// ticks, and the series continues at the first scheduled time still ahead.
// The returned Timer's Stop ends the series; Reset moves the next run.
//
// If s.Next(now) is the zero time, nothing is scheduled and the returned
// Timer is inert.
func (st *SystemTimer) ScheduleFunc(s Scheduler, f func()) (*Timer, error) {
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
	t.sh = st.shardOf(t)
	if st.closed.Load() {
		return nil, ErrStopped
	}
	first := s.Next(st.clock.Now())
	if first.IsZero() {
		t.state.Store(stateIdle)
		return t, nil
	}
	when, now := st.deadline(first)
	p.at = when
	if err := st.arm(t, when, now); err != nil {
		return nil, err
	}
	return t, nil
}

// A periodic is a timer made by ScheduleFunc. Its Timer comes first, so
// that a *Timer of kind kindPeriodic can be turned back into it.
type periodic struct {
	t     Timer
	sched Scheduler
	f     func()
	at    int64 // the run last scheduled, ns since the epoch; guarded by t.sh.mu
}

var _ = [1]struct{}{}[unsafe.Offsetof(periodic{}.t)] // t must be the first field

// periodicOf returns the periodic that t, of kind kindPeriodic, belongs to.
func periodicOf(t *Timer) *periodic { return (*periodic)(unsafe.Pointer(t)) }

func (p *periodic) run() {
	defer p.rearm() // also after a panic: a panicking run does not end the series
	p.f()
}

// rearm schedules the next run after the one that just ran, unless the timer
// was stopped or reset meanwhile.
func (p *periodic) rearm() {
	t := &p.t
	sh := t.sh
	st := sh.st
	sh.mu.Lock()
	if t.state.Load() != stateFired || sh.closed {
		sh.mu.Unlock()
		return
	}
	prev := p.at
	sh.mu.Unlock()

	// The Scheduler is user code: call it with no lock held.
	next, ok := p.next(st.epoch.Add(time.Duration(prev)), st.clock.Now())
	when, now := st.deadline(next)

	sh.mu.Lock()
	defer sh.unlock()
	if !ok || t.state.Load() != stateFired || p.at != prev || sh.closed {
		return // the series ended, or Stop or Reset got there first
	}
	if sh.schedule(t, when, now) {
		st.pool.Submit(t)
	}
}

// next returns the first scheduled time after prev that is after now.
func (p *periodic) next(prev, now time.Time) (time.Time, bool) {
	next := p.sched.Next(prev)
	if next.IsZero() || !next.After(prev) {
		return time.Time{}, false
	}
	if next.After(now) {
		return next, true
	}
	if e, ok := p.sched.(every); ok {
		// Skip the missed runs in one step.
		k := now.Sub(prev)/time.Duration(e) + 1
		return prev.Add(k * time.Duration(e)), true
	}
	for range maxSkip {
		n := p.sched.Next(next)
		if n.IsZero() || !n.After(next) {
			return time.Time{}, false
		}
		if next = n; next.After(now) {
			break
		}
	}
	return next, true
}
