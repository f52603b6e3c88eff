package timingwheel

import (
	"sync/atomic"
	"time"
	"unsafe"
)

// A Timer is a function scheduled by a SystemTimer. [SystemTimer.AfterFunc]
// and [SystemTimer.ScheduleFunc] make one; [SystemTimer.Bind] binds one that
// is a field of the caller's own struct, so that arming it allocates
// nothing. The zero Timer is unbound: its methods panic, as those of a
// time.Timer not made by the time package do. A Timer must not be copied
// once bound. Its methods are safe for concurrent use.
type Timer struct {
	// next and prev link the timer into a bucket or a shard's transit,
	// cascade or never list; guarded by sh.mu. While the timer is queued,
	// next links the incoming stack: written by the pusher before the push,
	// read and cleared by the drainer after the pop.
	next, prev *Timer
	f          func() // set when the timer is made or bound, then immutable; nil for contexts and periodic timers
	sh         *shard // set when the timer is made or bound, then immutable; nil: unbound
	// w is the state word: the timer's state in its low stateBits bits
	// and, above them, a value: the deadline in ns since the epoch while
	// the timer is queued, the due tick while it is pending, else 0. Every
	// change of state is a compare-and-swap of w, so that a state and its
	// deadline change in one atomic step. Changes that link or unlink the
	// timer (placing it, stopping a pending timer, firing it) are made
	// under sh.mu; the others without it: queuing it (Reset of a timer that
	// is not pending), stopping or re-arming a queued timer, and postponing
	// a pending one (Reset to a later deadline; see Timer.Reset).
	w atomic.Int64
	// depth is the height of the incoming stack with this timer on top. Its
	// pusher writes it before the push; the next pusher reads it
	// atomically, since a timer popped and pushed again may be written
	// while a pusher that saw it as the head reads it.
	depth uint32
	kind  uint8 // set when the timer is made or bound, then immutable
}

// Timer states, kept in the low bits of Timer.w.
//
//	idle ─Reset─► queued ─drain─► pending ─due─► fired ─Reset─► queued …
//	                │ ▲              │
//	              Stop Reset        Stop
//	                ▼ │              ▼
//	          queuedStopped ─drain─► stopped ─Reset─► queued …
//
// A timer is on its shard's incoming stack, or in the hands of the
// goroutine that popped it, exactly while it is queued or queuedStopped:
// only a timer in another state is pushed, so it is never on the stack
// twice. Reset also moves a pending timer to a later deadline in place
// (pending ─Reset─► pending) and, under the lock, to an earlier one.
const (
	stateIdle          uint32 = iota // never armed: the zero value
	stateQueued                      // on the incoming stack, armed; value: the deadline, ns
	stateQueuedStopped               // on the incoming stack, stopped before it was placed
	statePending                     // placed in a list of its shard; value: the due tick
	stateFired                       // handed to the executor (for a periodic timer: until its next run is scheduled); value: the due tick
	stateStopped                     // stopped; in no list and not on the stack
	stateReturned                    // returned by SystemTimer.Stop: final
)

const (
	stateBits = 3
	stateMask = 1<<stateBits - 1
	// maxValue is the largest value a state word holds. A deadline
	// beyond it (36 years after New) is not queued but placed under the
	// lock, and a due tick beyond it never comes (see SystemTimer.neverTick).
	maxValue = 1<<(63-stateBits) - 1
)

func pack(v int64, s uint32) int64 { return v<<stateBits | int64(s) }

func unpack(w int64) (v int64, s uint32) { return w >> stateBits, uint32(w & stateMask) }

// Timer kinds.
const (
	kindOnce uint8 = iota
	kindPeriodic
	kindContext
)

// initQueued sets the state word of a timer no other goroutine can see yet:
// queued with deadline when. A plain store, not an atomic one, which on
// amd64 is a full fence, on the path of every AfterFunc; the push that
// publishes the timer orders it before any other goroutine's access.
func (t *Timer) initQueued(when int64) {
	*(*int64)(unsafe.Pointer(&t.w)) = pack(when, stateQueued)
}

// Bind binds t, a Timer that is part of the caller's own struct, to st and
// f, without arming it: [Timer.Reset] arms it, [Timer.Stop] disarms it, and
// neither allocates. f runs on the executor pool each time the timer fires.
//
//	type conn struct {
//		idle timingwheel.Timer
//		...
//	}
//	st.Bind(&c.idle, c.closeIdle)
//	c.idle.Reset(30 * time.Second) // on every read
//
// Bind panics if f is nil or t is bound already. A Timer bound to a
// SystemTimer that is stopped is never armed: TryReset returns ErrStopped.
func (st *SystemTimer) Bind(t *Timer, f func()) {
	st.mustBeMade("Bind")
	switch {
	case f == nil:
		panic("timingwheel: Bind: nil func")
	case t.sh != nil:
		panic("timingwheel: Bind: the Timer is bound already")
	}
	t.f, t.kind = f, kindOnce
	t.sh = st.shardOf(t)
}

// Stop prevents the timer's function from running. It returns true if this
// call did so; false if the function has already been handed to the executor
// (it ran, is running, or is about to run) or the timer was not armed.
// For a periodic timer, Stop also ends the series: no run starts after Stop
// returns, except one already handed to the executor.
func (t *Timer) Stop() bool {
	sh := t.sh
	if sh == nil {
		panic("timingwheel: Stop called on an unbound Timer")
	}
	if t.kind == kindPeriodic {
		return periodicOf(t).stop()
	}
	for {
		w := t.w.Load()
		switch _, s := unpack(w); s {
		case stateQueued:
			if t.w.CompareAndSwap(w, pack(0, stateQueuedStopped)) {
				return true
			}
		case statePending:
			sh.mu.Lock()
			stopped := sh.stopPending(t)
			sh.mu.Unlock()
			if stopped {
				return true
			}
		default:
			return false
		}
	}
}

// stopPending stops t if it is pending, and reports whether it did. Called
// with mu held.
func (sh *shard) stopPending(t *Timer) bool {
	for {
		w := t.w.Load()
		if _, s := unpack(w); s != statePending {
			return false
		}
		// Only a Reset that postpones t changes w while it is pending and
		// mu is held; then try again.
		if t.w.CompareAndSwap(w, pack(0, stateStopped)) {
			t.unlink()
			sh.addPendingOf(t, -1)
			sh.stats.stopped++
			return true
		}
	}
}

// Reset re-arms the timer to run its function once d has elapsed, like
// time.Timer.Reset: it reports whether the timer was pending, and a timer
// that was pending runs once, at its new deadline. A timer that has fired
// or was stopped is armed again; if d <= 0 its function is handed to the
// executor at once. A periodic timer's next run moves to d from now and the
// series continues from there; during a run, the next run is moved instead,
// so that runs never overlap.
//
// Moving a pending timer to a later deadline, the common case of a timeout
// pushed back on every request, takes no lock and touches no bucket: the
// new deadline is stored in the timer, which stays where it is until its
// bucket comes due; the driver then places it again, by its new deadline.
// Re-arming a stopped or fired timer takes no lock either, as AfterFunc.
// Moving a timer earlier takes its shard's lock.
//
// Reset arms nothing after the SystemTimer is stopped, or when
// WithMaxPending's bound would be exceeded; [Timer.TryReset] says which.
func (t *Timer) Reset(d time.Duration) bool {
	was, _ := t.reset(d, "Reset")
	return was
}

// TryReset is [Timer.Reset] that also reports why the timer could not be
// armed: ErrStopped once the SystemTimer is stopped, ErrTooManyPending when
// arming it would exceed WithMaxPending's bound (a timer that is pending
// already, or a periodic timer that has not ended, holds its place and is
// never refused). When it returns an error the timer is not pending.
func (t *Timer) TryReset(d time.Duration) (wasPending bool, err error) {
	return t.reset(d, "TryReset")
}

func (t *Timer) reset(d time.Duration, name string) (bool, error) {
	sh := t.sh
	if sh == nil {
		panic("timingwheel: " + name + " called on an unbound Timer")
	}
	if t.kind != kindOnce {
		return periodicOf(t).reset(d)
	}
	st := sh.st
	now := st.now()
	if d <= 0 {
		return t.resetLocked(d, now)
	}
	when := satAdd(now, int64(d))
	for {
		w := t.w.Load()
		switch v, s := unpack(w); s {
		case statePending:
			due := st.dueTick(when)
			if due < v {
				return t.resetLocked(d, now) // earlier: another bucket
			}
			if t.w.CompareAndSwap(w, pack(due, statePending)) {
				return true, nil
			}
		case stateQueued, stateQueuedStopped:
			// Still on the stack: change the deadline it will be placed
			// by. As for a push, the deadline must not be before wakeAt,
			// read after the change (see shard.push).
			if when > maxValue || when < st.wakeAt.Load() {
				return t.resetLocked(d, now)
			}
			if t.w.CompareAndSwap(w, pack(when, stateQueued)) {
				if when < st.wakeAt.Load() {
					st.drainShard(sh, now)
				}
				return s == stateQueued, nil
			}
		case stateIdle, stateStopped, stateFired:
			if when > maxValue || when < st.wakeAt.Load() || st.maxPending > 0 || st.closed.Load() {
				return t.resetLocked(d, now)
			}
			if t.w.CompareAndSwap(w, pack(when, stateQueued)) {
				sh.push(t, false)
				if atomic.LoadUint32(&t.depth) < drainDepth && when >= st.wakeAt.Load() && !st.closed.Load() {
					return false, nil
				}
				return false, st.pushedSlow(t, when)
			}
		default: // stateReturned
			return false, ErrStopped
		}
	}
}

// resetLocked is Reset under the shard's lock: moving a pending timer
// earlier, running one at once (d <= 0), and arming under WithMaxPending.
func (t *Timer) resetLocked(d time.Duration, now int64) (bool, error) {
	sh := t.sh
	st := sh.st
	when := satAdd(now, int64(d))
	nowTick := floorDiv(now, st.tick)
	reserved := false
	defer func() {
		if reserved {
			st.pending.Add(-1)
		}
	}()
	sh.mu.Lock()
	defer sh.unlock()
	if sh.closed {
		return false, ErrStopped
	}
	sh.drain(now) // a queued timer becomes pending or stopped
	for {
		w := t.w.Load()
		switch v, s := unpack(w); s {
		case statePending:
			if d <= 0 {
				if t.w.CompareAndSwap(w, pack(nowTick, stateFired)) {
					t.unlink()
					sh.addPendingOf(t, -1)
					sh.fireNow(t)
					return true, nil
				}
				continue
			}
			due := st.dueTick(when)
			if !t.w.CompareAndSwap(w, pack(due, statePending)) {
				continue
			}
			if due >= v {
				return true, nil // not earlier: it stays where it is
			}
			t.unlink()
			sh.stats.moved++
			sh.relink(t, nowTick)
			return true, nil
		case stateQueued, stateQueuedStopped:
			sh.drain(now) // queued again by a concurrent Reset since
		case stateIdle, stateStopped, stateFired:
			if d <= 0 {
				if t.w.CompareAndSwap(w, pack(nowTick, stateFired)) {
					sh.stats.armed++
					sh.fireNow(t)
					return false, nil
				}
				continue
			}
			if st.maxPending > 0 && !reserved {
				// As startLocked: reserve a place, so that concurrent
				// callers cannot overshoot the bound.
				if st.pending.Add(1) > st.maxPending {
					st.pending.Add(-1)
					st.rejected.Add(1)
					return false, ErrTooManyPending
				}
				reserved = true
			}
			if !t.w.CompareAndSwap(w, pack(st.dueTick(when), statePending)) {
				continue
			}
			sh.admit(t, nowTick)
			return false, nil
		default: // stateReturned
			return false, ErrStopped
		}
	}
}
