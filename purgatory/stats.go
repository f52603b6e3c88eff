package purgatory

import (
	"encoding/json"

	"github.com/go-timingwheel/timingwheel"
)

// Stats is a snapshot of what a Purgatory holds and has done, for
// monitoring; see [Purgatory.Stats]. Delayed and Watched are Kafka's two
// purgatory gauges (NumDelayedOperations and PurgatorySize); the totals
// count from New and only grow.
type Stats struct {
	// Delayed is the number of operations whose timeout is armed, as
	// NumDelayed returns it: those waiting, less those whose timeout
	// CancelForKey canceled.
	Delayed int
	// Watched is the number of watch-list entries, as Watched returns
	// it: an operation watched under three keys counts three times, and
	// the stale entries of completed operations count until they are
	// removed. Watched far above Delayed times the keys per operation
	// means stale entries wait for a purge (see WithPurgeInterval).
	Watched int

	// Completed counts the operations that completed after being
	// watched under a key, whichever way: by a TryComplete, by
	// ForceComplete (including after Close or CancelForKey returned
	// them), or by their timeout. An operation that TryCompleteElseWatch
	// completes at its first try never waited, and is not counted: that
	// call returned true.
	Completed uint64
	// Expired counts those of them that their timeout completed:
	// OnExpiration ran, or will when a running TryComplete returns.
	// Completed − Expired is how many were answered in time.
	Expired uint64
	// Purged counts the stale entries (of completed operations) that
	// purges removed from the watch lists. Entries that CheckAndComplete,
	// CancelForKey or TryCompleteElseWatch remove along the way are not
	// counted here.
	Purged uint64

	// Lateness is the histogram of how late the expiries were: the time
	// at which the timeout completed the operation, right before
	// OnExpiration runs, less the operation's deadline (when
	// TryCompleteElseWatch armed the timeout, plus Timeout). Both are read
	// on the real clock (a mock clock given to the SystemTimer does not
	// move them). Lateness.Count() is Expired. A lateness well past the
	// SystemTimer's tick means the timer's callbacks wait for workers, or
	// the expiries' own OnExpiration and OnComplete run long.
	Lateness timingwheel.Histogram
}

// Stats returns a snapshot of p's figures. It copies the totals under the
// lock that completions of watched operations take, briefly; call it from
// a monitoring loop, not per request. The figures are read one after the
// other while operations come and go, so they may disagree by the
// operations in flight.
func (p *Purgatory[K]) Stats() Stats {
	s := Stats{
		Delayed: p.NumDelayed(),
		Watched: p.Watched(),
		Purged:  p.purged.Load(),
	}
	p.queueMu.Lock()
	s.Completed, s.Expired, s.Lateness = p.completed, p.expired, p.lateness
	p.queueMu.Unlock()
	return s
}

// MarshalJSON writes s with the lateness as its quantiles and the buckets
// that counted anything, as [timingwheel.Histogram.MarshalJSON] does: what
// expvar shows.
func (s Stats) MarshalJSON() ([]byte, error) {
	type plain Stats // the same fields, without this method
	return json.Marshal(struct {
		plain
		Lateness *timingwheel.Histogram
	}{plain(s), &s.Lateness})
}
