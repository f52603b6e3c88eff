package purgatory

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// BenchmarkForceCompleted is the shape of the purgatory workload: each
// operation is watched under 3 of 100 keys and completed from outside by
// ForceComplete, so all its entries go stale and only the purge removes
// them. live operations wait at any time.
func BenchmarkForceCompleted(b *testing.B) {
	for _, live := range []int{1000, 10_000} {
		b.Run("live="+strconv.Itoa(live), func(b *testing.B) {
			p := newP[int](b)
			rng := rand.New(rand.NewPCG(1, 2))
			ring := make([]*testOp, live)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if old := ring[i]; old != nil {
					old.ForceComplete()
				}
				op := newOp(time.Hour)
				_, _ = p.TryCompleteElseWatch(op, rng.IntN(100), rng.IntN(100), rng.IntN(100))
				ring[i] = op
				i = (i + 1) % live
			}
			b.StopTimer()
			b.ReportMetric(float64(p.Watched())/float64(live), "entries/live")
		})
	}
}

// BenchmarkCheckAndComplete: a key with n watched operations of which one
// completes per check, as with a fetch per partition and a check per append.
func BenchmarkCheckAndComplete(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run("watched="+strconv.Itoa(n), func(b *testing.B) {
			p := newP[int](b)
			for range n - 1 {
				_, _ = p.TryCompleteElseWatch(newOp(time.Hour), 1)
			}
			b.ReportAllocs()
			for b.Loop() {
				op := newOp(time.Hour)
				_, _ = p.TryCompleteElseWatch(op, 1)
				op.ready.Store(true)
				_, _ = p.CheckAndComplete(1)
			}
		})
	}
}
