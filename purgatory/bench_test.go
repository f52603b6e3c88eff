package purgatory

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// BenchmarkForceCompleted is the shape of the purgatory workload: each
// operation is watched under 3 keys and completed from outside by
// ForceComplete, so all its entries go stale and only the purge removes
// them. live operations wait at any time. With keys=spread each operation
// draws its keys out of 100; with keys=same every operation has the same
// 3, as in Kafka's TestPurgatoryPerformance, so three lists hold 3×live
// entries.
func BenchmarkForceCompleted(b *testing.B) {
	for _, c := range []struct {
		keys string
		live int
	}{{"spread", 1000}, {"spread", 10_000}, {"same", 1000}, {"same", 10_000}, {"same", 40_000}} {
		b.Run("keys="+c.keys+"/live="+strconv.Itoa(c.live), func(b *testing.B) {
			p := newP[int](b)
			rng := rand.New(rand.NewPCG(1, 2))
			ring := make([]*testOp, c.live)
			keys := []int{7, 42, 93}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if old := ring[i]; old != nil {
					old.ForceComplete()
				}
				op := newOp(time.Hour)
				if c.keys == "spread" {
					keys[0], keys[1], keys[2] = rng.IntN(100), rng.IntN(100), rng.IntN(100)
				}
				_, _ = p.TryCompleteElseWatch(op, keys...)
				ring[i] = op
				i = (i + 1) % c.live
			}
			b.StopTimer()
			b.ReportMetric(float64(p.Watched())/float64(c.live), "entries/live")
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
