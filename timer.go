package timingwheel

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// A Timer is a function scheduled by a SystemTimer. [SystemTimer.AfterFunc]
// and [SystemTimer.ScheduleFunc] make one; [SystemTimer.Bind] binds one that
// is a field of the caller's own struct, so that arming it allocates
// nothing. The zero Timer is unbound: its methods panic, as those of a
// time.Timer not made by the time package do. A Timer must not be copied
// once bound: the methods of a copy panic, naming it, as a copied
// strings.Builder's do. Its methods are safe for concurrent use.
type Timer struct {
	// next and prev link the timer into a bucket or a shard's transit,
	// cascade or never list; guarded by sh.mu. While the timer is queued,
	// next links the incoming stack: written by the pusher before the push,
	// read by the popper, and cleared by it (atomically: a Stop taking the
	// timer off the stack may read it meanwhile; see Timer.Stop).
	next, prev *Timer
	f          func() // set when the timer is made or bound, then immutable; nil for contexts and periodic timers
	// sh is the shard whose lists and stack hold the timer: set when it is
	// made or bound (nil: unbound). A timer that is not pending may move
	// to the shard of the processor that re-arms it (see Timer.resetTo):
	// sh is written then, atomically, by the goroutine that owns the
	// timer (state owned), while it holds the old shard's lock. So a
	// timer pending on a shard has sh pointing to it (it moves only while
	// not pending), and sh does not change while its shard's lock is
	// held: a goroutine that reads sh with the lock of the shard it names
	// held has the timer's shard for as long as it holds the lock. Read
	// it with shard() wherever a move may happen at the same time.
	sh *shard
	// w is the state word: the timer's state in its low stateBits bits
	// and, above them, a value: the deadline while the timer is queued,
	// pending or fired (in units of 16ns since the epoch: see toValue),
	// else 0. Every
	// change of state is a compare-and-swap of w, so that a state and its
	// deadline change in one atomic step. Changes that link or unlink the
	// timer (placing it, stopping a pending timer, firing it) are made
	// under sh.mu; the others without it: queuing it (Reset of a timer that
	// is not pending), stopping or re-arming a queued timer, and postponing
	// a pending one (Reset to a later deadline; see Timer.Reset).
	w    atomic.Int64
	kind uint8 // set when the timer is made or bound, then immutable
	// self tags the timer's own address (selfTag), set when it is made or
	// bound, 0 before: a copy of a bound Timer, made by assigning the
	// struct that holds it, lies at another address, and its methods
	// panic (checkBound) instead of acting on lists and stacks that hold
	// the original. In the padding after kind: a Timer stays 48 bytes.
	self uint32
}

// selfTag is the tag of a timer at t's address: bits 3 to 34 of the
// address, never 0. A copy lying a multiple of 32GiB away from its original
// would go unnoticed; any other is caught.
func selfTag(t *Timer) uint32 { return uint32(uintptr(unsafe.Pointer(t))>>3) | 1 }

// checkBound panics, naming method, unless t is bound and was bound (or
// made) at this address: it is one comparison on the path of Stop and
// Reset, and it replaces the check for an unbound timer.
func (t *Timer) checkBound(method string) {
	if t.self != selfTag(t) {
		t.misused(method)
	}
}

// misused panics for checkBound: t is unbound, or a copy.
func (t *Timer) misused(method string) {
	if t.shard() == nil {
		panic("timingwheel: " + method + " called on an unbound Timer")
	}
	panic("timingwheel: " + method + " called on a copy of a Timer: a Timer must not be copied once made or bound (the struct holding it was assigned or passed by value); keep a pointer to it")
}

// Timer states, kept in the low bits of Timer.w.
//
//	idle ─Reset─► owned ─push─► queued ─drain─► pending ─due─► fired ─Reset─► owned …
//	                │ ▲           │ ▲ │             │
//	    push failed ◄─┘        Reset│ Stop         Stop
//	   (shard closed)               │ ▼             ▼
//	              queuedStopped ◄─ owned ─pop─► stopped ─Reset─► owned …
//	                   │ (not on top)                ▲
//	                   └──────────drain──────────────┘
//
// Reset also moves a pending timer to a later deadline in place (pending
// ─Reset─► pending) and, under the lock, to an earlier one. SystemTimer.Stop
// moves every timer it takes to returned, which is final.
//
// Who may write the links (next, prev) in each state. This is the rule
// every transition is checked against: a timer's links are written by one
// goroutine at a time, and the state says which.
//
//   - idle, stopped, fired, returned: the timer is on no list and no stack,
//     and its links are nil. Nobody writes them. The only way out (but
//     SystemTimer.Stop's) is a compare-and-swap into owned, or into pending
//     under the shard's lock; its winner owns the links from then on.
//   - owned: the goroutine whose CAS made it owned holds the timer, to move
//     it onto its shard's incoming stack or off it, without blocking but for
//     one thing: a re-arm that moves the timer to another shard (see sh)
//     takes the old shard's lock for the move, so nobody may wait for an
//     owned timer while holding a shard's lock (a locked Reset releases it
//     first). Nobody else changes an owned timer: Stop, Reset, the drainer
//     and SystemTimer.Stop wait for it to leave owned (the drainer and
//     SystemTimer.Stop only for timers on the stack they took, which no
//     mover holds). Its shard is read once it is owned: read before, it may
//     be stale.
//     A Reset that re-arms the timer (value: the deadline) writes next,
//     pushes the timer, and moves it to queued if the push succeeded, or
//     back to the state it came from if the shard was closed. So a re-armed
//     timer is seen by others only once its push has succeeded: nobody can
//     act on a timer that SystemTimer.Stop will never see.
//     A Stop of a queued timer (value: 0) pops the timer if it is on top of
//     the stack, clears next and moves it to stopped; if it is not on top
//     (or a drainer took the stack meanwhile), it moves it to queuedStopped
//     and drains the stack under the lock. Either way, when Stop returns,
//     the timer is on no stack: the library keeps no pointer to it, and
//     its owner may reuse its memory. The pop has no ABA problem: an owned
//     timer cannot be pushed again, so if it is on top when the pop's CAS
//     runs, it has been there since its push, with next as its pusher wrote it.
//   - queued, queuedStopped: the timer is on a live incoming stack, or in
//     the hands of the goroutine that popped it there, which holds the
//     shard's lock (a drainer, or SystemTimer.Stop). next is the stack's
//     link, written by the pusher before the push and read and cleared by
//     the popper; prev is nil. Reset changes the state word alone, by CAS,
//     and Stop makes the timer owned; only the popper moves the timer out of
//     these states to pending, stopped or returned.
//   - pending: the timer is linked into a bucket or one of its shard's
//     lists, and next and prev are written only under the shard's lock.
//     Reset to a later deadline changes the due tick in the state word
//     alone, by CAS, without the lock. Leaving pending (to stopped, fired
//     or returned) happens only under the lock, after the timer is
//     unlinked: a timer that is not pending is linked nowhere, so a Reset
//     that re-arms it without the lock can never write links that a lock
//     holder still reads.
//
// Only a timer in none of the stack states is pushed, so a timer is never on
// a stack twice.
const (
	stateIdle          uint32 = iota // never armed: the zero value
	stateQueued                      // on the incoming stack, armed; value: the deadline, ns
	stateQueuedStopped               // on the incoming stack, stopped before it was placed
	statePending                     // placed in a list of its shard; value: the due tick
	stateFired                       // handed to the executor (for a periodic timer: until its next run is scheduled); value: the due tick
	stateStopped                     // stopped; in no list and not on the stack
	stateReturned                    // returned by SystemTimer.Stop: final
	stateOwned                       // held by one goroutine while it pushes the timer (value: the deadline, ns) or pops it (value: 0)
)

const (
	stateBits = 3
	stateMask = 1<<stateBits - 1
	// maxValue is the largest value a state word holds, and, as a
	// deadline, one that never comes (see SystemTimer.toValue).
	maxValue = 1<<(63-stateBits) - 1
)

func pack(v int64, s uint32) int64 { return v<<stateBits | int64(s) }

func unpack(w int64) (v int64, s uint32) { return w >> stateBits, uint32(w & stateMask) }

// Timer kinds.
const (
	kindOnce uint8 = iota
	kindPeriodic
	kindContext
	kindChan   // a ChanTimer's: runTimer calls chanTimer.fire
	kindTicker // a Ticker's: the same, and it holds a place in WithMaxPending's bound as a series
)

// shard returns t's shard (see sh).
func (t *Timer) shard() *shard {
	return (*shard)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&t.sh))))
}

// lockShard locks t's shard and returns it: the shard t is on for as long
// as the caller holds the lock (see sh).
func (t *Timer) lockShard() *shard {
	for {
		sh := t.shard()
		failpoint("lockShard:read")
		sh.mu.Lock()
		touch(sh, "lock")
		if t.shard() == sh {
			return sh
		}
		sh.mu.Unlock() // moved meanwhile
	}
}

// moveTo moves t, owned by the caller and on no list or stack, from shard
// from to shard to, under from's lock (see sh), and reports true; or, if
// SystemTimer.Stop has closed from, leaves t there and reports false: its
// push then fails there. Moved, it could be armed on a shard Stop has not
// closed yet, after an operation that found it on the closed shard said
// the SystemTimer was stopped: a history no order of the calls gives
// (conctest's TestLinearizableRacingStop).
func (t *Timer) moveTo(from, to *shard) bool {
	from.mu.Lock()
	touch(from, "move")
	if from.closed {
		from.mu.Unlock()
		return false
	}
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&t.sh)), unsafe.Pointer(to))
	from.stats.migrated++
	from.mu.Unlock()
	return true
}

// series reports whether t is the Timer of a series that holds one place in
// WithMaxPending's bound for its whole life (a periodic timer, a Ticker), so
// that its own moves in and out of pending do not count there.
func (t *Timer) series() bool { return t.kind == kindPeriodic || t.kind == kindTicker }

// initQueued sets the state word of a timer no other goroutine can see yet:
// queued with deadline v (a state word value). A plain store, not an atomic one, which on
// amd64 is a full fence, on the path of every AfterFunc; the push that
// publishes the timer orders it before any other goroutine's access.
func (t *Timer) initQueued(v int64) {
	*(*int64)(unsafe.Pointer(&t.w)) = pack(v, stateQueued)
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
// Bind panics if t or f is nil, or t is bound already. A Timer bound to a
// SystemTimer that is stopped is never armed: TryReset returns ErrStopped.
// Once Stop has returned true, or f has returned, and no other call on t is
// under way, the library holds no pointer to t: the struct holding it may
// be zeroed and bound again.
func (st *SystemTimer) Bind(t *Timer, f func()) {
	st.mustBeMade("Bind")
	switch {
	case t == nil:
		panic("timingwheel: Bind: nil *Timer")
	case f == nil:
		panic("timingwheel: Bind: nil func")
	case t.sh != nil:
		panic("timingwheel: Bind: the Timer is bound already")
	}
	t.f, t.kind = f, kindOnce
	st.attach(t, false)
}

// Stop prevents the timer's function from running. It returns true if this
// call did so; false if the function has already been handed to the executor
// (it ran, is running, or is about to run) or the timer was not armed.
// For a periodic timer, Stop also ends the series: no run starts after Stop
// returns, except one already handed to the executor.
func (t *Timer) Stop() bool {
	t.checkBound("Stop")
	if t.kind == kindPeriodic {
		return periodicOf(t).stop()
	}
	for {
		w := t.w.Load()
		switch _, s := unpack(w); s {
		case stateQueued:
			if t.w.CompareAndSwap(w, pack(0, stateOwned)) {
				t.shard().unstack(t) // owned: it stays on this shard
				return true
			}
		case statePending:
			sh := t.lockShard()
			stopped := sh.stopPending(t)
			sh.mu.Unlock()
			if stopped {
				return true
			}
		case stateOwned:
			waitOwned()
		default:
			return false
		}
	}
}

// waitOwned waits a moment for the goroutine that is pushing a timer or
// popping it to move it out of owned, which it does without a lock or a
// block (see the states): it yields.
func waitOwned() {
	failpoint("waitOwned")
	runtime.Gosched()
}

// unstack takes t, which the caller's Stop moved from queued to owned, off
// its shard's incoming stack, and leaves it stopped (see the states). The
// common case, a timer stopped soon after it was armed, with nothing armed
// on its shard since, is two atomic operations and no lock: the stack's
// head is t, and a CAS pops it. Else the drainer settles it, under the lock.
func (sh *shard) unstack(t *Timer) {
	failpoint("unstack:owned")
	touch(sh, "pop")
	if sh.incoming.Load() == t {
		// A drainer that took the stack since clears next atomically.
		next := (*Timer)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&t.next))))
		failpoint("unstack:next")
		if sh.incoming.CompareAndSwap(t, next) {
			t.next = nil
			sh.unstacked.Add(1)
			// A CAS, not a store: SystemTimer.Stop's executor Close
			// makes returned a timer with a run owed to an earlier
			// arming, owned or not, and returned is final.
			t.w.CompareAndSwap(pack(0, stateOwned), pack(0, stateStopped))
			return
		}
	}
	failpoint("unstack:below")
	// If the CAS fails, SystemTimer.Stop returned the timer meanwhile (see
	// above); its walk of the stack holds the shard's lock, which the
	// drain waits for, as it waits for any other drainer.
	t.w.CompareAndSwap(pack(0, stateOwned), pack(0, stateQueuedStopped))
	sh.st.drainShard(sh, sh.st.now())
}

// stopPending stops t if it is pending, and reports whether it did. Called
// with mu held.
//
// t is unlinked before its state leaves pending: once it is stopped, a
// Reset on another goroutine may re-arm it without the lock and write its
// next link while it is still in the bucket's list.
func (sh *shard) stopPending(t *Timer) bool {
	if _, s := unpack(t.w.Load()); s != statePending {
		return false
	}
	// Under mu, nobody else takes t out of pending: it stays pending
	// until the CAS below, whatever a concurrent Reset does.
	t.unlink()
	failpoint("stopPending:unlinked")
	sh.leavePending(t, 0, stateStopped)
	sh.addPendingOf(t, -1)
	sh.stats.stopped++
	return true
}

// leavePending moves t, pending and unlinked by the caller, to state s with
// value v. Only a Reset that postpones t changes its state word while it is
// pending and mu is held, and it keeps it pending. Called with mu held.
func (sh *shard) leavePending(t *Timer, v int64, s uint32) {
	for {
		w := t.w.Load()
		if debugChecks {
			if _, cur := unpack(w); cur != statePending {
				panic(fmt.Sprintf("timingwheel: internal error: a timer left pending under the lock, in state %d", cur))
			}
		}
		if t.w.CompareAndSwap(w, pack(v, s)) {
			return
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
// After [SystemTimer.Stop] it returns false, silently, even for a timer
// that was pending when Stop returned it: the function never runs.
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

// Postpone is [Timer.Reset] that never moves a pending timer earlier: a
// timer pending with a deadline after d from now keeps it, and Postpone
// reports true; with d <= 0 a pending timer is left as it is. It is the
// Reset of a timeout pushed back by several goroutines at once (a
// connection read and written at the same time, a session touched by its
// requests): with Reset, a goroutine that read the clock first and stored
// its deadline last would move the deadline back to its own, earlier than
// the latest activity. A periodic timer's Postpone is its Reset.
func (t *Timer) Postpone(d time.Duration) bool {
	t.checkBound("Postpone")
	sh := t.shard()
	if t.kind == kindPeriodic {
		was, _ := periodicOf(t).reset(d)
		return was
	}
	now := sh.st.now()
	if d <= 0 {
		was, _ := t.resetLocked(now, now, true)
		return was
	}
	was, _ := t.resetTo(satAdd(now, int64(d)), now, true, true)
	return was
}

func (t *Timer) reset(d time.Duration, name string) (bool, error) {
	t.checkBound(name)
	sh := t.shard()
	if t.kind == kindPeriodic {
		return periodicOf(t).reset(d)
	}
	now := sh.st.now()
	if d <= 0 {
		return t.resetLocked(now, now, false)
	}
	return t.resetTo(satAdd(now, int64(d)), now, true, false)
}

// resetTo is Reset to the deadline when, at or after now (both ns since
// the epoch), read from the clock by the caller; if later, Postpone's: a
// pending or queued timer due after when keeps its deadline. If move, a
// timer that is not pending moves to the shard of the caller's processor
// as it is re-armed without the lock: the goroutine that re-arms a timer is
// the one that stops or resets it next, most of the time (a connection's
// timer bound on the accept loop and reset by the goroutine serving it).
// The move takes the old shard's lock, once: later Resets on the same
// processor find the timer there.
func (t *Timer) resetTo(when, now int64, move, later bool) (bool, error) {
	st := t.shard().st
	nv := st.toValue(when)
	for {
		w := t.w.Load()
		failpoint("reset:read")
		switch v, s := unpack(w); s {
		case statePending:
			if nv < v {
				if later {
					return true, nil
				}
				return t.resetLocked(when, now, false) // earlier: its bucket may expire too late
			}
			if t.w.CompareAndSwap(w, pack(nv, statePending)) {
				return true, nil
			}
		case stateQueued, stateQueuedStopped:
			if later && s == stateQueued && nv < v {
				return true, nil
			}
			// Still on the stack: change the deadline it will be placed
			// by. As for a push, the deadline must not be before its
			// shard's wakeAt, read after the change (see shard.push).
			if when < t.shard().wakeAt.Load() {
				return t.resetLocked(when, now, later)
			}
			if t.w.CompareAndSwap(w, pack(nv, stateQueued)) {
				// Its shard now: the word may have come back to w
				// since it was read, the timer moved.
				if sh := t.shard(); when < sh.wakeAt.Load() {
					st.drainShard(sh, now)
				}
				return s == stateQueued, nil
			}
		case stateIdle, stateStopped, stateFired:
			// (Before wakeAt, the push would be drained at once: the
			// lock is taken either way. The shard may change below: the
			// check after the push, on the shard pushed to, is the one
			// that counts.)
			if when < t.shard().wakeAt.Load() || st.maxPending > 0 || st.closed.Load() {
				if move && st.maxPending > 0 {
					t.follow(w)
				}
				return t.resetLocked(when, now, later)
			}
			// Take the timer (see the states): from here until it is
			// queued, nobody else acts on it.
			if !t.w.CompareAndSwap(w, pack(nv, stateOwned)) {
				continue
			}
			// Owned: its shard is read now, and stays. Read before the
			// CAS, it could be stale: the word may have come back to w
			// (stopped, or fired in the same tick) while another Reset
			// moved the timer and a Stop stopped it again (ABA).
			sh := t.shard()
			// Owned and on no list: it moves to the shard of the
			// processor that arms it, if that is another one, and its
			// push is counted by the processor if it lands there (see
			// localShardPush).
			pc := countOnShard
			if move && !st.fixedPlace {
				var to *shard
				if to, pc = st.procShardPush(sh, true); to != sh {
					sh, pc = t.moveAway(sh, to, pc)
				}
			}
			failpoint("reset:arming")
			if !sh.push(t) {
				// SystemTimer.Stop has taken the stack: the timer is
				// not armed. Put back the state nobody else saw changed,
				// unless SystemTimer.Stop returned the timer meanwhile
				// for a run it owed (see SystemTimer.Stop).
				t.w.CompareAndSwap(pack(nv, stateOwned), w)
				return false, ErrStopped
			}
			failpoint("reset:pushed")
			// Nobody else changes an arming timer whose push succeeded:
			// the drainer and SystemTimer.Stop wait for it, and the only
			// other writer, the executor's Close in SystemTimer.Stop, runs
			// after every shard's stack was taken, which waited for this.
			if !t.w.CompareAndSwap(pack(nv, stateOwned), pack(nv, stateQueued)) && debugChecks {
				panic("timingwheel: internal error: an arming timer changed under its pusher")
			}
			if sh.countPush(pc) || when < sh.wakeAt.Load() {
				st.drainShard(sh, st.now())
			}
			return false, nil
		case stateOwned:
			waitOwned()
		default: // stateReturned
			return false, ErrStopped
		}
	}
}

// moveAway moves t, owned by the caller and on no list or stack, from sh
// to to, the shard of the calling processor, for resetTo, and returns the
// shard t is on and how its push is to be counted (c, as procShardPush
// said, if t moved). Out of line: resetTo pays for the lookup on every
// re-arm, for the move only when the processor changed.
//
//go:noinline
func (t *Timer) moveAway(sh, to *shard, c pushCount) (*shard, pushCount) {
	failpoint("reset:moving")
	if t.moveTo(sh, to) {
		return to, c
	}
	return sh, countOnShard
}

// follow moves t, not pending (w is the state word the caller read: idle,
// stopped or fired), to the shard of the calling processor, before a
// re-arm under WithMaxPending, which takes the lock of the shard t is on
// to reserve its place there: so that a timer follows the processor that
// re-arms it under the bound too. Like the move of resetTo, it owns t for
// the move (see moveTo), and then gives back the state word it took; if
// another goroutine acted on t first, t stays where it is. Giving it back
// fails only if SystemTimer.Stop returned t meanwhile, for a run it owed:
// resetLocked then finds it returned.
func (t *Timer) follow(w int64) {
	sh := t.shard()
	to := sh.st.localShard(sh)
	if to == sh || !t.w.CompareAndSwap(w, pack(0, stateOwned)) {
		return
	}
	// Owned: its shard is read now, and stays (read before, it could be
	// stale: see resetTo).
	if sh = t.shard(); to != sh {
		failpoint("follow:moving")
		t.moveTo(sh, to)
	}
	failpoint("follow:moved")
	t.w.CompareAndSwap(pack(0, stateOwned), w)
}

// resetLocked is Reset to the deadline when under the shard's lock: moving
// a pending timer earlier, running one at once (when <= now: Reset with
// d <= 0), and arming under WithMaxPending; if later, Postpone's, which
// leaves a pending timer due after when as it is.
func (t *Timer) resetLocked(when, now int64, later bool) (bool, error) {
	for {
		was, retry, err := t.tryResetLocked(when, now, later)
		if !retry {
			return was, err
		}
		// Another goroutine owns the timer, and may be moving it off
		// this shard, which takes the shard's lock: wait without it.
		waitOwned()
	}
}

// tryResetLocked is resetLocked, or reports retry if it found the timer
// owned by another goroutine, or moved to another shard while it released
// the lock: the caller looks again, with the lock released.
func (t *Timer) tryResetLocked(when, now int64, later bool) (was, retry bool, err error) {
	sh := t.lockShard()
	defer sh.unlock()
	st := sh.st
	if sh.closed {
		return false, false, ErrStopped
	}
	sh.drain(now) // a queued timer becomes pending or stopped
	for {
		w := t.w.Load()
		switch v, s := unpack(w); s {
		case statePending:
			if later && (when <= now || st.toValue(when) <= v) {
				// Postpone: it keeps its later deadline, or, with
				// d <= 0, its own. (Firing it now would rest on v as
				// read here, which a lock-free Reset may have moved
				// later since: leavePending does not look.)
				return true, false, nil
			}
			if when <= now {
				// Unlinked before it leaves pending; see stopPending.
				t.unlink()
				failpoint("resetLocked:unlinked")
				sh.leavePending(t, st.toValue(now), stateFired)
				sh.addPendingOf(t, -1)
				sh.fireNow(t)
				return true, false, nil
			}
			nv := st.toValue(when)
			if !t.w.CompareAndSwap(w, pack(nv, statePending)) {
				continue
			}
			if nv >= v {
				return true, false, nil // not earlier: it stays where it is
			}
			t.unlink()
			sh.stats.moved++
			sh.relink(t, now)
			return true, false, nil
		case stateQueued, stateQueuedStopped:
			sh.drain(now) // queued again by a concurrent Reset since
		case stateOwned:
			return false, true, nil
		case stateIdle, stateStopped, stateFired:
			if when <= now {
				if t.w.CompareAndSwap(w, pack(st.toValue(now), stateFired)) {
					sh.stats.armed++
					sh.fireNow(t)
					return false, false, nil
				}
				continue
			}
			if st.maxPending == 0 || t.series() { // a Ticker holds its place
				if !t.w.CompareAndSwap(w, pack(st.toValue(when), statePending)) {
					continue
				}
				sh.admit(t, now)
				return false, false, nil
			}
			if !st.reserveLocked(sh) {
				if t.shard() != sh {
					return false, true, nil // moved while the lock was released
				}
				if sh.closed {
					// SystemTimer.Stop closed the shard while the lock
					// was released. Looking again would find the bound
					// full for as long as a place is held: a loop.
					return false, false, ErrStopped
				}
				if t.w.Load() != w {
					continue // changed while the lock was released: look again
				}
				return false, false, ErrTooManyPending
			}
			if sh.closed {
				sh.release(1)
				return false, false, ErrStopped
			}
			if t.shard() != sh || !t.w.CompareAndSwap(w, pack(st.toValue(when), statePending)) {
				sh.release(1) // changed while the lock was released
				if t.shard() != sh {
					return false, true, nil // moved: look again, under its new shard's lock
				}
				continue
			}
			sh.admitReserved(t, now)
			return false, false, nil
		default: // stateReturned
			return false, false, ErrStopped
		}
	}
}
