package purgatory

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// churn submits n operations, each watched under a hot key, one of eight
// cold keys and a key of its own, and completes them a window at a time by
// CheckAndComplete of the hot key only: every cold and own-key entry is left
// stale. It calls check after each window with the number of entries of
// operations not completed.
func churn(t *testing.T, p *Purgatory[int], n int, check func(i, liveEntries int)) {
	const (
		window = 64
		hot    = -1
	)
	batch := make([]*testOp, 0, window)
	for i := range n {
		op := newOp(time.Hour)
		_, err := p.TryCompleteElseWatch(op, hot, -2-i%8, i)
		require.NoError(t, err)
		batch = append(batch, op)
		if len(batch) < window {
			continue
		}
		check(i, 3*len(batch))
		for _, op := range batch {
			op.ready.Store(true)
		}
		done, err := p.CheckAndComplete(hot)
		require.NoError(t, err)
		require.Equal(t, window, done)
		clear(batch)
		batch = batch[:0]
		check(i, 0)
	}
}

// TestPurgeBoundsMemory completes operations through one key while they are
// watched under others, and checks that the watch lists and the heap stay
// bounded by the live operations plus the purge interval.
func TestPurgeBoundsMemory(t *testing.T) {
	n := 1_000_000
	if raceEnabled || testing.Short() {
		n = 100_000
	}
	const interval = 1000
	p := newP[int](t, WithPurgeInterval(interval))

	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap()
	var peak uint64
	maxWatched := 0
	churn(t, p, n, func(i, live int) {
		w := p.Watched()
		maxWatched = max(maxWatched, w)
		// The completion that passes the interval purges, so at most
		// interval stale entries are ever left.
		if w > live+interval {
			require.LessOrEqual(t, w, live+interval, "after %d operations", i+1)
		}
		if (i+1)%(n/10) < 64 {
			peak = max(peak, heap())
		}
	})
	t.Logf("%d operations: at most %d watch-list entries; heap %d KiB at the start, at most %d KiB",
		n, maxWatched, base>>10, peak>>10)
	// Without the purge, the stale entries alone would hold about n
	// operations of some 100 bytes each, and 2n entries.
	assert.Less(t, peak, base+8<<20, "the heap grew")
	checkInvariants(t, p)

	// The same churn without a purge does break the bound.
	t.Run("control", func(t *testing.T) {
		p := newP[int](t, WithPurgeInterval(math.MaxInt))
		exceeded := false
		churn(t, p, 10_000, func(_, live int) {
			exceeded = exceeded || p.Watched() > live+interval
		})
		assert.True(t, exceeded, "the check cannot fail")
	})
}

// TestWatchListsShrink: a watch list that was long once, and a shard map
// that held many keys once, give their memory back.
func TestWatchListsShrink(t *testing.T) {
	p := newP[int](t)
	ops := make([]*testOp, 10_000)
	for i := range ops {
		ops[i] = newOp(time.Hour)
		_, err := p.TryCompleteElseWatch(ops[i], 0)
		require.NoError(t, err)
	}
	for _, op := range ops[10:] {
		op.ready.Store(true)
	}
	n, err := p.CheckAndComplete(0)
	require.NoError(t, err)
	require.Equal(t, len(ops)-10, n)
	sh := p.shardOf(0)
	sh.mu.Lock()
	assert.Len(t, sh.lists[0].entries, 10)
	assert.LessOrEqual(t, cap(sh.lists[0].entries), 4*minListCap, "the list kept its array")
	sh.mu.Unlock()

	// Many keys come and go.
	keys := 2 * minMapPeak * len(p.shards)
	for k := 1; k <= keys; k++ {
		op := newOp(time.Hour)
		_, err := p.TryCompleteElseWatch(op, k)
		require.NoError(t, err)
		ops = append(ops, op)
	}
	peak := 0
	for i := range p.shards {
		peak = max(peak, p.shards[i].peak)
	}
	require.GreaterOrEqual(t, peak, minMapPeak)
	for _, op := range ops[10_000:] {
		op.ready.Store(true)
	}
	for k := 1; k <= keys; k++ {
		n, err := p.CheckAndComplete(k)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		assert.Less(t, sh.peak, minMapPeak, "shard %d: the map was not rebuilt", i)
		sh.mu.Unlock()
	}
	checkInvariants(t, p, ops...)
}
