package purgatory

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPurgeRandomOperations drives random sequences of submissions under
// random keys (some repeated), ForceComplete calls, checks and
// cancellations through purgatories with small purge intervals, in one
// goroutine, and checks after every step that the counters, the lists and
// the operations' refs agree, that every stale entry is queued for the
// purge, and that no more than the purge interval of stale entries or
// queued operations are left. Every operation ends exactly once.
func TestPurgeRandomOperations(t *testing.T) {
	const keys = 12
	seeds, steps := 6, 1000
	if raceEnabled || testing.Short() {
		seeds, steps = 2, 500
	}
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			interval := rng.IntN(6)
			p := newP[int](t, WithPurgeInterval(interval))
			var ops []*testOp
			pick := func() *testOp { return ops[rng.IntN(len(ops))] }
			for step := range steps {
				switch r := rng.IntN(10); {
				case r < 4 || len(ops) == 0:
					ks := make([]int, 1+rng.IntN(6))
					for i := range ks {
						ks[i] = rng.IntN(keys)
					}
					op := newOp(time.Hour)
					op.ready.Store(rng.IntN(20) == 0) // some complete at once
					_, err := p.TryCompleteElseWatch(op, ks...)
					require.NoError(t, err)
					ops = append(ops, op)
				case r < 6:
					pick().ForceComplete()
				case r < 9:
					for range rng.IntN(4) {
						pick().ready.Store(true)
					}
					_, err := p.CheckAndComplete(rng.IntN(keys))
					require.NoError(t, err)
				default:
					canceled, err := p.CancelForKey(rng.IntN(keys))
					require.NoError(t, err)
					for _, op := range canceled {
						if rng.IntN(2) == 0 {
							op.ForceComplete()
						}
					}
				}
				checkInvariants(t, p, ops...)
				require.LessOrEqual(t, p.stale.Load(), int64(interval), "step %d: stale entries past the interval", step)
				require.LessOrEqual(t, p.queued.Load(), int64(interval), "step %d: queued operations past the interval", step)
				if t.Failed() {
					t.FailNow()
				}
			}
			for _, op := range ops {
				op.ForceComplete()
			}
			checkInvariants(t, p, ops...)
			for k := range keys {
				_, err := p.CheckAndComplete(k)
				require.NoError(t, err)
			}
			assert.Zero(t, p.Watched())
			assert.Zero(t, p.NumDelayed())
			for i, op := range ops {
				assert.Equal(t, int32(1), op.completes.Load(), "op %d", i)
			}
		})
	}
}

// TestPurgeQueueStaysBounded completes operations of a single key through
// CheckAndComplete, which removes their entries itself: the stale count
// never passes the interval, so the queue of completed operations must
// trigger the purge by its own length.
func TestPurgeQueueStaysBounded(t *testing.T) {
	const interval = 10
	p := newP[int](t, WithPurgeInterval(interval))
	most := int64(0)
	for range 1000 {
		op := newOp(time.Hour)
		_, err := p.TryCompleteElseWatch(op, 1)
		require.NoError(t, err)
		op.ready.Store(true)
		n, err := p.CheckAndComplete(1)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		most = max(most, p.queued.Load())
	}
	assert.LessOrEqual(t, most, int64(interval))
	assert.Positive(t, most, "nothing was queued: the test tests nothing")
	assert.Zero(t, p.Watched())
	checkInvariants(t, p)
}

// TestPurgeRemovesOnlyStaleEntries: a purge among many waiting operations
// leaves them all in place, in lists whose refs still agree.
func TestPurgeRemovesOnlyStaleEntries(t *testing.T) {
	p := newP[int](t, WithPurgeInterval(5))
	var waiting, done []*testOp
	for i := range 300 {
		op := newOp(time.Hour)
		_, err := p.TryCompleteElseWatch(op, 1, 2, 3, i%7+10)
		require.NoError(t, err)
		if i%3 == 0 {
			done = append(done, op)
		} else {
			waiting = append(waiting, op)
		}
	}
	for _, op := range done {
		require.True(t, op.ForceComplete())
	}
	checkInvariants(t, p, append(waiting, done...)...)
	assert.LessOrEqual(t, p.Watched(), 4*len(waiting)+5)
	for _, op := range waiting {
		assert.Equal(t, 4, refs(&op.Op), "a waiting operation lost an entry")
	}
	for _, k := range []int{1, 2, 3} {
		n, _ := listLen(p, k)
		assert.GreaterOrEqual(t, n, len(waiting))
	}
}

// TestPurgeAfterCompletionsDuringAPurge: completions that find a purge
// running skip their own, and the running purge took the queue before they
// joined it: it looks again when it ends. It did not, and their stale
// entries stayed past the purge interval until some later completion, which
// may never come.
func TestPurgeAfterCompletionsDuringAPurge(t *testing.T) {
	p := newP[string](t, WithAfterFunc(func(time.Duration, func()) Timer { return new(handTimer) }), WithPurgeInterval(0))
	// Live operations, so that the purge visits the queued operations'
	// entries rather than scanning every list.
	const live = 40
	for range live {
		_, err := p.TryCompleteElseWatch(newOp(time.Hour), "live")
		require.NoError(t, err)
	}
	first := newOp(time.Hour)
	_, err := p.TryCompleteElseWatch(first, "a")
	require.NoError(t, err)
	var during []*testOp
	for i := range 10 {
		op := newOp(time.Hour)
		_, err := p.TryCompleteElseWatch(op, fmt.Sprint("b", i))
		require.NoError(t, err)
		during = append(during, op)
	}
	// The first completion's purge takes the queue, then waits for the
	// lock of "a"'s shard, held here. It runs no user code to hook: the
	// test polls its state.
	sh := p.shardOf("a")
	sh.mu.Lock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.True(t, first.ForceComplete())
	}()
	for !p.purging.Load() || p.Stats().Completed != 1 || p.queued.Load() != 0 {
		runtime.Gosched()
	}
	for _, op := range during {
		assert.True(t, op.ForceComplete()) // finds the purge running
	}
	sh.mu.Unlock()
	testwait.Recv(t, done, "the first completion and its purge")
	assert.Equal(t, live, p.Watched(), "stale entries left with no purge to come")
	checkInvariants(t, p)
}
