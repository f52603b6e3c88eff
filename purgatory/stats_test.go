package purgatory

import (
	"encoding/json"
	"math"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatsCounts ends operations each way and checks every figure after
// each: an operation completed at its first try is not counted, one
// completed later is, whichever way, and an expiry counts with its lateness.
func TestStatsCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP[string](t, WithPurgeInterval(0)) // purge on every completion
		var want Stats
		check := func(what string) {
			t.Helper()
			synctest.Wait()
			got := p.Stats()
			assert.Equal(t, want.Delayed, got.Delayed, "%s: Delayed", what)
			assert.Equal(t, want.Watched, got.Watched, "%s: Watched", what)
			assert.Equal(t, want.Completed, got.Completed, "%s: Completed", what)
			assert.Equal(t, want.Expired, got.Expired, "%s: Expired", what)
			assert.Equal(t, want.Purged, got.Purged, "%s: Purged", what)
			assert.Equal(t, want.Expired, got.Lateness.Count(), "%s: Lateness.Count", what)
			checkInvariants(t, p)
		}
		check("new")

		at := newOp(time.Second)
		at.ready.Store(true)
		done, err := p.TryCompleteElseWatch(at, "a")
		require.NoError(t, err)
		require.True(t, done)
		check("completed at the first try")

		byCheck := newOp(time.Second)
		_, err = p.TryCompleteElseWatch(byCheck, "a", "b")
		require.NoError(t, err)
		want.Delayed, want.Watched = 1, 2
		check("watched under two keys")
		byCheck.ready.Store(true)
		n, err := p.CheckAndComplete("a")
		require.NoError(t, err)
		require.Equal(t, 1, n)
		want.Delayed, want.Watched, want.Completed, want.Purged = 0, 0, 1, 2
		check("completed by CheckAndComplete")

		forced := newOp(time.Second)
		_, err = p.TryCompleteElseWatch(forced, "a")
		require.NoError(t, err)
		require.True(t, forced.ForceComplete())
		want.Completed, want.Purged = 2, 3
		check("completed by ForceComplete")

		canceled := newOp(time.Second)
		_, err = p.TryCompleteElseWatch(canceled, "c")
		require.NoError(t, err)
		ops, err := p.CancelForKey("c")
		require.NoError(t, err)
		require.Len(t, ops, 1)
		check("canceled: neither delayed nor watched")
		require.True(t, canceled.ForceComplete())
		want.Completed = 3
		check("canceled, then completed by ForceComplete")

		expiring := newOp(10 * time.Millisecond)
		_, err = p.TryCompleteElseWatch(expiring, "a", "b")
		require.NoError(t, err)
		want.Delayed, want.Watched = 1, 2
		check("waiting to expire")
		time.Sleep(11 * time.Millisecond)
		want.Delayed, want.Watched, want.Completed, want.Expired, want.Purged = 0, 0, 4, 1, 5
		check("expired")
		require.Equal(t, int32(1), expiring.expirations.Load())
		// In the bubble no time passes while goroutines run: the timer
		// fires at its deadline rounded up to the 1ms tick.
		s := p.Stats()
		assert.LessOrEqual(t, s.Lateness.Quantile(1), time.Millisecond+time.Millisecond/8)
	})
}

// TestStatsLateness measures the lateness of expiries made late on purpose:
// the timer runs each expiry 50ms after the operation's deadline.
func TestStatsLateness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const late = 50 * time.Millisecond
		p := newP[int](t, WithAfterFunc(func(d time.Duration, f func()) Timer {
			return time.AfterFunc(d+late, f)
		}))
		for i := range 3 {
			_, err := p.TryCompleteElseWatch(newOp(time.Duration(i)*time.Second), i)
			require.NoError(t, err)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		s := p.Stats()
		assert.Equal(t, uint64(3), s.Expired)
		assert.Equal(t, uint64(3), s.Lateness.Counts[bucketOf(late)], "lateness %v", &s.Lateness)
		assert.Equal(t, timingwheel.BucketBound(bucketOf(late)), s.Lateness.Quantile(0.5))
		assert.Greater(t, s.Lateness.Quantile(0.5), late-late/8)
	})
}

// TestStatsCompletedWhileWatching: an operation that another goroutine
// completes while TryCompleteElseWatch watches it, after its first key, is
// counted once, by TryCompleteElseWatch.
func TestStatsCompletedWhileWatching(t *testing.T) {
	p := newP[int](t)
	// Two keys in different shards; holding the second's lock stops
	// TryCompleteElseWatch after it has watched op under the first.
	k1, k2 := 0, 1
	for p.shardOf(k2) == p.shardOf(k1) {
		k2++
	}
	op := newOp(time.Hour)
	sh := p.shardOf(k2)
	sh.mu.Lock()
	returned := make(chan bool)
	go func() {
		done, err := p.TryCompleteElseWatch(op, k1, k2)
		assert.NoError(t, err)
		returned <- done
	}()
	for refs(&op.Op) == 0 { // watched under k1; waiting for k2's lock
		runtime.Gosched()
	}
	require.True(t, op.ForceComplete())
	assert.Zero(t, p.Stats().Completed, "counted before TryCompleteElseWatch is done watching")
	sh.mu.Unlock()
	assert.False(t, <-returned)
	s := p.Stats()
	assert.Equal(t, uint64(1), s.Completed)
	assert.Zero(t, s.Delayed, "the timeout of a completed operation was armed")
	assert.Zero(t, s.Watched)
	checkInvariants(t, p, op)
}

func TestStatsBucketOf(t *testing.T) {
	for i := range timingwheel.NumBuckets - 1 {
		b := timingwheel.BucketBound(i)
		require.Equal(t, i, bucketOf(b), "bound %v", b)
		require.Equal(t, i+1, bucketOf(b+1), "bound %v + 1ns", b)
	}
	assert.Equal(t, 0, bucketOf(0))
	assert.Equal(t, 0, bucketOf(-time.Hour))
	assert.Equal(t, timingwheel.NumBuckets-1, bucketOf(math.MaxInt64))
}

// TestStatsJSON: the lateness reads as quantiles and buckets, not as an
// array of counts.
func TestStatsJSON(t *testing.T) {
	var s Stats
	s.Delayed, s.Watched, s.Completed, s.Expired, s.Purged = 1, 2, 3, 2, 4
	s.Lateness.Counts[bucketOf(time.Millisecond)] = 2
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var got struct {
		Delayed, Watched           int
		Completed, Expired, Purged uint64
		Lateness                   struct {
			Count   uint64
			P99     string
			Buckets []struct {
				Le    string
				Count uint64
			}
		}
	}
	require.NoError(t, json.Unmarshal(b, &got), "%s", b)
	assert.Equal(t, 1, got.Delayed)
	assert.Equal(t, 2, got.Watched)
	assert.Equal(t, uint64(3), got.Completed)
	assert.Equal(t, uint64(2), got.Expired)
	assert.Equal(t, uint64(4), got.Purged)
	assert.Equal(t, uint64(2), got.Lateness.Count, "%s", b)
	le := timingwheel.BucketBound(bucketOf(time.Millisecond)).String() // 1.048576ms
	assert.Equal(t, le, got.Lateness.P99)
	require.Len(t, got.Lateness.Buckets, 1)
	assert.Equal(t, le, got.Lateness.Buckets[0].Le)
}

// bucketOf returns the bucket of a timingwheel.Histogram that counts d.
func bucketOf(d time.Duration) int {
	var h timingwheel.Histogram
	h.Record(d)
	for i, c := range h.Counts {
		if c > 0 {
			return i
		}
	}
	return -1
}
