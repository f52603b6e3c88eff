package purgatory

import (
	"sync/atomic"
	"time"
)

// An Operation is a request parked in a [Purgatory] until it can complete or
// its timeout fires. Implement it by embedding [Op] in a struct and giving
// the struct's pointer type the three methods below; Op provides the rest,
// and its unexported method keeps any other type from satisfying the
// interface.
//
// None of the methods is called with a lock of the purgatory held, so each
// may call any method of the purgatory or of any operation, with one
// exception: a TryComplete that does not complete its operation must not
// call CheckAndComplete of a key the operation is watched under, which asks
// for another try of that same operation, and so on without end.
//
// The purgatory's calls of one operation are ordered: TryComplete calls one
// after another, never two at once, then OnExpiration if the timeout
// completed the operation, then OnComplete. Each returns before the next
// starts, and its memory writes are seen by the next, whatever goroutine
// each runs on. So OnComplete may read, without a lock, what TryComplete
// stored in the operation, and release what the operation holds: nothing
// else of it is called afterwards. The package doc, "Ending exactly once,
// OnComplete last", says how, and what that costs ForceComplete.
type Operation interface {
	// TryComplete checks whether the operation can complete now and, if
	// it can, completes it with ForceComplete and returns what
	// ForceComplete returned; otherwise it returns false. It is never
	// called twice at once, nor once OnExpiration or OnComplete has
	// started. But another goroutine may complete the operation (with
	// ForceComplete, or by its timeout) just before or while TryComplete
	// runs: IsCompleted is then true, ForceComplete returns false, and
	// OnExpiration and OnComplete are called when TryComplete returns.
	// TryComplete need not check IsCompleted, unless to skip work that is
	// useless once the operation is completed. It must not wait for
	// OnComplete, which waits for it.
	TryComplete() bool

	// OnComplete is called exactly once, whichever way the operation
	// ends: by TryComplete, by ForceComplete or by its timeout. It is
	// the last call the purgatory makes to the operation: no TryComplete
	// is running when it starts, and none starts later.
	OnComplete()

	// OnExpiration is called when the timeout completed the operation,
	// just before OnComplete and on the same goroutine, and otherwise
	// never.
	OnExpiration()

	// ForceComplete and IsCompleted are provided by Op.
	ForceComplete() bool
	IsCompleted() bool

	base() *Op
}

// Op is the part of an operation the purgatory keeps: its timeout, whether
// it is completed, its timer, where its watch-list entries are. Embed it by
// value in an operation type. An Op must not be copied once used, and an
// operation can be passed to TryCompleteElseWatch only once.
type Op struct {
	// Timeout is how long the operation waits, from the moment
	// TryCompleteElseWatch arms its timer, before it expires. Set it
	// before TryCompleteElseWatch, which reads it once. Zero expires the
	// operation at once unless TryCompleteElseWatch completes it;
	// negative is an error.
	Timeout time.Duration

	// state holds the flags below and, from refShift up, the number of
	// watch-list entries that point at the operation. Keeping both in one
	// word is what makes the count of stale entries exact: an entry is
	// stale if the op was completed when the entry was removed, and
	// removal and completion are ordered by this word.
	state atomic.Uint64

	// self and p are written once by TryCompleteElseWatch before it sets
	// stReady, and read only after seeing stReady.
	self Operation
	p    *core

	// timer is written once by TryCompleteElseWatch before it sets
	// stArmed; then only the goroutine that clears stArmed reads it, and
	// drops it.
	timer Timer

	// deadline is when the timeout is due, in ns since core.epoch on the
	// monotonic clock, for the lateness of the expiry (Stats). It is
	// written once by TryCompleteElseWatch before it arms the timer, and
	// read by the expiry, which the arming happens before.
	deadline int64

	// inline and more are where the operation's watch-list entries are,
	// one ref per distinct key: the first three in inline (Kafka's
	// requests are watched under a few partitions), the others in more.
	// TryCompleteElseWatch sets them up, and each ref's l, before it sets
	// stWatched; see ref.
	inline [3]ref
	more   *[]ref
}

// nrefs returns how many refs the operation has room for: len(inline), and
// more's. A ref beyond its keys, or of a key it was never watched under
// (TryCompleteElseWatch stopped watching early), has a nil l.
func (o *Op) nrefs() int {
	if o.more != nil {
		return len(o.inline) + len(*o.more)
	}
	return len(o.inline)
}

// ref returns the operation's j-th ref.
func (o *Op) ref(j int) *ref {
	if j < len(o.inline) {
		return &o.inline[j]
	}
	return &(*o.more)[j-len(o.inline)]
}

// A ref is where one watch-list entry of an operation is, so that the
// operation's entries are found, and removed, without searching the lists:
// the purge visits only the entries of completed operations.
type ref struct {
	// l is the list the entry is in, nil if the operation was never
	// watched under the key. It is written once, under the list's shard
	// lock, by TryCompleteElseWatch; others read it only after seeing
	// stWatched, or under that lock.
	l *list
	// idx is the entry's position in l.entries, or -1 once it left the
	// list; guarded by l's shard lock. An entry of a gone list is void
	// whatever its idx.
	idx int32
}

// Flags of Op.state.
const (
	stCompleted uint64 = 1 << iota // won the completion; final
	stRunning                      // a goroutine is running TryComplete
	stRetry                        // a try was asked for while stRunning: run again
	stClaimed                      // passed to TryCompleteElseWatch
	stReady                        // self and p are set: the op can complete
	stCanceled                     // the timeout is canceled: the op will not expire
	stDetached                     // the purgatory let go of it: no more tries or watches
	stArmed                        // timer is set and nobody has stopped it yet
	stWatched                      // TryCompleteElseWatch is done watching: refs are final
	stHanded                       // completed while stRunning: the runner owes the callbacks
	stExpired                      // with stHanded: the timeout completed it

	refShift        = 32
	refOne   uint64 = 1 << refShift
)

func (o *Op) base() *Op { return o }

// IsCompleted reports whether the operation has completed. It becomes true
// when the completion is decided: before OnExpiration and OnComplete run,
// which is later if a TryComplete is running then (see ForceComplete).
func (o *Op) IsCompleted() bool { return o.state.Load()&stCompleted != 0 }

// ForceComplete completes the operation unless it is already completed, and
// reports whether this call completed it. If it did, the operation's
// timeout will not fire, and OnComplete is called exactly once: by this
// call, on the calling goroutine, before it returns, unless a TryComplete
// of the operation is running. Then the goroutine running TryComplete
// calls OnComplete as soon as TryComplete returns, and ForceComplete
// returns true at once, without waiting for it, so that no TryComplete
// runs while or after OnComplete does.
//
// Called from TryComplete, as in the usual
//
//	return f.ForceComplete()
//
// ForceComplete therefore never calls OnComplete itself: OnComplete runs
// on the same goroutine right after TryComplete returns, before the
// purgatory method that called TryComplete (TryCompleteElseWatch,
// CheckAndComplete) returns. Code in TryComplete after ForceComplete
// returned true runs before OnComplete.
//
// Called from another goroutine while a TryComplete runs, ForceComplete
// returns true before OnComplete has run. So release what the operation
// holds in OnComplete, not after ForceComplete returns, and have OnComplete
// signal whoever waits for the answer. This is racy:
//
//	if f.ForceComplete() {
//		send(f.response) // set by OnComplete, which may not have run yet
//		f.buf.Free()     // TryComplete may still be reading f.buf
//	}
//
// Before the operation has been passed to TryCompleteElseWatch,
// ForceComplete does nothing and returns false.
func (o *Op) ForceComplete() bool { return o.complete(false) }

// complete is the one place an operation completes: the compare-and-swap
// that sets stCompleted decides which caller completes it, so the callbacks
// run exactly once. If the swap finds a TryComplete running (stRunning), it
// sets stHanded (and stExpired for an expiry) in the same swap, and the
// runner calls the callbacks after TryComplete returns (see run); since
// stRunning cannot be set again once stCompleted is, no TryComplete runs
// after them. An expiry does not complete an operation whose timeout was
// canceled.
func (o *Op) complete(expiry bool) bool {
	for {
		s := o.state.Load()
		if s&(stCompleted|stReady) != stReady || expiry && s&stCanceled != 0 {
			return false
		}
		n := s | stCompleted
		if s&stRunning != 0 {
			n |= stHanded
			if expiry {
				n |= stExpired
			}
		}
		if o.state.CompareAndSwap(s, n) {
			p := o.p
			refs := int64(s >> refShift)
			if refs > 0 {
				p.stale.Add(refs) // every entry of the op is stale now
			}
			// Until stWatched, TryCompleteElseWatch unwatches the op
			// and counts its completion.
			if s&stWatched != 0 {
				var late time.Duration
				if expiry {
					late = time.Duration(p.since() - o.deadline)
				}
				if refs > 0 {
					p.ended(o, expiry, late) // and queued for the purge
				} else {
					p.ended(nil, expiry, late) // CancelForKey took its entries
				}
			}
			if !expiry {
				o.stopTimer()
			}
			if n&stHanded == 0 {
				o.callbacks(expiry)
			}
			p.maybePurge()
			return true
		}
	}
}

// callbacks calls OnExpiration, for an expiry, then OnComplete. OnExpiration
// comes first so that OnComplete can see that the operation expired.
func (o *Op) callbacks(expiry bool) {
	if expiry {
		o.self.OnExpiration()
	}
	o.self.OnComplete()
}

// expire is the function of the operation's timer.
func (o *Op) expire() {
	o.p.delayed.Add(-1)
	o.complete(true)
}

// stopTimer stops the operation's timer if it is armed; the timer's
// callback or the one stopTimer that stops it takes it off NumDelayed.
// Clearing stArmed elects the one caller that may touch the timer.
func (o *Op) stopTimer() {
	for {
		s := o.state.Load()
		if s&stArmed == 0 {
			return
		}
		if o.state.CompareAndSwap(s, s&^stArmed) {
			t := o.timer
			o.timer = nil
			if t.Stop() {
				o.p.delayed.Add(-1)
			}
			return
		}
	}
}

// try runs TryComplete unless the operation is completed or detached, and
// reports whether a TryComplete it ran completed the operation.
//
// Tries of one operation never overlap. A try that finds another one
// running does not wait: it sets stRetry and returns, and the running one,
// which can only drop stRunning while stRetry is clear, runs TryComplete
// again. That later run starts after the caller's change to the
// operation's condition (the CAS that set stRetry is observed by the one
// that clears it), so no change is missed and no goroutine blocks on
// another's TryComplete.
func (o *Op) try() bool {
	for {
		s := o.state.Load()
		switch {
		case s&(stCompleted|stDetached) != 0:
			return false
		case s&stRunning != 0:
			// Swap even if stRetry is set already: the running try
			// must observe this write, so that our caller's change
			// happens before its next TryComplete.
			if o.state.CompareAndSwap(s, s|stRetry) {
				return false
			}
		case o.state.CompareAndSwap(s, s|stRunning):
			return o.run()
		}
	}
}

// run runs TryComplete, and again as long as stRetry was set meanwhile and
// the operation is not completed, then drops stRunning. If the operation
// was completed while TryComplete ran (stHanded: by TryComplete's own
// ForceComplete, another goroutine's, or the timeout), run calls the
// callbacks that the completion left to it, after dropping stRunning: the
// CAS that drops it observes the completion's, so the completer's writes
// are seen by the callbacks, and TryComplete's writes are too, being on
// this goroutine.
func (o *Op) run() (done bool) {
	released := false
	defer func() {
		if !released { // TryComplete panicked: let the next try run
			if s := o.state.And(^(stRunning | stRetry)); s&stHanded != 0 {
				// Still end the operation: its completer was told it
				// did. A panic here would follow TryComplete's.
				o.callbacks(s&stExpired != 0)
			}
		}
	}()
	for {
		if o.self.TryComplete() {
			done = true
		}
		again := false
		for !again {
			s := o.state.Load()
			if s&stRetry != 0 && s&(stCompleted|stDetached) == 0 {
				again = o.state.CompareAndSwap(s, s&^stRetry)
				continue
			}
			if o.state.CompareAndSwap(s, s&^(stRunning|stRetry)) {
				released = true
				if s&stHanded != 0 {
					o.callbacks(s&stExpired != 0)
				}
				return done
			}
		}
	}
}

// addRef counts a new watch-list entry, unless the operation is completed
// or detached, in which case no entry must be made. Called with the lock of
// the entry's shard held.
func (o *Op) addRef() bool {
	for {
		s := o.state.Load()
		if s&(stCompleted|stDetached) != 0 {
			return false
		}
		if o.state.CompareAndSwap(s, s+refOne) {
			return true
		}
	}
}

// dropRef uncounts a removed watch-list entry and reports whether the entry
// was stale: whether the operation was completed, so that complete counted
// the entry in core.stale.
func (o *Op) dropRef() (stale bool) {
	return o.state.Add(^(refOne-1))&stCompleted != 0
}

// dead reports whether the operation's entries can go: it is completed or
// the purgatory let go of it.
func (o *Op) dead() bool { return o.state.Load()&(stCompleted|stDetached) != 0 }

// cancel cancels the operation's timeout unless it is completed or
// detached, and reports whether it did (or had already).
func (o *Op) cancel() bool {
	for {
		s := o.state.Load()
		if s&(stCompleted|stDetached) != 0 {
			return false
		}
		if s&stCanceled != 0 || o.state.CompareAndSwap(s, s|stCanceled) {
			o.stopTimer()
			return true
		}
	}
}

// detach makes the purgatory let go of the operation unless it is completed,
// already detached, or has one of the flags in unless, and reports whether
// it did: the timeout is canceled and the operation is never tried or
// watched again. Only ForceComplete can then complete it. The caller stops
// the timer.
func (o *Op) detach(unless uint64) bool {
	for {
		s := o.state.Load()
		if s&(stCompleted|stDetached|unless) != 0 {
			return false
		}
		if o.state.CompareAndSwap(s, s|stDetached|stCanceled) {
			return true
		}
	}
}
