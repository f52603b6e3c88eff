package twprom

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// record counts d in h, in the bucket the Histogram's doc gives it.
func record(h *timingwheel.Histogram, d time.Duration) {
	i := 0
	for timingwheel.BucketBound(i) < d {
		i++
	}
	h.Counts[i]++
}

func TestHistogramBuckets(t *testing.T) {
	var h timingwheel.Histogram
	record(&h, 100*time.Nanosecond)        // bucket 0, exported
	record(&h, timingwheel.BucketBound(1)) // 1.152µs: not exported, counts at 1.536µs
	record(&h, timingwheel.BucketBound(1)) //
	record(&h, 2*time.Microsecond)         // 2.048µs, exported
	record(&h, 3*time.Minute)              // beyond the last bound
	count, sum, buckets := histogram(&h)
	assert.Equal(t, uint64(5), count)
	assert.Len(t, buckets, 55, "two bounds per doubling, 27 doublings, and 1.024µs")
	bound := func(i int) float64 { return timingwheel.BucketBound(i).Seconds() }
	assert.Equal(t, 1.024e-6, bound(0))
	assert.Equal(t, 1.536e-6, bound(4))
	assert.Equal(t, 2.048e-6, bound(8))
	assert.Equal(t, uint64(1), buckets[bound(0)])
	assert.Equal(t, uint64(3), buckets[bound(4)])
	assert.Equal(t, uint64(4), buckets[bound(8)])
	last := timingwheel.NumBuckets - 2
	assert.Equal(t, (1<<37)*time.Nanosecond, timingwheel.BucketBound(last))
	assert.Equal(t, uint64(4), buckets[bound(last)], "the last finite bound")
	for b := range buckets {
		assert.False(t, math.IsInf(b, 0), "+Inf is implied")
	}
	want := bound(0)/2 + 2*(bound(0)+bound(1))/2 + (bound(7)+bound(8))/2 + bound(last)
	assert.InDelta(t, want, sum, 1e-12)
}

// TestHistogramSum: the estimated sum is within 6.25% of the true one.
func TestHistogramSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		var h timingwheel.Histogram
		var truth float64
		for range 1 + rng.IntN(1000) {
			// Log-uniform from 1.024µs to 2^37ns.
			d := time.Duration(math.Exp2(10 + 27*rng.Float64()))
			record(&h, d)
			truth += d.Seconds()
		}
		_, sum, _ := histogram(&h)
		require.InEpsilon(t, truth, sum, 1.0/16)
	}
}
