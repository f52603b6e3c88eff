package timingwheel

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatsCounts drives each way into and out of the wheel and checks each
// total, and that Armed − Fired − Stopped is Pending throughout.
func TestStatsCounts(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc, WithMaxPending(100))
	defer st.Stop()
	balanced := func(what string) Stats {
		t.Helper()
		st.step()
		s := st.Stats()
		require.Equal(t, int64(s.Pending), int64(s.Armed)-int64(s.Fired)-int64(s.Stopped), "%s: %+v", what, s)
		require.Equal(t, st.Len(), s.Pending, what)
		return s
	}
	var tms []*Timer
	for i := range 10 {
		tm, err := st.AfterFunc(time.Duration(i+1)*time.Second, func() {})
		require.NoError(t, err)
		tms = append(tms, tm)
	}
	tms[1].Reset(200 * time.Millisecond) // in a level-0 bucket
	s := balanced("armed")
	assert.Equal(t, uint64(10), s.Armed)

	require.True(t, tms[0].Stop())
	require.True(t, tms[1].Reset(time.Hour))        // later: no lock, not counted yet
	require.True(t, tms[2].Reset(time.Millisecond)) // earlier: moved
	require.True(t, tms[3].Reset(0))                // runs now
	_, err := st.AfterFunc(0, func() {})            // runs at once
	require.NoError(t, err)
	s = balanced("stopped and reset")
	assert.Equal(t, uint64(1), s.Stopped)
	assert.Equal(t, uint64(2), s.Moved)
	assert.Equal(t, uint64(2), s.Fired)
	assert.Equal(t, uint64(11), s.Armed)

	fc.Add(2 * time.Millisecond)
	s = balanced("fired")
	assert.Equal(t, uint64(3), s.Fired)

	// tms[1], pushed back to an hour, was in the level-0 bucket of 200ms:
	// the driver finds it there, not due, and places it again.
	fc.Add(time.Second)
	s = balanced("postponed")
	assert.Equal(t, uint64(1), s.Postponed)
	assert.Equal(t, 7, s.Pending) // 5s..10s, and the hour
	fc.Add(time.Hour + time.Second)
	s = balanced("all fired")
	assert.Equal(t, 0, s.Pending)
	assert.Positive(t, s.Cascaded, "the hour timer came down from level 2")
	assert.Equal(t, 3, s.Levels)
	assert.GreaterOrEqual(t, s.Lag, time.Duration(0))

	// Refusals.
	for range 101 {
		if _, err := st.AfterFunc(time.Hour, func() {}); err != nil {
			require.ErrorIs(t, err, ErrTooManyPending)
		}
	}
	_, err = tms[0].TryReset(time.Hour)
	require.ErrorIs(t, err, ErrTooManyPending)
	s = balanced("rejected")
	assert.Equal(t, uint64(2), s.Rejected)

	// Stopped on the stack, with the stack drained later: counted then.
	fc2 := newFakeClock()
	st2 := newManual(t, fc2)
	defer st2.Stop()
	anchors := anchorShards(t, st2) // make every shard's wakeAt low
	st2.step()
	tm, err := st2.AfterFunc(time.Hour, func() {})
	require.NoError(t, err)
	require.Equal(t, stateQueued, stateOf(tm))
	require.True(t, tm.Stop())
	s = st2.Stats()
	assert.Equal(t, uint64(len(anchors)+1), s.Armed)
	assert.Equal(t, uint64(1), s.Stopped)
}

// TestStatsJSON: the snapshot reads as JSON a person can read.
func TestStatsJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		rng := rand.New(rand.NewPCG(1, 2))
		for range 100 {
			_, err := st.AfterFunc(time.Duration(rng.Int64N(int64(time.Second))), func() {})
			require.NoError(t, err)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		b, err := json.Marshal(st.Stats())
		require.NoError(t, err)
		js := string(b)
		for _, want := range []string{`"Fired":100`, `"Lag":"`, `"Lateness":{"count":100,`, `"p99":"`} {
			assert.True(t, strings.Contains(js, want), "%s lacks %s", js, want)
		}
	})
}

// TestHistogramBuckets: every bound falls in the bucket it closes, the
// next nanosecond in the next one, and quantiles read back the bounds.
func TestHistogramBuckets(t *testing.T) {
	for i := 0; i < NumBuckets-1; i++ {
		b := BucketBound(i)
		require.Equal(t, i, bucketOf(b), "bound %v", b)
		require.Equal(t, i+1, bucketOf(b+1), "bound %v + 1ns", b)
		if i > 0 {
			require.Less(t, BucketBound(i-1), b)
			require.LessOrEqual(t, float64(b-BucketBound(i-1))/float64(BucketBound(i-1)), 0.125, "bucket %d too wide", i)
		}
	}
	require.Equal(t, 0, bucketOf(-time.Second))
	require.Equal(t, NumBuckets-1, bucketOf(time.Hour))
	var h, o Histogram
	for _, d := range []time.Duration{time.Microsecond, time.Millisecond, time.Millisecond, 2 * time.Millisecond} {
		h.Record(d)
	}
	o.Record(time.Hour)
	h.Merge(&o)
	assert.Equal(t, uint64(5), h.Count())
	assert.Equal(t, BucketBound(bucketOf(time.Millisecond)), h.Quantile(0.5))
	assert.Equal(t, BucketBound(NumBuckets-1), h.Quantile(1))
	assert.Equal(t, time.Duration(0), (&Histogram{}).Quantile(0.5))
}

// TestStatsExecutor: the lateness of every callback, within a tick under
// synctest; panics; the backlog and the goroutines started for callbacks
// that block, and gone once they return.
func TestStatsExecutor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithWorkers(2), WithPanicHandler(func(any) {}))
		defer st.Stop()
		for i := range 50 {
			_, err := st.AfterFunc(time.Duration(i)*time.Millisecond+time.Millisecond/3, func() {})
			require.NoError(t, err)
		}
		_, err := st.AfterFunc(time.Second, func() { panic("boom") })
		require.NoError(t, err)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		s := st.Stats()
		assert.Equal(t, uint64(51), s.Fired)
		assert.Equal(t, s.Fired, s.Lateness.Count())
		assert.LessOrEqual(t, s.Lateness.Quantile(1), BucketBound(bucketOf(time.Millisecond)), "later than a tick under synctest")
		assert.Equal(t, uint64(1), s.Panics)
		assert.Equal(t, 2, s.Workers)
		assert.Zero(t, s.Backlog)
		assert.Zero(t, s.Helpers)

		// Callbacks that block: the backlog waits, then goroutines are
		// started for it beyond the workers.
		release := make(chan struct{})
		for range 6 {
			_, err := st.AfterFunc(time.Millisecond, func() { <-release })
			require.NoError(t, err)
		}
		time.Sleep(3 * time.Millisecond) // due, then the stall delay
		synctest.Wait()
		s = st.Stats()
		assert.Positive(t, s.Helpers, "no goroutine started for blocked callbacks: %+v", s)
		assert.Zero(t, s.Backlog, "every blocked callback started")
		close(release)
		synctest.Wait()
		s = st.Stats()
		assert.Zero(t, s.Helpers)
		assert.Equal(t, uint64(57), s.Lateness.Count())
	})
}
