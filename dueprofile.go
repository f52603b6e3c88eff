package timingwheel

import (
	"slices"
	"sync"
	"time"
)

// A DueProfile says how a SystemTimer's pending timers spread over shards,
// exactly, and over the time to their due tick, as an estimate; see
// [SystemTimer.DueProfile].
type DueProfile struct {
	// Due[i] estimates how many pending timers fall due in
	// (bounds[i-1], bounds[i]] from now, Due[0] counting those due
	// within bounds[0] or overdue, and Due[len(bounds)] those due after
	// the last bound.
	Due []float64
	// Shards[i] is the number of timers pending in shard i, as Len
	// counts them; they add up to Len.
	Shards []int
}

// DueProfile returns how st's pending timers spread over its shards, and
// an estimate of how they spread over time to due, in the intervals that
// bounds (increasing; it panics otherwise) cut: is a herd of timers about
// to fire in the next second, or an hour from now?
//
// It reads bucket counters, never the timers: each bucket of each wheel
// level counts the timers placed in it since it was last empty, and the
// shard's exact pending count is shared out over its buckets in
// proportion to those counts, each bucket's share spread evenly over the
// time its bucket covers (a tick at level 0, wheelSize^k ticks at level
// k, less the part already past). So the estimate adds up to the shard's
// count, and it is exact to within a bucket's width when no timer was
// stopped or moved earlier while pending: those still count in the bucket
// they left until it expires, so that when most timers are stopped before
// they fire, the buckets that see more armings per stop get more than
// their share. A timer postponed by Reset counts at its earlier due time
// until the driver re-places it. Timers in the driver's hands between two
// levels, or due beyond the largest Duration, are shared out like the
// rest (Due is empty when only they are pending).
//
// It takes each shard's lock in turn, for a walk over the shard's buckets
// (not its timers), so its cost grows with the buckets in use, not with
// the timers: with the default wheel size and a million timers spread
// over a day, about 10µs per shard under the lock and 45µs in all, on a
// 2-vCPU machine (BenchmarkDueProfile). The sharing out happens after the
// lock is released.
func (st *SystemTimer) DueProfile(bounds []time.Duration) DueProfile {
	st.mustBeMade("DueProfile")
	for i := 1; i < len(bounds); i++ {
		if bounds[i] <= bounds[i-1] {
			panic("timingwheel: DueProfile: bounds not increasing")
		}
	}
	p := DueProfile{Due: make([]float64, len(bounds)+1), Shards: make([]int, len(st.shards))}
	buf := spanPool.Get().(*[]dueSpan)
	defer spanPool.Put(buf)
	spans := *buf
	defer func() { *buf = spans[:0] }()
	for i := range st.shards {
		sh := &st.shards[i]
		now := st.now()
		sh.mu.Lock()
		sh.drain(now)
		spans = sh.dueSpans(spans[:0])
		count := sh.count
		sh.unlock()
		p.Shards[i] = count
		var placed float64
		for _, s := range spans {
			placed += s.n
		}
		if placed == 0 {
			continue
		}
		share := float64(count) / placed
		for _, s := range spans {
			from := time.Duration(satAdd(satMul(s.from, st.tick), -now))
			to := time.Duration(satAdd(satMul(s.to, st.tick), -now))
			spread(p.Due, bounds, from, to, s.n*share)
		}
	}
	return p
}

// spanPool holds DueProfile's scratch space: a span per bucket that holds
// timers, thousands at a million timers, which a page asks for every few
// seconds.
var spanPool = sync.Pool{New: func() any { return new([]dueSpan) }}

// A dueSpan is a bucket seen by DueProfile: the due ticks its timers may
// have, from (inclusive) to (exclusive), and its placed counter.
type dueSpan struct {
	from, to int64
	n        float64
}

// dueSpans appends a span for every bucket of sh that holds timers.
// Called with mu held.
func (sh *shard) dueSpans(out []dueSpan) []dueSpan {
	n := sh.st.wheelSize
	for _, lv := range sh.levels {
		cur := floorDiv(lv.cur, lv.tick) // the turn of the level's current bucket
		lv.eachBucket(func(slot int, b *bucket) {
			if b.queued == notQueued || b.placed == 0 || b.root.empty() {
				return
			}
			// place puts a due tick d in this level only if d − cur <
			// span, so the bucket's turn is the one of its slot among the
			// next wheelSize turns. (After the clock jumped, a bucket may
			// still hold timers of an earlier turn: they are due now, and
			// count as due later.)
			turn := cur + floorMod(int64(slot)-cur, n)
			from := max(satMul(turn, lv.tick), sh.c0+1)
			to := satAdd(satMul(turn, lv.tick), lv.tick)
			if d := sh.st.dueTick(b.minD); d > from && d < to {
				from = d // none is due before
			}
			out = append(out, dueSpan{from, to, float64(b.placed)})
		})
	}
	return out
}

// spread adds n to the intervals of due that [from, to) overlaps, in
// proportion to the overlap; see DueProfile for the intervals.
func spread(due []float64, bounds []time.Duration, from, to time.Duration, n float64) {
	// The first interval that from falls in: the first bound >= from.
	i, _ := slices.BinarySearch(bounds, from)
	if to <= from || i == len(bounds) {
		due[i] += n
		return
	}
	width := float64(to - from)
	lo := from
	for ; i < len(bounds) && lo < to; i++ {
		hi := min(bounds[i], to)
		due[i] += n * float64(hi-lo) / width
		lo = hi
	}
	if lo < to {
		due[len(bounds)] += n * float64(to-lo) / width
	}
}
