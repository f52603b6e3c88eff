package timingwheel

import (
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"
)

// A ChanTimer is a one-shot timer that delivers on a channel, as a
// time.Timer made by time.NewTimer does, with the time package's semantics
// since Go 1.23 (see [SystemTimer.NewTimer]). It is made by NewTimer; the
// zero ChanTimer is not usable.
type ChanTimer struct {
	ct chanTimer        // first: a *Timer of kind kindChan is the chanTimer
	C  <-chan time.Time // the channel on which the time is delivered
}

// A Ticker delivers the ticks of a clock on a channel, as a time.Ticker
// does, with the time package's semantics since Go 1.23 (see
// [SystemTimer.NewTicker]). It is made by NewTicker; the zero Ticker is not
// usable.
type Ticker struct {
	ct chanTimer        // first, as in ChanTimer
	C  <-chan time.Time // the channel on which the ticks are delivered
}

// A chanTimer is what ChanTimer and Ticker share: a Timer of kind kindChan
// whose run delivers a value on c.
//
// The channel has a buffer of one value, where the runtime's timer channel
// has none (see NewTimer). What makes it behave as the runtime's does, no
// value from before a Stop or Reset received after it returns, is the state
// word s: gen<<chanGenShift | flags | phase.
//
//   - idle: not armed (stopped, or a one-shot timer that delivered).
//   - armed: armed for the deadline in when; the underlying Timer is armed
//     for it, or about to be by the goroutine that made it armed.
//   - busy: one goroutine holds the timer: a run delivering a value (and,
//     for a ticker, arming the next tick), or Stop or Reset. Only the holder
//     changes when, period, the underlying Timer, or the channel's contents;
//     Stop and Reset wait for a holder to leave busy (it does so without
//     blocking or taking a lock other than a shard's). A run that finds
//     the timer busy does not wait (it runs on the driver or an executor
//     goroutine, and the holder may be a callback of that executor): it
//     sets chanKick and returns, and the holder, when it leaves busy, looks
//     at the deadline again and delivers if it has passed. So a run is
//     never lost, and a ticker's series never ends by a race.
//
// Every Stop and Reset makes gen one larger, so that a run that read the
// state before it cannot act on the arming that follows (its CAS fails).
// A run delivers only when the deadline in when has passed: a run owed to
// an earlier arming (handed to the executor before a Reset) finds the new
// deadline ahead, and does nothing.
type chanTimer struct {
	t Timer // kind kindChan; runTimer calls fire
	c chan time.Time
	s atomic.Uint64
	// when is the deadline of the current arming, ns since the epoch.
	// Written by the busy holder; read by a run before it takes the timer
	// (atomically: it may be written meanwhile, and then the run's CAS fails).
	when atomic.Int64
	// period is a ticker's period in ns; 0 for a one-shot timer. Read and
	// written by the busy holder only.
	period int64
	// rt stands in for t once the SystemTimer is stopped: a timer of its
	// clock (time.AfterFunc for the default one) whose function is fire,
	// so that a channel timer outlives its SystemTimer, as the time
	// package's do (see orphan). Guarded by busy.
	rt *clock.Timer
	// held says a Ticker holds a place in WithMaxPending's bound: from
	// NewTicker or Reset until Stop, whatever its Timer does meanwhile
	// (see Timer.series). Taken by the busy holder; given back by it or by
	// SystemTimer.Stop, by CAS, so once.
	held atomic.Bool
}

var (
	_ = [1]struct{}{}[unsafe.Offsetof(chanTimer{}.t)]
	_ = [1]struct{}{}[unsafe.Offsetof(ChanTimer{}.ct)]
	_ = [1]struct{}{}[unsafe.Offsetof(Ticker{}.ct)]
)

// The state word of a chanTimer.
const (
	chanIdle  uint64 = 0
	chanArmed uint64 = 1
	chanBusy  uint64 = 2

	chanPhase    uint64 = 3
	chanKick     uint64 = 4 // a run came while the timer was busy
	chanGenShift        = 3
)

func chanState(gen, phase uint64) uint64 { return gen<<chanGenShift | phase }

// chanOf returns the chanTimer that t, of kind kindChan, belongs to.
func chanOf(t *Timer) *chanTimer { return (*chanTimer)(unsafe.Pointer(t)) }

// NewTimer makes a timer that delivers the time on its channel C once d
// has elapsed, as time.NewTimer does, at most one tick late and never
// early. It returns ErrTooManyPending beyond WithMaxPending's bound.
//
// It follows the time package's semantics since Go 1.23, point by point:
// after Stop or Reset returns, no receive from C sees a value sent before;
// Stop and Reset report whether the timer was pending, counting a value
// delivered and not yet received as pending; the value is the time the
// timer was due, not the time it was sent; if d <= 0 the value is
// available at once. The differences, which a library cannot remove:
//
//   - C has a buffer of one value: len(C) and cap(C) are those of a
//     buffered channel (the runtime reports 0 for both).
//   - A ChanTimer nobody references and nobody stopped stays pending until
//     it fires: the wheel holds it, where the runtime's garbage collector
//     collects an unreferenced timer at once. A loop that makes one per
//     iteration (After in a select) keeps one timer pending per iteration
//     for d: make one ChanTimer and Reset it per iteration instead.
//
// A channel timer outlives its SystemTimer, as the time package's timers
// never stop: SystemTimer.Stop does not return it, and if it is pending
// then, or is made or reset after, a timer of the SystemTimer's clock (the
// runtime's, by default) stands in for the wheel, with the same
// semantics. A goroutine waiting on C is never stranded by a shutdown.
func (st *SystemTimer) NewTimer(d time.Duration) (*ChanTimer, error) {
	st.mustBeMade("NewTimer")
	ct := new(ChanTimer)
	c := make(chan time.Time, 1)
	ct.C = c
	if err := ct.ct.start(st, c, d, 0); err != nil {
		return nil, err
	}
	return ct, nil
}

// After waits for d to elapse and then delivers the time on the returned
// channel, as time.After does: st.NewTimer(d).C. The ChanTimer stays
// pending until it fires (see NewTimer): in a loop, make one ChanTimer
// and Reset it instead. Beyond WithMaxPending's bound, After returns
// time.After(d): a select on the channel still waits for d, on a runtime
// timer.
func (st *SystemTimer) After(d time.Duration) <-chan time.Time {
	st.mustBeMade("After")
	ct, err := st.NewTimer(d)
	if err != nil {
		return time.After(d)
	}
	return ct.C
}

// NewTicker makes a Ticker that delivers the time on its channel C every d,
// as time.NewTicker does, each tick at most one wheel tick late and never
// early. It panics if d <= 0, as time.NewTicker does. It returns
// ErrTooManyPending beyond WithMaxPending's bound; a Ticker holds one place
// in it, from NewTicker or Reset to Stop. It outlives its SystemTimer, as
// a ChanTimer does (see NewTimer).
//
// As a time.Ticker since Go 1.23: the value of a tick is the time it was
// due; ticks are on the schedule of the first, d apart, and a receiver too
// slow for them loses ticks (C never holds more than one, and a tick that
// finds one there is dropped); after Stop or Reset returns, no receive sees
// a tick from before. A period below the SystemTimer's tick delivers at
// most once per tick. The differences from time.Ticker are NewTimer's.
func (st *SystemTimer) NewTicker(d time.Duration) (*Ticker, error) {
	st.mustBeMade("NewTicker")
	if d <= 0 {
		panic("timingwheel: non-positive interval for NewTicker")
	}
	tk := new(Ticker)
	c := make(chan time.Time, 1)
	tk.C = c
	if err := tk.ct.start(st, c, d, int64(d)); err != nil {
		return nil, err
	}
	return tk, nil
}

// Tick is NewTicker(d).C, as time.Tick is: for a ticker that runs as long
// as the program does. It returns nil if d <= 0, as time.Tick does. Beyond
// WithMaxPending's bound, Tick returns time.Tick(d).
func (st *SystemTimer) Tick(d time.Duration) <-chan time.Time {
	st.mustBeMade("Tick")
	if d <= 0 {
		return nil
	}
	tk, err := st.NewTicker(d)
	if err != nil {
		return time.Tick(d)
	}
	return tk.C
}

// Stop prevents the timer from firing, as time.Timer.Stop does. It returns
// true if the call stops the timer: it was armed, or had delivered a value
// that nobody received (Stop takes it back); false if it had been stopped,
// or its value was received. After Stop returns, no receive from C sees a
// value sent before.
func (t *ChanTimer) Stop() bool { return t.ct.stop("ChanTimer.Stop") }

// Reset changes the timer to deliver once d has elapsed, as
// time.Timer.Reset does, and reports whether it was pending, as Stop does:
// after it returns, no receive from C sees a value sent before. It arms
// nothing beyond WithMaxPending's bound; [ChanTimer.TryReset] says so.
func (t *ChanTimer) Reset(d time.Duration) bool {
	was, _ := t.ct.reset(d, 0, "ChanTimer.Reset")
	return was
}

// TryReset is Reset that also reports when the timer could not be armed:
// ErrTooManyPending. When it returns an error the timer is not armed.
func (t *ChanTimer) TryReset(d time.Duration) (wasPending bool, err error) {
	return t.ct.reset(d, 0, "ChanTimer.TryReset")
}

// Stop turns the ticker off, as time.Ticker.Stop does: no tick is delivered
// after it returns, and no receive from C sees a tick delivered before. It
// does not close C. On a Ticker not made by NewTicker it does nothing, as
// time.Ticker.Stop does (go.dev/issue/21874); Reset panics there.
func (t *Ticker) Stop() {
	if t.ct.t.shard() == nil {
		return
	}
	t.ct.stop("Ticker.Stop")
}

// Reset stops the ticker and resets its period to d, as
// time.Ticker.Reset does: the next tick is d from now, and no receive from
// C sees a tick delivered before. It panics if d <= 0. It arms nothing
// beyond WithMaxPending's bound; [Ticker.TryReset] says so.
func (t *Ticker) Reset(d time.Duration) {
	_ = t.TryReset(d)
}

// TryReset is Reset that also reports when the ticker could not be armed:
// ErrTooManyPending. When it returns an error the ticker is stopped.
func (t *Ticker) TryReset(d time.Duration) error {
	if t.ct.t.shard() == nil {
		panic("timingwheel: Ticker.Reset called on a Ticker not made by NewTicker")
	}
	if d <= 0 {
		panic("timingwheel: non-positive interval for Ticker.Reset")
	}
	_, err := t.ct.reset(d, int64(d), "Ticker.Reset")
	return err
}

// start arms a new chanTimer, which no other goroutine knows of yet.
func (ct *chanTimer) start(st *SystemTimer, c chan time.Time, d time.Duration, period int64) error {
	ct.c, ct.period = c, period
	t := &ct.t
	t.kind = kindChan
	if period > 0 {
		t.kind = kindTicker
	}
	pc := st.attach(t, d > 0)
	if d <= 0 {
		// Due at once: the value is there when NewTimer returns, as the
		// runtime's is for the first receive. Not for a ticker: d > 0.
		n := st.clockNow()
		ct.when.Store(int64(n.Sub(st.epoch)))
		ct.c <- n
		return nil
	}
	now := st.now()
	when := satAdd(now, int64(d))
	ct.when.Store(when)
	if period > 0 && !ct.hold() {
		return ErrTooManyPending
	}
	ct.s.Store(chanState(0, chanArmed))
	switch err := st.arm(t, when, now, pc); err {
	case nil:
	case ErrStopped:
		// See orphan. Busy while rt is set: a run that comes before
		// kicks, and release delivers for it.
		ct.s.Store(chanState(0, chanBusy))
		ct.standIn(time.Duration(when - now))
		ct.release(0, chanArmed)
	default:
		ct.releaseHold()
		return err
	}
	return nil
}

// arm arms the timer for the deadline when, after now: its Timer on the
// wheel, or, once the SystemTimer is stopped, a timer of the clock (see
// orphan). It returns ErrTooManyPending beyond WithMaxPending's bound.
// move lets the Timer move to the caller's processor's shard (see
// Timer.resetTo). Called by the busy holder.
func (ct *chanTimer) arm(when, now int64, move bool) error {
	if ct.rt == nil {
		_, err := ct.t.resetTo(when, now, move, false)
		if err != ErrStopped {
			return err
		}
		ct.standIn(time.Duration(when - now))
		return nil
	}
	ct.rt.Reset(time.Duration(when - now))
	return nil
}

// standIn arms a timer of the clock to run fire after d, in place of the
// Timer on the stopped SystemTimer's wheel (see orphan), and gives back a
// Ticker's place in the bound: it is off the wheel. Called by the busy
// holder.
func (ct *chanTimer) standIn(d time.Duration) {
	ct.rt = ct.t.shard().st.clock.AfterFunc(max(d, 0), ct.fire)
	ct.releaseHold()
}

// disarm disarms the timer's Timer, or the clock's timer that stands in
// for it. A run already handed over finds the timer idle, or not due.
// Called by the busy holder.
func (ct *chanTimer) disarm() {
	if ct.rt != nil {
		ct.rt.Stop()
		return
	}
	ct.t.Stop()
}

// orphan moves the timer off a SystemTimer that is stopping: if it is
// armed, a timer of the clock takes over its deadline, and later Resets use
// such a timer too, so that a goroutine waiting on C is never stranded. A
// Ticker's place in the bound is given back. Called by SystemTimer.Stop,
// for the channel timers it took.
func (ct *chanTimer) orphan() {
	old, gen := ct.take("orphan")
	if old&chanPhase == chanArmed && ct.rt == nil {
		ct.standIn(time.Duration(ct.when.Load() - ct.t.shard().st.now()))
	}
	ct.releaseHold()
	ct.release(gen, old&chanPhase)
}

// hold takes a place in WithMaxPending's bound for a Ticker that has none,
// and reports false if the bound is reached. Called by the busy holder, or
// before the Ticker is armed.
func (ct *chanTimer) hold() bool {
	st := ct.t.shard().st
	if st.maxPending == 0 || ct.held.Load() || ct.rt != nil || st.closed.Load() {
		return true // no bound, held, or not on the wheel (see orphan)
	}
	if st.takeFree(1) == 0 && !st.collectAndTake() {
		st.rejected.Add(1)
		return false
	}
	ct.held.Store(true)
	return true
}

// releaseHold gives a Ticker's place in the bound back, if it holds one.
func (ct *chanTimer) releaseHold() {
	if ct.held.CompareAndSwap(true, false) {
		touchShared("pending")
		ct.t.shard().st.free.Add(1)
	}
}

// take makes the timer busy for a Stop or Reset, waiting for another
// holder to leave, and returns the state it found, with the next gen.
func (ct *chanTimer) take(name string) (old uint64, gen uint64) {
	if ct.t.self != selfTag(&ct.t) {
		if ct.t.shard() == nil {
			panic("timingwheel: " + name + " called on a value not made by the SystemTimer")
		}
		panic("timingwheel: " + name + " called on a copy: a ChanTimer or Ticker must not be copied; keep the pointer NewTimer or NewTicker returned")
	}
	for {
		s := ct.s.Load()
		if s&chanPhase == chanBusy {
			waitOwned()
			continue
		}
		gen := s>>chanGenShift + 1
		if ct.s.CompareAndSwap(s, chanState(gen, chanBusy)) {
			failpoint("chan:taken")
			return s, gen
		}
	}
}

// drain takes back a value delivered and not received, and reports
// whether there was one. Called by the busy holder: nothing else sends.
func (ct *chanTimer) drain() bool {
	select {
	case <-ct.c:
		return true
	default:
		return false
	}
}

func (ct *chanTimer) stop(name string) bool {
	old, gen := ct.take(name)
	pending := old&chanPhase == chanArmed
	if pending {
		ct.disarm()
	}
	ct.releaseHold()
	if ct.drain() {
		pending = true
	}
	ct.release(gen, chanIdle)
	return pending
}

// reset re-arms the timer d from now; period is a ticker's new period.
func (ct *chanTimer) reset(d time.Duration, period int64, name string) (bool, error) {
	old, gen := ct.take(name)
	pending := old&chanPhase == chanArmed
	if ct.drain() {
		pending = true
	}
	st := ct.t.shard().st
	if period > 0 {
		ct.period = period
		if !ct.hold() {
			ct.disarm()
			ct.release(gen, chanIdle)
			return pending, ErrTooManyPending
		}
	}
	if d <= 0 { // due at once, as for time.Timer.Reset
		ct.disarm()
		n := st.clockNow()
		ct.when.Store(int64(n.Sub(st.epoch)))
		ct.c <- n // emptied above; only the holder sends
		ct.release(gen, chanIdle)
		return pending, nil
	}
	now := st.now()
	when := satAdd(now, int64(d))
	ct.when.Store(when)
	// The underlying Timer is moved while the timer is busy: a run it
	// makes meanwhile kicks, and release delivers for it.
	if err := ct.arm(when, now, true); err != nil {
		ct.disarm()
		ct.releaseHold()
		ct.release(gen, chanIdle)
		return pending, err
	}
	failpointStall("chan:rearmed") // a run of the new arming may come now: it kicks
	ct.release(gen, chanArmed)
	return pending, nil
}

// fire is the run of the underlying Timer, on its driver or a worker.
func (ct *chanTimer) fire() {
	st := ct.t.shard().st
	failpoint("chan:run") // a Reset may come between the hand-over and the run
	for {
		s := ct.s.Load()
		switch s & chanPhase {
		case chanIdle:
			return // stopped, or delivered already
		case chanBusy:
			// The holder delivers for this run when it leaves.
			if s&chanKick != 0 || ct.s.CompareAndSwap(s, s|chanKick) {
				return
			}
			continue
		}
		n := st.clockNow()
		now := int64(n.Sub(st.epoch))
		if now < ct.when.Load() {
			return // a run owed to an arming before a Reset: not due
		}
		failpoint("chan:due") // another run may deliver this deadline meanwhile
		if !ct.s.CompareAndSwap(s, s&^chanPhase|chanBusy) {
			continue
		}
		failpoint("chan:fire")
		// Released with the next gen: a Ticker is armed again after a
		// delivery, and a run that read the state word and the deadline
		// before this one delivered must not find the word unchanged (ABA)
		// and deliver the next deadline at once, early.
		gen := s>>chanGenShift + 1
		ct.release(gen, ct.deliver(n, now))
		return
	}
}

// deliver sends the due value, dropping it if the receiver has not taken
// the last one, and, for a ticker, arms the next tick. It returns the phase
// the timer leaves busy in. Called by the busy holder, whose deadline in
// when has passed, with n, a reading of the clock, and now, n in ns since
// the epoch. The value is the deadline on n's clock, as the runtime sends
// it (the time now less how late the timer is): the epoch's wall reading
// plus the time since would be off by every step of the wall clock, and
// every suspend, since New.
func (ct *chanTimer) deliver(n time.Time, now int64) uint64 {
	when := ct.when.Load()
	st := ct.t.shard().st
	select {
	case ct.c <- n.Add(time.Duration(when - now)):
	default: // a slow receiver: the tick is dropped, as time.Ticker drops it
	}
	if ct.period == 0 {
		return chanIdle
	}
	// The first tick on the schedule after now: missed ticks are skipped.
	// A period under the wheel's tick ticks at most once a tick: on the
	// first tick of its schedule after the wheel's next one (a Ticker of
	// a nanosecond would otherwise tick every 16ns, the unit of a
	// deadline, where the runtime's only ticks while a receiver waits).
	p := ct.period
	next, after := satAdd(when, p), now
	if p < st.tick {
		after = satMul(floorDiv(now, st.tick)+1, st.tick) - 1
	}
	if next <= after {
		next = satAdd(when, satMul(p, (after-when)/p+1))
	}
	ct.when.Store(next)
	// The next tick stays on the Ticker's shard: this run is on a driver or
	// a worker, whichever processor it runs on, not on the Ticker's user.
	if err := ct.arm(next, now, false); err != nil {
		ct.releaseHold()
		return chanIdle // cannot happen: a Ticker holds its place in the bound
	}
	failpointStall("chan:next") // the next tick's run may come now: it kicks
	return chanArmed
}

// release ends the hold of the busy timer, leaving it in phase. A run that
// came meanwhile (chanKick) is carried out first, if the timer is left
// armed and its deadline has passed.
func (ct *chanTimer) release(gen, phase uint64) {
	for {
		s := ct.s.Load()
		if s&chanKick == 0 {
			if ct.s.CompareAndSwap(s, chanState(gen, phase)) {
				return
			}
			continue // a run kicked meanwhile
		}
		if !ct.s.CompareAndSwap(s, s&^chanKick) {
			continue
		}
		if phase != chanArmed {
			continue // stopped or delivered: the run has nothing to do
		}
		st := ct.t.shard().st
		if n := st.clockNow(); int64(n.Sub(st.epoch)) >= ct.when.Load() {
			phase = ct.deliver(n, int64(n.Sub(st.epoch)))
		}
	}
}
