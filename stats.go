package timingwheel

import (
	"encoding/json"
	"math"
	"time"
)

// shardStats are the totals a shard counts. Guarded by the shard's mu: each
// is counted where the transition it counts already holds the lock, so that
// AfterFunc, Stop and Reset, which take no lock, pay nothing for them. A
// timer armed or stopped without the lock is counted when the stack it was
// pushed on is drained, or, if its Stop pops it off the stack, in
// shard.unstacked.
type shardStats struct {
	armed     uint64 // armings that entered the wheel: placed, or fired at once
	fired     uint64 // handed to the executor
	stopped   uint64 // stopped while pending, or drained stopped
	postponed uint64 // found pushed back in an expired level-0 bucket, placed again
	moved     uint64 // Reset to an earlier deadline (under the lock)
	cascaded  uint64 // moved out of an expired bucket of a higher level
	migrated  uint64 // moved to another processor's shard by a Reset that re-armed it
}

// Stats is a snapshot of what a SystemTimer is doing, for monitoring; see
// [SystemTimer.Stats]. The totals count from New and only grow; the others
// are as of the snapshot.
type Stats struct {
	// Pending is the number of timers pending, as Len returns it.
	Pending int

	// Armed counts the armings of timers that entered the wheel:
	// AfterFunc, Reset of a timer that was not pending, a context's
	// deadline, each run of a periodic series scheduled. An arming made
	// without the lock (AfterFunc, Reset of a stopped timer) is counted
	// when the driver places it, within a tick or so; one stopped before
	// that counts once in Armed and once in Stopped, however many times it
	// was re-armed and stopped in between. So Armed − Fired − Stopped is
	// Pending, up to the armings not placed yet.
	Armed uint64
	// Fired counts the timers that came due: runs handed to the executor, or
	// channel timers their driver delivered itself.
	Fired uint64
	// Stopped counts the timers stopped before they fired.
	Stopped uint64
	// Postponed counts timers pushed back by Reset that the driver found
	// not due when the level-0 bucket they were in came due, and placed
	// again. Reset to a later deadline takes no lock and is not counted
	// when it is made: a timer pushed back a thousand times between two of
	// its buckets counts once, which is what it costs the driver.
	Postponed uint64
	// Moved counts Resets that moved a pending timer to an earlier
	// deadline, which takes the shard's lock.
	Moved uint64
	// Migrated counts the timers that a Reset re-arming them moved to the
	// shard of the processor it ran on (see the package doc, "Cores"): a
	// timer bound on one goroutine and re-armed on another that runs on
	// another processor moves once, not at every Reset.
	Migrated uint64
	// Rejected counts the armings refused with ErrTooManyPending.
	Rejected uint64
	// Cascaded counts the timers moved from an expired bucket of a level
	// above 0 into a lower one (or back into the same level, if pushed
	// back meanwhile).
	Cascaded uint64
	// Panics counts the callbacks that panicked; each went to the panic
	// handler.
	Panics uint64

	// Lateness is the histogram of callback start − deadline: how late
	// each callback started, on the SystemTimer's clock (the deadline is
	// kept to 16ns, rounded up, so a callback is never counted early).
	Lateness Histogram

	// Backlog is the number of callbacks handed to the executor and not
	// started yet. A backlog that stays above zero means callbacks need
	// more than the workers give them.
	Backlog int
	// Workers is WithWorkers; Helpers the goroutines running beyond them,
	// started because callbacks blocked or ran long.
	Workers, Helpers int
	// Lag is how far the clock was past the time of the last level-0
	// bucket a driver expired (of any shard), when it did: the driver's
	// own delay, before any worker's.
	Lag time.Duration
	// Levels is the number of wheel levels in use (the most of any shard).
	Levels int
	// Tick is WithTick: read Lateness and Lag against it.
	Tick time.Duration
}

// Stats returns a snapshot of st's figures: the totals since New, the
// lateness of callbacks, the executor's backlog and helpers, the driver's
// lag and the levels in use. It takes each shard's lock in turn, briefly,
// as Len does; call it from a monitoring loop, not per request.
func (st *SystemTimer) Stats() Stats {
	st.mustBeMade("Stats")
	s := Stats{
		Rejected: st.rejected.Load(),
		Tick:     time.Duration(st.tick),
	}
	now := st.now()
	lagAt := int64(math.MinInt64)
	for i := range st.shards {
		sh := &st.shards[i]
		sh.mu.Lock()
		sh.drain(now)
		s.Pending += sh.count
		s.Levels = max(s.Levels, len(sh.levels))
		if at := sh.lagAt.Load(); at > lagAt {
			lagAt, s.Lag = at, time.Duration(sh.lag.Load())
		}
		u := sh.unstacked.Load() // armed and stopped before they were placed
		s.Armed += sh.stats.armed + u
		s.Fired += sh.stats.fired
		s.Stopped += sh.stats.stopped + u
		s.Postponed += sh.stats.postponed
		s.Moved += sh.stats.moved
		s.Migrated += sh.stats.migrated
		s.Cascaded += sh.stats.cascaded
		sh.unlock()
	}
	st.executorStats(&s)
	return s
}

// MarshalJSON writes s with durations as strings ("1.5ms") and the
// lateness as its quantiles and buckets: what expvar shows.
func (s Stats) MarshalJSON() ([]byte, error) {
	type plain Stats // the same fields, without this method
	return json.Marshal(struct {
		plain
		Lateness *Histogram
		Lag      string
		Tick     string
	}{plain(s), &s.Lateness, s.Lag.String(), s.Tick.String()})
}

// executorStats fills in the executor's figures.
func (st *SystemTimer) executorStats(s *Stats) {
	for _, h := range st.lateness {
		h.addTo(&s.Lateness)
	}
	s.Panics = st.pool.Panics()
	var gs int
	s.Backlog, gs, _ = st.pool.Load()
	s.Workers = st.workers
	s.Helpers = max(gs-st.workers, 0)
}
