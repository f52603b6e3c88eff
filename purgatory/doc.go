// Package purgatory holds requests that cannot be answered yet until a
// condition holds or their timeout fires: Kafka's DelayedOperationPurgatory,
// for brokers and proxies, with its timeouts on a [timingwheel.SystemTimer]
// (or, with [WithAfterFunc], on any other timer, such as [time.AfterFunc]).
//
// A fetch that waits for enough bytes, or a produce that waits for its
// replicas, is an operation: a type that embeds [Op] and implements
// [Operation]'s TryComplete, OnComplete and OnExpiration.
//
//	type fetch struct {
//		purgatory.Op
//		...
//	}
//
//	func (f *fetch) TryComplete() bool {
//		if f.log.Available(f.offset) < f.minBytes {
//			return false
//		}
//		return f.ForceComplete()
//	}
//	func (f *fetch) OnComplete()   { f.respond() }
//	func (f *fetch) OnExpiration() { f.expired = true }
//
//	p, err := purgatory.New[string]()
//	f := &fetch{Op: purgatory.Op{Timeout: maxWait}, ...}
//	done, err := p.TryCompleteElseWatch(f, "orders-0")
//	...
//	log.Append(...)
//	p.CheckAndComplete("orders-0") // after every change that may complete an operation
//
// # Ending exactly once, OnComplete last
//
// An operation ends in one of three ways: its TryComplete completes it, some
// goroutine calls its ForceComplete, or its timeout fires. All three go
// through one compare-and-swap on the operation's state word that sets its
// completed flag, so exactly one of them wins, and OnComplete is called
// exactly once, after OnExpiration if the timeout won (so that OnComplete
// can see that the operation expired), on the same goroutine.
//
// OnComplete is also the last call the purgatory makes to the operation: no
// TryComplete runs while, or starts after, OnExpiration or OnComplete
// does. The state word has a running flag, set while a goroutine runs
// TryComplete (see below). If the winning swap finds it clear, the winner
// calls OnExpiration and OnComplete itself, and since no try can start once
// the completed flag is set, none will. If it finds it set, the winner does
// not call them, nor wait: it sets a handed flag in the same swap and
// returns (ForceComplete returns true), and the goroutine running
// TryComplete calls them as soon as TryComplete returns. So
//
//   - ForceComplete called from TryComplete, as in `return f.ForceComplete()`,
//     returns true before OnComplete runs, which is right after TryComplete
//     returns, on the same goroutine, before TryCompleteElseWatch or
//     CheckAndComplete returns;
//   - ForceComplete called elsewhere while a TryComplete runs returns true
//     at once, and OnComplete runs later, on the TryComplete's goroutine;
//   - a timeout that fires while a TryComplete runs leaves OnExpiration and
//     OnComplete to the TryComplete's goroutine too;
//   - a TryComplete running when the operation completes, or one that won
//     its turn just before and starts just after, sees IsCompleted true
//     from then on, and its ForceComplete returns false; it need not check
//     IsCompleted.
//
// OnComplete sees everything TryComplete wrote: the last TryComplete ran
// either on the goroutine calling OnComplete, or before the swap that
// cleared the running flag, which the completing swap observes. It sees
// too what the winner wrote before its ForceComplete, and what OnExpiration
// wrote. So state that TryComplete computes and stores in the operation may
// be read in OnComplete without a lock; but after an expiry or a
// ForceComplete from elsewhere it is what the last try computed, when the
// condition did not hold, so recompute it in OnComplete if that matters
// (Kafka's fetch reads the log again in its onComplete). What is racy is
// code that, after a ForceComplete from another goroutine returned true,
// relies on OnComplete having run, or on no TryComplete running:
//
//	if f.ForceComplete() { // from a goroutine other than TryComplete's
//		send(f.response)   // set by OnComplete, which may not have run: racy
//		f.buf.Free()       // a TryComplete may still be reading it: racy
//	}
//
// Release what the operation holds in OnComplete, and have OnComplete
// signal (close a channel) whoever waits for the answer. By the same rule
// TryComplete must not wait for its own operation's OnComplete, directly or
// through another goroutine: OnComplete waits for TryComplete to return.
//
// Kafka's DelayedOperation runs tryComplete under the operation's lock, and
// whichever caller's forceComplete completes the operation calls onComplete
// before it returns. In older versions (a compare-and-swap on completed)
// the expiry did not take the lock, so its onComplete could run while a
// tryComplete ran, and that tryComplete ran on after it; newer versions take
// the lock in the expiry too, so the timer's thread waits for a running
// tryComplete. Here no goroutine waits for another's TryComplete, and the
// cost is the one above: ForceComplete may return true before OnComplete
// has run.
//
// Completing an operation stops its timer ([timingwheel.Timer.Stop]), so
// [Purgatory.NumDelayed] drops at once. An expiry checks the canceled flag
// in the same compare-and-swap: an operation whose timeout was canceled by
// [Purgatory.CancelForKey] or [Purgatory.Close] does not expire, even if its
// timer had already fired.
//
// # Never missing a completion
//
// [Purgatory.TryCompleteElseWatch] tries the operation, then watches it under
// each key, then tries it again, and only then arms its timeout. A change
// made before the second try starts is seen by it; a change made after it is
// followed, as the caller must ensure, by a [Purgatory.CheckAndComplete] of a
// key, which finds the operation in that key's watch list.
//
// Two goroutines may want to try one operation at once, one of them having
// just made the change the other's try would not see. TryComplete of one
// operation never runs twice at once, and no goroutine waits for another's
// TryComplete: a try that finds one running sets a retry flag in the state
// word and returns; the running one can clear its running flag only while
// the retry flag is clear, so it sees the flag and runs TryComplete again,
// after the change, unless the operation is completed meanwhile. The running one's compare-and-swap that clears the flag
// observes the one that set it, so the new run also sees the change's memory
// writes.
//
// # Locks
//
// Watch lists are kept in shards (16 per GOMAXPROCS rounded up to a power of
// two, from 16 to 1024), by a
// [hash/maphash.Comparable] hash of the key, each a map from key to a list of
// operations under its own mutex, so that calls on different keys rarely
// meet on a lock. A goroutine holds at most one shard lock at a time, only
// for map and slice work and atomic updates of operation states; never while
// TryComplete, OnComplete or OnExpiration runs, and never while it calls the
// timer. CheckAndComplete copies the key's list under the lock and
// tries the copy without it. The only serialization around user code is the
// per-operation one described above.
//
// # Memory
//
// Completed operations leave the watch lists of all their keys. This happens
// eagerly where the keys are at hand: CheckAndComplete drops the completed
// operations it finds from the list it scanned, and TryCompleteElseWatch
// unwatches an operation that completed while it was being watched. The
// other entries of a completed operation (it completed by ForceComplete, by
// its timeout, or through another key) are stale. The number of stale
// entries is counted exactly: the state word of an operation also holds how
// many entries point at it, so completion knows how many entries it makes
// stale, and each removal knows whether it removes a stale one. When the
// count passes the purge interval ([WithPurgeInterval], default 1000), the
// goroutine whose completion passed it purges; no background goroutine is
// needed.
//
// A purge visits only the stale entries, not the lists: an operation keeps,
// for each of its keys, a reference to its entry (the list and the entry's
// position; in the operation itself for up to three keys), and a list is
// kept in no particular order, so an entry is removed by moving the list's
// last entry into its place. A completion that leaves stale entries queues
// its operation; the purge takes the queue, sorts the entries by shard and
// takes each shard lock once. So a purge costs about the same per stale
// entry however many operations wait, where scanning every list costs
// (watched entries / purge interval) checks per stale entry. Only when the
// lists hold at most four entries per stale one does a purge scan them
// instead, which is then the cheaper. The queue also triggers a purge when
// it holds more operations than the interval, since CheckAndComplete may
// remove the entries of queued operations first.
//
// So the watch lists ([Purgatory.Watched]) never hold more than the entries
// of the operations not yet completed, plus the purge interval, plus the
// entries of the completions in flight, and the queue no more than the purge
// interval of operations, plus those in flight. A list whose array is at
// most a quarter used is copied to a smaller one, an empty list is deleted,
// and a shard's map is rebuilt once it holds at most a quarter of the keys
// it once held, since a Go map keeps its memory when keys are deleted. An
// operation whose timeout was canceled by CancelForKey and that no other
// key's CheckAndComplete completes stays watched until it is
// force-completed: that is the caller's to do.
//
// # Monitoring
//
// [Purgatory.Stats] returns Kafka's two gauges (NumDelayed, Watched), the
// operations completed and expired since New, the stale entries purged, and
// a histogram of how late the expiries were. A completion of a watched
// operation already takes the lock of the purge queue; it counts there, so
// the figures cost no atomic operation of their own. The package
// github.com/go-timingwheel/timingwheel/expvarstats publishes them with
// expvar, and the module under contrib/prometheus exports them to
// Prometheus. [Purgatory.TopKeys] lists the keys with the most watch-list
// entries, for the operator's page of package
// github.com/go-timingwheel/timingwheel/debugpage; it walks every key,
// so call it when someone looks.
//
// # Closing
//
// [Purgatory.Close] takes every operation not completed out of the watch
// lists, cancels its timeout and returns it; the purgatory never touches it
// again, and the caller may complete it with ForceComplete (for instance to
// answer with an error). Later calls of TryCompleteElseWatch,
// CheckAndComplete and CancelForKey return [ErrClosed]. If the purgatory
// created its SystemTimer, Close stops it, which waits for the timer
// callbacks that are running; a timer given with [WithTimer] or
// [WithAfterFunc] is the caller's, and Close only stops the timeouts of the
// operations it returns. The purgatory starts no goroutine of its own, so
// none outlives Close.
package purgatory
