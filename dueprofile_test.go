package timingwheel

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDueProfile arms timers on four levels and checks the profile: exact
// while nothing is stopped, exact again for a bucket emptied by stops, and
// shared out by the placed counters, as its doc says, for a bucket half
// stopped.
func TestDueProfile(t *testing.T) {
	fc := newFakeClock()
	// One shard, so that the shares below are those of one count.
	procs := runtime.GOMAXPROCS(1)
	st := newManual(t, fc)
	runtime.GOMAXPROCS(procs)
	defer st.Stop()
	require.Len(t, st.shards, 1)
	bounds := []time.Duration{10 * time.Millisecond, time.Second, 5 * time.Second, 5 * time.Minute, 15 * time.Minute, 2 * time.Hour, 4 * time.Hour}
	groups := []struct {
		d   time.Duration
		n   int
		bin int
	}{
		{5 * time.Millisecond, 10, 0}, // level 0
		{2 * time.Second, 20, 2},      // level 1: a bucket of 512ms
		{10 * time.Minute, 30, 4},     // level 2: 4m22s, from 8m44s
		{3 * time.Hour, 40, 6},        // level 2: from 2h59m2s
	}
	tms := make([][]*Timer, len(groups))
	want := make([]float64, len(bounds)+1)
	for g, gr := range groups {
		for range gr.n {
			tm, err := st.AfterFunc(gr.d, func() {})
			require.NoError(t, err)
			tms[g] = append(tms[g], tm)
		}
		want[gr.bin] = float64(gr.n)
	}
	check := func(what string, want []float64) {
		t.Helper()
		p := st.DueProfile(bounds)
		require.Len(t, p.Shards, len(st.shards), what)
		sum := 0
		for _, n := range p.Shards {
			sum += n
		}
		require.Equal(t, st.Len(), sum, what)
		require.Len(t, p.Due, len(want), what)
		for i := range want {
			assert.InDelta(t, want[i], p.Due[i], 1e-9, "%s: bin %d of %v", what, i, p.Due)
		}
	}
	check("armed", want)

	for _, tm := range tms[3] {
		require.True(t, tm.Stop())
	}
	want[6] = 0
	check("a bucket emptied", want) // no longer counted: its lists are empty

	for _, tm := range tms[2][:15] {
		require.True(t, tm.Stop())
	}
	// 45 pending, 60 placed in the buckets that hold timers: each bucket
	// gets 3/4 of its placed count.
	check("half a bucket stopped", []float64{7.5, 0, 15, 0, 22.5, 0, 0, 0})

	fc.Add(6 * time.Millisecond)
	st.step() // the 5ms timers fire; their bucket is empty and not queued
	check("fired", []float64{0, 0, 20 * 35.0 / 50, 0, 30 * 35.0 / 50, 0, 0, 0})

	// The same level-0 bucket, a turn later (due at tick 517, once the
	// wheel time is past 5), counts from zero again.
	_, err := st.AfterFunc(time.Millisecond, func() {})
	require.NoError(t, err)
	fc.Add(2 * time.Millisecond)
	st.step() // the wheel time is 7
	for range 4 {
		_, err := st.AfterFunc(509*time.Millisecond, func() {})
		require.NoError(t, err)
	}
	check("refilled", []float64{0, 4 * 39.0 / 54, 20 * 39.0 / 54, 0, 30 * 39.0 / 54, 0, 0, 0})

	assert.PanicsWithValue(t, "timingwheel: DueProfile: bounds not increasing", func() {
		st.DueProfile([]time.Duration{time.Second, time.Second})
	})
}

// TestDueProfileLevels checks, for delays on every level and a wheel size
// that is not a power of two, that the whole count of one timer falls
// within a bucket's width of its delay.
func TestDueProfileLevels(t *testing.T) {
	for _, size := range []int{512, 10} {
		for _, d := range []time.Duration{3 * time.Millisecond, 700 * time.Millisecond, 90 * time.Second, 3 * time.Hour, 40 * 24 * time.Hour} {
			t.Run(fmt.Sprintf("size=%d/d=%v", size, d), func(t *testing.T) {
				fc := newFakeClock()
				st := newManual(t, fc, WithWheelSize(size))
				defer st.Stop()
				fc.Add(1234567 * time.Microsecond) // wheel time not at a turn's start
				st.step()
				_, err := st.AfterFunc(d, func() {})
				require.NoError(t, err)
				// Bounds a tick apart around d: the timer's count lies in
				// [d, d + the width of the bucket it is in).
				var width time.Duration
				for i := range st.shards {
					sh := &st.shards[i]
					sh.mu.Lock()
					sh.drain(st.now())
					sh.mu.Unlock()
					for _, lv := range sh.levels {
						lv.eachBucket(func(_ int, b *bucket) {
							if !b.root.empty() {
								width = time.Duration(lv.tick) * time.Millisecond
							}
						})
					}
				}
				require.NotZero(t, width)
				p := st.DueProfile([]time.Duration{d - time.Millisecond, d + width})
				assert.InDelta(t, 0, p.Due[0], 1e-9, "%v", p.Due)
				assert.InDelta(t, 1, p.Due[1], 1e-9, "%v", p.Due)
				assert.InDelta(t, 0, p.Due[2], 1e-9, "%v", p.Due)
			})
		}
	}
}

func TestSpread(t *testing.T) {
	bounds := []time.Duration{10, 20, 40}
	for _, c := range []struct {
		from, to time.Duration
		want     []float64
	}{
		{-5, -1, []float64{4, 0, 0, 0}},
		{0, 10, []float64{4, 0, 0, 0}},
		{5, 15, []float64{2, 2, 0, 0}},
		{10, 30, []float64{0, 2, 2, 0}},
		{30, 50, []float64{0, 0, 2, 2}},
		{40, 50, []float64{0, 0, 0, 4}},
		{7, 7, []float64{4, 0, 0, 0}},
		{0, 80, []float64{0.5, 0.5, 1, 2}},
	} {
		t.Run(fmt.Sprintf("%d-%d", c.from, c.to), func(t *testing.T) {
			due := make([]float64, len(bounds)+1)
			spread(due, bounds, c.from, c.to, 4)
			assert.InDeltaSlice(t, c.want, due, 1e-9)
		})
	}
}

// BenchmarkDueProfile is one DueProfile of a SystemTimer holding n timers
// spread from a second to a day out, over three levels: it walks buckets,
// not timers, so its cost grows with the buckets in use, not with n.
func BenchmarkDueProfile(b *testing.B) {
	bounds := []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second, time.Minute, 10 * time.Minute, time.Hour, 24 * time.Hour}
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprint("pending=", n), func(b *testing.B) {
			st := mustNew(b)
			defer st.Stop()
			for i := range n {
				if _, err := st.AfterFunc(time.Second+time.Duration(i)*(24*time.Hour/time.Duration(n)), func() {}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				st.DueProfile(bounds)
			}
		})
	}
}
