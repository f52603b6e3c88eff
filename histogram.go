package timingwheel

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"sync/atomic"
	"time"
)

// A Histogram counts durations in fixed buckets on a log scale: one bucket
// under 1.024µs, then eight buckets per doubling from 1.024µs to 2^37ns
// (about 2m17s), each an eighth of a doubling wide (so a quantile read from
// it is within 9% of the true value), then one bucket for the rest.
// Negative durations count in the first bucket. The bounds are the same for
// every Histogram, so histograms of several SystemTimers, or of one over
// time, add up with [Histogram.Merge]. The zero Histogram is empty.
type Histogram struct {
	// Counts[i] counts durations d with Bound(i-1) < d <= Bound(i),
	// Bound(-1) being -∞ and Bound(NumBuckets-1) +∞.
	Counts [NumBuckets]uint64
}

const (
	histMinShift = 10 // the first bound: 2^10 ns = 1.024µs
	histMaxShift = 37 // the last doubling ends at 2^37 ns ≈ 2m17s
	histSub      = 8  // buckets per doubling; a power of two
	histSubBits  = 3

	// NumBuckets is the number of buckets of a Histogram.
	NumBuckets = (histMaxShift-histMinShift)*histSub + 2
)

// BucketBound returns the upper bound of bucket i of every Histogram; the
// last bucket has none, and its bound is the largest Duration.
func BucketBound(i int) time.Duration {
	switch {
	case i <= 0:
		return 1 << histMinShift
	case i >= NumBuckets-1:
		return 1<<63 - 1
	}
	i--
	shift := histMinShift + i/histSub
	return time.Duration(1)<<shift + time.Duration(i%histSub+1)<<(shift-histSubBits)
}

// bucketOf returns the bucket that counts d.
func bucketOf(d time.Duration) int {
	if d <= 1<<histMinShift {
		return 0
	}
	v := uint64(d - 1) // so that each bound falls in the bucket it closes
	shift := bits.Len64(v) - 1
	if shift >= histMaxShift {
		return NumBuckets - 1
	}
	sub := int(v>>(shift-histSubBits)) & (histSub - 1)
	return 1 + (shift-histMinShift)*histSub + sub
}

// Record counts d in h.
func (h *Histogram) Record(d time.Duration) { h.Counts[bucketOf(d)]++ }

// Count returns how many durations h has counted.
func (h *Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Merge adds the counts of o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
}

// Quantile returns the upper bound of the bucket that holds the q-quantile
// (0 <= q <= 1) of the counted durations: a value no smaller than the true
// quantile, and at most 12.5% above it in the range the buckets cover. It
// returns 0 for an empty Histogram.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.Count()
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n) + 0.5)
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.Counts {
		if seen += c; seen >= rank {
			return BucketBound(i)
		}
	}
	return BucketBound(NumBuckets - 1)
}

// MarshalJSON writes h as a person reads it: the count, a few quantiles,
// and the buckets that counted anything, by upper bound.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	type bucket struct {
		Le    string `json:"le"`
		Count uint64 `json:"count"`
	}
	out := struct {
		Count   uint64   `json:"count"`
		P50     string   `json:"p50"`
		P99     string   `json:"p99"`
		P999    string   `json:"p999"`
		Max     string   `json:"max"`
		Buckets []bucket `json:"buckets"`
	}{Count: h.Count(), Buckets: []bucket{}}
	out.P50, out.P99, out.P999, out.Max = h.Quantile(0.5).String(), h.Quantile(0.99).String(), h.Quantile(0.999).String(), h.Quantile(1).String()
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		le := "+Inf"
		if i < NumBuckets-1 {
			le = BucketBound(i).String()
		}
		out.Buckets = append(out.Buckets, bucket{le, c})
	}
	return json.Marshal(out)
}

// String formats h's count and quantiles on one line.
func (h Histogram) String() string {
	if h.Count() == 0 {
		return "empty"
	}
	return fmt.Sprintf("n=%s p50=%v p99=%v p99.9=%v max=%v", strconv.FormatUint(h.Count(), 10),
		h.Quantile(0.5), h.Quantile(0.99), h.Quantile(0.999), h.Quantile(1))
}

// atomicHistogram is a Histogram one goroutine records into while others
// read it.
type atomicHistogram struct {
	counts [NumBuckets]atomic.Uint64
}

// addTo adds a's counts to h.
func (a *atomicHistogram) addTo(h *Histogram) {
	for i := range a.counts {
		h.Counts[i] += a.counts[i].Load()
	}
}
