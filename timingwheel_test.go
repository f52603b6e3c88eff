package timingwheel

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-timingwheel/timingwheel/internal/defaulttimer"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The invariant checker walks every timer after each expiry: on for
	// the tests, off when benchmarks run, which it would time (a storm of
	// a million timers took minutes with it).
	flag.Parse()
	noBench := flag.Lookup("test.bench").Value.String() == ""
	debugChecks = noBench
	// The executor's guess that a worker which looks stuck is only
	// descheduled reads the process's runnable goroutines, which the
	// runtime's and other tests' goroutines move: in a synctest bubble it
	// made TestBlockedCallbacksDueTogetherAllStart's exact bound fail 1 run
	// in 30. The executor's own tests check that rule (TestSpawnsWhenBusy);
	// benchmarks (the storm) keep it.
	if noBench {
		executorBusy = func() bool { return false }
	}
	// The default SystemTimer, which the package-level functions make on
	// first use, never stops in a program: stop it after the tests, so
	// that goleak reports only the goroutines something else left.
	goleak.VerifyTestMain(defaulttimer.Main(m))
}

func mustNew(t testing.TB, opts ...Option) *SystemTimer {
	t.Helper()
	st, err := New(opts...)
	require.NoError(t, err)
	return st
}

// wheelGoroutines counts the goroutines, other than the caller, that run a
// driver or an executor. Called in a synctest bubble right after Stop, it
// checks that Stop waited for them: it first lets the bubble settle, since
// a goroutine that has told Stop it is done may still be returning from its
// function (the count would be flaky), while one still blocked stays, and
// counts.
func wheelGoroutines() int {
	synctest.Wait()
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	gs := strings.Split(string(buf), "\n\n")
	// Only the caller's bubble: the default SystemTimer, made outside
	// by an earlier test, runs a driver and executors too.
	bubble := synctestBubble.FindString(gs[0])
	n := 0
	for _, g := range gs[1:] {
		if bubble != "" && synctestBubble.FindString(g) != bubble {
			continue
		}
		if strings.Contains(g, "timingwheel.(*shard).drive") || strings.Contains(g, "internal/executor.(*Pool") {
			n++
		}
	}
	return n
}

// synctestBubble finds the bubble a goroutine of a stack dump is in.
var synctestBubble = regexp.MustCompile(`synctest bubble \d+\]`)

// fakeClock is a clock for the manual harness: only Now is used there.
type fakeClock struct {
	clock.Clock // nil: any other method panics
	mu          sync.Mutex
	now         time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newManual returns a SystemTimer with no goroutines: st.step() expires what
// is due by the fake clock and runs the callbacks on the caller.
func newManual(t testing.TB, fc *fakeClock, opts ...Option) *SystemTimer {
	t.Helper()
	return mustNew(t, append([]Option{WithClock(fc), withManual()}, opts...)...)
}

// ---- integer and level arithmetic ----

func TestIntegerHelpers(t *testing.T) {
	for _, c := range []struct{ a, b, floor, ceil, mod int64 }{
		{0, 5, 0, 0, 0},
		{1, 5, 0, 1, 1},
		{4, 5, 0, 1, 4},
		{5, 5, 1, 1, 0},
		{6, 5, 1, 2, 1},
		{-1, 5, -1, 0, 4},
		{-5, 5, -1, -1, 0},
		{-6, 5, -2, -1, 4},
		{math.MaxInt64, 1_000_000, math.MaxInt64 / 1_000_000, math.MaxInt64/1_000_000 + 1, math.MaxInt64 % 1_000_000},
		{math.MinInt64, 1_000_000, math.MinInt64/1_000_000 - 1, math.MinInt64 / 1_000_000, 1_000_000 + math.MinInt64%1_000_000},
	} {
		t.Run(fmt.Sprintf("%d/%d", c.a, c.b), func(t *testing.T) {
			assert.Equal(t, c.floor, floorDiv(c.a, c.b), "floorDiv")
			assert.Equal(t, c.ceil, ceilDiv(c.a, c.b), "ceilDiv")
			assert.Equal(t, c.mod, floorMod(c.a, c.b), "floorMod")
		})
	}
	assert.Equal(t, int64(math.MaxInt64), satAdd(math.MaxInt64-1, 2))
	assert.Equal(t, int64(math.MinInt64), satAdd(math.MinInt64+1, -2))
	assert.Equal(t, int64(7), satAdd(3, 4))
	assert.Equal(t, int64(math.MaxInt64), satMul(math.MaxInt64/2+1, 2))
	assert.Equal(t, int64(math.MinInt64), satMul(math.MinInt64/2-1, 2))
	assert.Equal(t, int64(-12), satMul(-3, 4))
}

// TestPlaceExhaustive checks, for small wheels and every wheel time and due
// tick in a range, that place picks the lowest level whose window holds the
// tick, the bucket of the tick's turn of that level, and queues the bucket
// no later than the tick; the deadlines are at the ends of their ticks, and
// placed by their ticks (not exact: see place).
func TestPlaceExhaustive(t *testing.T) {
	for _, n := range []int{2, 3, 4, 7, 8, 10} {
		t.Run(fmt.Sprintf("size=%d", n), func(t *testing.T) {
			fc := newFakeClock()
			st := newManual(t, fc, WithWheelSize(n), WithTick(time.Millisecond))
			defer st.Stop()
			sh := &st.shards[0]
			base := sh.c0
			for c0 := base; c0 < base+int64(n*n+3); c0++ {
				sh.advance(c0)
				for d := c0 + 1; d < c0+int64(n*n*n+2); d++ {
					tm := &Timer{sh: sh}
					ms := int64(time.Millisecond)
					tm.w.Store(pack(st.toValue(d*ms), statePending))
					require.False(t, sh.place(tm, st.toValue(d*ms), c0*ms, false))

					// Reference: the lowest k with d - cur_k < n^(k+1).
					k, tick := 0, int64(1)
					for {
						cur := c0 - floorMod(c0, tick)
						if d-cur < tick*int64(n) {
							break
						}
						k++
						tick *= int64(n)
					}
					lv := sh.levels[k]
					b := sh.bucket(lv, floorMod(floorDiv(d, tick), int64(n)))
					require.True(t, b.root.holds(tm), "c0=%d d=%d: not in level %d bucket", c0, d, k)
					require.LessOrEqual(t, b.queued, d*ms, "c0=%d d=%d: bucket queued after the tick", c0, d)
					require.Greater(t, b.queued, c0*ms, "c0=%d d=%d: bucket queued at or before the wheel time", c0, d)
					tm.unlink()
					b.queued = notQueued
				}
			}
			// Nothing is left behind; the delay queue holds stale refs only.
			require.NoError(t, sh.checkInvariants())
		})
	}
}

// TestLevelWindowsDistinct checks that within one level's window every due
// tick maps to its own bucket, for every wheel time: two timers of different
// turns of the wheel never share a bucket.
func TestLevelWindowsDistinct(t *testing.T) {
	for _, n := range []int64{2, 3, 5, 8} {
		for k, tick := 0, int64(1); k < 4; k, tick = k+1, tick*n {
			for c0 := int64(-50); c0 < 50; c0++ {
				cur := c0 - floorMod(c0, tick)
				seen := map[int64]int64{}
				for d := max(c0+1, cur); d < cur+tick*n; d++ {
					vid := floorDiv(d, tick)
					slot := floorMod(vid, n)
					if other, ok := seen[slot]; ok && other != vid {
						t.Fatalf("n=%d level %d c0=%d: ticks of turns %d and %d share slot %d", n, k, c0, other, vid, slot)
					}
					seen[slot] = vid
				}
			}
		}
	}
}

// TestDocLevelReach checks the reach of the levels doc.go gives against the levels
// New makes with the defaults.
func TestDocLevelReach(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	sh := &st.shards[0]
	for len(sh.levels) < 5 {
		sh.addLevel()
	}
	require.Greater(t, sh.levels[4].span, int64(math.MaxInt64)/st.tick, "level 4 should reach past the largest Duration")
	var reach []string
	for _, lv := range sh.levels[:4] {
		reach = append(reach, fmtSpan(time.Duration(lv.span*st.tick)))
	}
	// The doc's sentence, its comment lines joined.
	text := strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "\n//", " ")), " ")
	want := fmt.Sprintf("levels 0 to 3 reach %s, %s, %s and %s, and level 4 past the largest", reach[0], reach[1], reach[2], reach[3])
	require.Contains(t, text, want, "doc.go, Design")
}

func fmtSpan(d time.Duration) string {
	if d >= 100*24*time.Hour {
		return fmt.Sprintf("%d days", int64(d/(24*time.Hour)))
	}
	return d.String()
}

// ---- 1. never early, at most one tick late ----

// interestingDelays returns delays around tick and every level's reach, up to
// limit.
func interestingDelays(tick time.Duration, size int, limit time.Duration) []time.Duration {
	ds := []time.Duration{1, tick - 1, tick, tick + 1, 2*tick - 1, 2 * tick}
	for span := tick * time.Duration(size); span > 0 && span <= limit; span *= time.Duration(size) {
		ds = append(ds, span-tick, span-1, span, span+1, span+tick, span+span/2)
	}
	ds = append(ds, limit)
	ds = slices.DeleteFunc(ds, func(d time.Duration) bool { return d <= 0 })
	slices.Sort(ds)
	return slices.Compact(ds)
}

func TestNeverEarlyAtMostOneTickLate(t *testing.T) {
	for _, c := range []struct {
		tick time.Duration
		size int
	}{
		{time.Millisecond, defaultWheelSize},
		{time.Millisecond, 2},
		{time.Millisecond, 3},
		{10 * time.Millisecond, 8},
		{7 * time.Microsecond, 64},
	} {
		t.Run(fmt.Sprintf("tick=%v/size=%d", c.tick, c.size), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := mustNew(t, WithTick(c.tick), WithWheelSize(c.size))
				defer st.Stop()
				// Start off the tick grid so that rounding matters.
				time.Sleep(c.tick / 3)
				delays := interestingDelays(c.tick, c.size, 90*24*time.Hour)
				type result struct {
					d, late time.Duration
				}
				results := make(chan result, len(delays))
				for _, d := range delays {
					deadline := time.Now().Add(d)
					_, err := st.AfterFunc(d, func() { results <- result{d, time.Since(deadline)} })
					require.NoError(t, err)
				}
				for range delays {
					r := <-results
					assert.GreaterOrEqual(t, r.late, time.Duration(0), "d=%v fired early", r.d)
					assert.LessOrEqual(t, r.late, c.tick, "d=%v fired more than a tick late", r.d)
				}
				assert.Equal(t, 0, st.Len())
			})
		})
	}
}

// TestRandomDelaysSynctest adds timers with random delays at random moments
// and checks every one fires once, in [deadline, deadline+tick].
func TestRandomDelaysSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick = time.Millisecond
		st := mustNew(t, WithTick(tick), WithWheelSize(16))
		defer st.Stop()
		rng := rand.New(rand.NewPCG(1, 2))
		const n = 2000
		var fired [n]atomic.Int32
		var bad atomic.Int32
		var wg sync.WaitGroup
		wg.Add(n)
		for i := range n {
			if rng.IntN(10) == 0 {
				time.Sleep(time.Duration(rng.Int64N(int64(50 * tick))))
			}
			d := time.Duration(rng.Int64N(int64(20 * time.Second)))
			deadline := time.Now().Add(d)
			_, err := st.AfterFunc(d, func() {
				late := time.Since(deadline)
				if late < 0 || late > tick || fired[i].Add(1) != 1 {
					bad.Add(1)
				}
				wg.Done()
			})
			require.NoError(t, err)
		}
		wg.Wait()
		assert.Zero(t, bad.Load())
		assert.Equal(t, 0, st.Len())
	})
}

// ---- 2. d <= 0 runs at once ----

func TestNonPositiveDelayRunsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithTick(time.Minute))
		defer st.Stop()
		time.Sleep(time.Minute / 2) // mid-tick
		start := time.Now()
		for _, d := range []time.Duration{0, -1, math.MinInt64} {
			ran := make(chan time.Time, 1)
			tm, err := st.AfterFunc(d, func() { ran <- time.Now() })
			require.NoError(t, err)
			assert.Equal(t, start, <-ran, "d=%v waited for time to pass", d)
			assert.False(t, tm.Stop(), "d=%v: Stop after the run", d)
		}
		assert.Equal(t, 0, st.Len())
	})
}

// ---- 3. exactly once; Stop is definitive ----

// TestStopRacesDriverSynctest stops timers at the very instants the driver
// expires their buckets, cascades them or hands them to the pool.
func TestStopRacesDriverSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick = time.Millisecond
		st := mustNew(t, WithTick(tick), WithWheelSize(4))
		rng := rand.New(rand.NewPCG(3, 4))
		const n = 3000
		var runs [n]atomic.Int32
		stopped := make([]bool, n)
		var wg sync.WaitGroup
		for i := range n {
			d := time.Duration(1+rng.IntN(80)) * tick
			tm, err := st.AfterFunc(d, func() { runs[i].Add(1) })
			require.NoError(t, err)
			// Stop at an instant some bucket expires: a tick boundary
			// at or before the deadline, or just at it.
			at := time.Duration(rng.IntN(int(d/tick)+1)) * tick
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(at)
				stopped[i] = tm.Stop()
			}()
		}
		wg.Wait()
		time.Sleep(100 * tick)
		synctest.Wait()
		assert.Empty(t, st.Stop(), "timers still pending")
		for i := range n {
			want := int32(1)
			if stopped[i] {
				want = 0
			}
			require.Equal(t, want, runs[i].Load(), "timer %d: Stop returned %v", i, stopped[i])
		}
	})
}

// TestStopConcurrentRealClock adds and stops timers from many goroutines
// against the real clock, under -race.
func TestStopConcurrentRealClock(t *testing.T) {
	st := mustNew(t, WithWheelSize(8))
	const goroutines, per = 8, 500
	type rec struct {
		runs    atomic.Int32
		stopped bool
	}
	recs := make([]*rec, goroutines*per)
	ran := make(chan struct{}, goroutines*per)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 5))
			var mine []*Timer
			for i := range per {
				r := &rec{}
				recs[g*per+i] = r
				d := time.Duration(rng.Int64N(int64(3 * time.Millisecond)))
				tm, err := st.AfterFunc(d, func() {
					r.runs.Add(1)
					ran <- struct{}{}
				})
				if err != nil {
					panic(err)
				}
				mine = append(mine, tm)
				if rng.IntN(3) == 0 {
					runtime.Gosched()
				}
				if j := rng.IntN(len(mine)); rng.IntN(2) == 0 {
					recs[g*per+j].stopped = mine[j].Stop() || recs[g*per+j].stopped
				}
			}
		}()
	}
	wg.Wait()
	want := 0
	for _, r := range recs {
		if !r.stopped {
			want++
		}
	}
	for range want {
		testwait.Recv(t, ran, "callbacks of timers not stopped")
	}
	assert.Empty(t, st.Stop())
	for i, r := range recs {
		w := int32(1)
		if r.stopped {
			w = 0
		}
		require.Equal(t, w, r.runs.Load(), "timer %d (stopped=%v)", i, r.stopped)
	}
}

// ---- 4. Reset ----

func TestReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick = time.Millisecond
		st := mustNew(t, WithTick(tick))
		defer st.Stop()
		start := time.Now()
		ran := make(chan time.Duration, 4)
		tm, err := st.AfterFunc(time.Second, func() { ran <- time.Since(start) })
		require.NoError(t, err)

		// Pending: true; runs once, at the new deadline only.
		time.Sleep(500 * time.Millisecond)
		assert.True(t, tm.Reset(2*time.Second))
		assert.Equal(t, 2500*time.Millisecond, <-ran)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Empty(t, ran, "ran at the old deadline too")

		// Fired: false; runs again.
		assert.False(t, tm.Reset(time.Second))
		assert.Equal(t, 8500*time.Millisecond, <-ran)

		// Stopped: false; armed again.
		_, _ = tm.Reset(time.Hour), tm.Stop()
		assert.False(t, tm.Reset(10*time.Millisecond))
		assert.Equal(t, 8510*time.Millisecond, <-ran)

		// Shorter and zero.
		assert.False(t, tm.Reset(time.Hour))
		assert.True(t, tm.Reset(3*time.Millisecond))
		assert.Equal(t, 8513*time.Millisecond, <-ran)
		assert.False(t, tm.Reset(0))
		assert.Equal(t, 8513*time.Millisecond, <-ran)
		assert.Equal(t, 0, st.Len())
	})
}

// ---- 5. periodic ----

func TestScheduleFuncNoDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick = time.Millisecond
		st := mustNew(t, WithTick(tick))
		defer st.Stop()
		time.Sleep(tick / 3)
		start := time.Now()
		const period = 7*time.Millisecond + 300*time.Microsecond
		const runs = 500
		at := make(chan time.Duration, runs+1)
		var self atomic.Pointer[Timer] // the first run comes after the Store
		var n int
		tm, err := st.ScheduleFunc(Every(period), func() {
			// Simulated work that takes time does not shift the series.
			time.Sleep(period / 2)
			n++
			if n == runs {
				self.Load().Stop()
			}
			at <- time.Since(start)
		})
		require.NoError(t, err)
		self.Store(tm)
		for k := 1; k <= runs; k++ {
			got := <-at - period/2
			want := time.Duration(k) * period
			require.GreaterOrEqual(t, got, want, "run %d early", k)
			require.LessOrEqual(t, got, want+tick, "run %d drifted", k)
		}
		time.Sleep(10 * period)
		synctest.Wait()
		assert.Empty(t, at, "ran after Stop")
		assert.Equal(t, 0, st.Len())
	})
}

func TestScheduleFuncOverrunSkips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		start := time.Now()
		var running, runs atomic.Int32
		at := make(chan time.Duration, 16)
		tm, err := st.ScheduleFunc(Every(10*time.Millisecond), func() {
			if running.Add(1) != 1 {
				t.Error("runs overlap")
			}
			at <- time.Since(start)
			if runs.Add(1) == 1 {
				time.Sleep(25 * time.Millisecond) // overruns 20ms and 30ms
			}
			running.Add(-1)
		})
		require.NoError(t, err)
		assert.Equal(t, 10*time.Millisecond, <-at)
		assert.Equal(t, 40*time.Millisecond, <-at, "missed runs not skipped")
		assert.Equal(t, 50*time.Millisecond, <-at)
		synctest.Wait()
		assert.True(t, tm.Stop(), "the series goes on after an overrun")
	})
}

// stepper is a general Scheduler (not Every, whose skip is one step) of
// runs d apart.
type stepper time.Duration

func (s stepper) Next(prev time.Time) time.Time { return prev.Add(time.Duration(s)) }

// TestScheduleFuncOverrunPastMaxSkip: a general Scheduler's series overrun
// by more than maxSkip times goes on at a time ahead, never at one passed.
// Past maxSkip Next calls it ran at the passed time it had reached, at once.
func TestScheduleFuncOverrunPastMaxSkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		start := time.Now()
		at := make(chan time.Duration, 4)
		var runs atomic.Int32
		tm, err := st.ScheduleFunc(stepper(time.Millisecond), func() {
			at <- time.Since(start)
			if runs.Add(1) == 1 {
				time.Sleep(2 * time.Second) // 2000 times pass, maxSkip is 1024
			}
		})
		require.NoError(t, err)
		defer tm.Stop()
		require.Equal(t, time.Millisecond, <-at)
		end := time.Millisecond + 2*time.Second
		second := <-at
		assert.Greater(t, second, end, "a run at a time passed: the overrun ended at %v", end)
		assert.LessOrEqual(t, second, end+time.Millisecond, "not the next time ahead")
	})
}

// TestScheduleFuncFirstNext: the first Next is checked as every other is:
// a time not after now is an error, returned with nothing scheduled (it
// ran the function once, at once), and its panic reaches the caller.
func TestScheduleFuncFirstNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		tm, err := st.ScheduleFunc(schedulerFunc(func(prev time.Time) time.Time { return prev }), func() { t.Error("ran") })
		require.ErrorContains(t, err, "not after it")
		require.Nil(t, tm)
		tm, err = st.ScheduleFunc(schedulerFunc(func(prev time.Time) time.Time { return prev.Add(-time.Hour) }), func() { t.Error("ran") })
		require.Error(t, err)
		require.Nil(t, tm)
		assert.Equal(t, "boom", panicValue(func() {
			_, _ = st.ScheduleFunc(schedulerFunc(func(time.Time) time.Time { panic("boom") }), func() {})
		}))
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Zero(t, st.Len())
	})
}

// countdown is a Scheduler of n runs, step apart.
type countdown struct {
	n    int
	step time.Duration
}

func (c *countdown) Next(prev time.Time) time.Time {
	if c.n == 0 {
		return time.Time{}
	}
	c.n--
	return prev.Add(c.step)
}

func TestScheduleFuncSchedulerEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		var runs atomic.Int32
		tm, err := st.ScheduleFunc(&countdown{n: 3, step: time.Second}, func() { runs.Add(1) })
		require.NoError(t, err)
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, int32(3), runs.Load())
		assert.Equal(t, 0, st.Len())
		assert.False(t, tm.Stop())

		// Zero at once: nothing scheduled, an inert timer.
		tm, err = st.ScheduleFunc(&countdown{n: 0}, func() { runs.Add(1) })
		require.NoError(t, err)
		assert.False(t, tm.Stop())
	})
}

// heldSeries starts a series on st, one run a second, whose first run
// blocks: it returns once that run has begun, with the series, the count
// of runs begun, and release, which lets the first run return.
func heldSeries(t *testing.T, st *SystemTimer) (p *Timer, runs *atomic.Int32, release chan<- struct{}) {
	in, out := make(chan struct{}), make(chan struct{})
	runs = new(atomic.Int32)
	p, err := st.ScheduleFunc(Every(time.Second), func() {
		if runs.Add(1) == 1 {
			in <- struct{}{}
			<-out
		}
	})
	require.NoError(t, err)
	<-in
	return p, runs, out
}

func TestScheduleFuncStopAndResetWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		tm, runs, release := heldSeries(t, st)
		assert.False(t, tm.Stop(), "Stop while running reports false")
		release <- struct{}{}
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, int32(1), runs.Load(), "the series went on after Stop")
		assert.Equal(t, 0, st.Len())

		// A panicking run does not end the series.
		var got atomic.Int32
		st2 := mustNew(t, WithPanicHandler(func(any) {}))
		defer st2.Stop()
		tm2, err := st2.ScheduleFunc(Every(time.Second), func() {
			got.Add(1)
			panic("boom")
		})
		require.NoError(t, err)
		time.Sleep(3*time.Second + time.Millisecond)
		synctest.Wait()
		assert.Equal(t, int32(3), got.Load())
		assert.True(t, tm2.Stop())
	})
}

// ---- 6. SystemTimer.Stop ----

func TestSystemTimerStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithWorkers(1))
		block, blocked := make(chan struct{}), make(chan struct{})
		var ran atomic.Int32
		_, err := st.AfterFunc(time.Millisecond, func() {
			close(blocked)
			<-block
		})
		require.NoError(t, err)
		var queued, pending []*Timer
		for range 5 {
			tm, err := st.AfterFunc(2*time.Millisecond, func() { ran.Add(1) })
			require.NoError(t, err)
			queued = append(queued, tm)
		}
		for range 7 {
			tm, err := st.AfterFunc(time.Hour, func() { ran.Add(1) })
			require.NoError(t, err)
			pending = append(pending, tm)
		}
		<-blocked
		// At 2ms the five are handed to the pool, whose only worker is
		// blocked; Stop them before a helper gets to them.
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 7, st.Len())
		got := make(chan []*Timer)
		go func() { got <- st.Stop() }()
		synctest.Wait() // Stop is now waiting for the blocked callback
		close(block)
		left := <-got
		assert.ElementsMatch(t, append(queued, pending...), left)
		assert.Zero(t, wheelGoroutines(), "goroutines outlived Stop")

		time.Sleep(2 * time.Hour)
		synctest.Wait()
		assert.Zero(t, ran.Load(), "a callback ran after Stop")
		assert.Equal(t, 0, st.Len())

		// Idempotent; later calls fail clearly.
		assert.Nil(t, st.Stop())
		_, err = st.AfterFunc(time.Second, func() {})
		assert.ErrorIs(t, err, ErrStopped)
		_, err = st.AfterFunc(0, func() {})
		assert.ErrorIs(t, err, ErrStopped)
		_, err = st.ScheduleFunc(Every(time.Second), func() {})
		assert.ErrorIs(t, err, ErrStopped)
		assert.False(t, pending[0].Reset(time.Second))
		assert.False(t, pending[0].Stop())
		ctx, cancel := st.WithTimeout(context.Background(), time.Second)
		defer cancel()
		assert.ErrorIs(t, ctx.Err(), context.Canceled)
	})
}

func TestSystemTimerStopFromCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithWorkers(2))
		pending, err := st.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		got := make(chan []*Timer, 1)
		_, err = st.AfterFunc(time.Millisecond, func() { got <- st.Stop() })
		require.NoError(t, err)
		assert.Equal(t, []*Timer{pending}, <-got)
		synctest.Wait() // the calling worker returns from its callback and exits
		assert.Zero(t, wheelGoroutines())
	})
}

func TestSystemTimerStopConcurrentCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		for range 10 {
			_, err := st.AfterFunc(time.Hour, func() {})
			require.NoError(t, err)
		}
		var total atomic.Int32
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { total.Add(int32(len(st.Stop()))) })
		}
		wg.Wait()
		assert.Equal(t, int32(10), total.Load(), "each timer returned exactly once")
	})
}

// ---- 7. Len ----

func TestLenExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithWheelSize(4))
		defer st.Stop()
		var tms []*Timer
		for i := range 100 {
			tm, err := st.AfterFunc(time.Duration(i+1)*time.Millisecond, func() {})
			require.NoError(t, err)
			tms = append(tms, tm)
			require.Equal(t, i+1, st.Len())
		}
		_, err := st.AfterFunc(0, func() {})
		require.NoError(t, err)
		assert.Equal(t, 100, st.Len(), "d <= 0 is never pending")
		for i := 0; i < 100; i += 2 {
			require.True(t, tms[i].Stop())
		}
		assert.Equal(t, 50, st.Len())
		assert.True(t, tms[1].Reset(time.Hour))
		assert.Equal(t, 50, st.Len())
		for ms := 1; ms <= 100; ms++ {
			time.Sleep(time.Millisecond)
			synctest.Wait()
			want := 1 // the reset one
			for i := 3; i < 100; i += 2 {
				if i+1 > ms {
					want++
				}
			}
			require.Equal(t, want, st.Len(), "after %dms", ms)
		}
	})
}

// ---- 8. injected clock ----

func TestMockClockAdvanceRightAfterAfterFunc(t *testing.T) {
	mock := clock.NewMock()
	st := mustNew(t, WithClock(mock), WithWheelSize(8))
	defer st.Stop()
	rng := rand.New(rand.NewPCG(6, 7))
	for i := range 200 {
		d := time.Duration(1+rng.IntN(5000)) * time.Millisecond
		deadline := mock.Now().Add(d)
		fired := make(chan time.Time, 1)
		_, err := st.AfterFunc(d, func() { fired <- mock.Now() })
		require.NoError(t, err)
		mock.Add(d) // tick-aligned: the deadline itself fires it
		at := testwait.Recv(t, fired, fmt.Sprintf("iteration %d: callback after mock.Add(%v)", i, d))
		require.False(t, at.Before(deadline), "fired early")
	}
}

func TestMockClockManyTimersOneAdvance(t *testing.T) {
	mock := clock.NewMock()
	st := mustNew(t, WithClock(mock), WithWheelSize(4))
	defer st.Stop()
	const n = 1000
	var count atomic.Int32
	done := make(chan struct{})
	for i := range n {
		_, err := st.AfterFunc(time.Duration(1+i%20)*time.Millisecond*37, func() {
			if count.Add(1) == n {
				close(done)
			}
		})
		require.NoError(t, err)
	}
	mock.Add(20 * 37 * time.Millisecond)
	testwait.Recv(t, done, "all callbacks after one advance")
}

// TestMockJumpForwardDays schedules timers over days, jumps the mock clock
// past all of them at once, and checks each fires exactly once and, with one
// worker, in deadline order tick by tick among the timers of each shard:
// each shard's driver expires its own buckets, in parallel with the others,
// so timers of different shards (armed on different processors) run in
// either order, as the runtime's timers of different Ps do.
func TestMockJumpForwardDays(t *testing.T) {
	// In a synctest bubble, so that the executor's stall delay (real
	// time, faked here) passes only when the worker is really stuck: order
	// is promised while workers keep up, and a loaded machine could
	// otherwise make a helper take over part of the queue.
	synctest.Test(t, func(t *testing.T) {
		mock := clock.NewMock()
		const tick = time.Millisecond
		st := mustNew(t, WithClock(mock), WithTick(tick), WithWorkers(1), WithWheelSize(16))
		defer st.Stop()
		rng := rand.New(rand.NewPCG(8, 9))
		n := 3000
		if raceEnabled {
			n = 500
		}
		type fire struct {
			i  int
			at time.Time
		}
		fires := make(chan fire, n)
		deadlines := make([]time.Time, n)
		shardOf := make([]int, n) // a pending timer stays on its shard
		for i := range n {
			d := time.Duration(1+rng.Int64N(int64(3*24*time.Hour/tick))) * tick
			deadlines[i] = mock.Now().Add(d)
			tm, err := st.AfterFunc(d, func() { fires <- fire{i, mock.Now()} })
			require.NoError(t, err)
			shardOf[i] = tm.shard().index(st)
		}
		mock.Set(mock.Now().Add(4 * 24 * time.Hour))
		seen := make([]bool, n)
		prev := make([]time.Time, len(st.shards))
		for range n {
			f := <-fires
			require.False(t, seen[f.i], "timer %d fired twice", f.i)
			seen[f.i] = true
			dl, s := deadlines[f.i], shardOf[f.i]
			require.False(t, dl.Before(prev[s].Truncate(tick)), "timer due at %v fired after one due at %v, both of shard %d", dl, prev[s], s)
			require.False(t, f.at.Before(dl), "timer %d fired early", f.i)
			prev[s] = dl
		}
		synctest.Wait()
		assert.Empty(t, fires, "a timer fired twice")
		assert.Equal(t, 0, st.Len())
	})
}

func TestClockBackwardsNeverEarly(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	var beforeAt, afterAt []time.Time
	fc.Add(10 * time.Second)
	_, err := st.AfterFunc(time.Millisecond, func() {})
	require.NoError(t, err)
	fc.Add(time.Millisecond)
	st.step() // the wheel time is now 10.001s
	before, err := st.AfterFunc(time.Second, func() { beforeAt = append(beforeAt, fc.Now()) })
	require.NoError(t, err)
	beforeDeadline := fc.Now().Add(time.Second)

	fc.Add(-time.Hour)
	deadline := fc.Now().Add(2 * time.Second)
	_, err = st.AfterFunc(2*time.Second, func() { afterAt = append(afterAt, fc.Now()) })
	require.NoError(t, err)
	// Nothing fires before its deadline by the clock: the timer armed
	// before the jump waits until the clock is back where it was; the one
	// armed after it fires at its own deadline, within a tick, though the
	// wheel time is an hour ahead of the clock.
	for range 2000 {
		fc.Add(5 * time.Millisecond)
		st.step()
		require.Empty(t, beforeAt, "fired while the clock was behind")
		for _, at := range afterAt {
			require.False(t, at.Before(deadline), "fired before its deadline")
		}
	}
	require.Len(t, afterAt, 1)
	require.LessOrEqual(t, afterAt[0].Sub(deadline), 5*time.Millisecond+time.Duration(st.tick), "late by more than a step and a tick")
	fc.Add(time.Hour)
	st.step()
	require.Len(t, beforeAt, 1)
	require.False(t, beforeAt[0].Before(beforeDeadline))
	require.Len(t, afterAt, 1)
	assert.False(t, before.Stop())
}

// ---- 9. panics ----

func TestPanicGoesToHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := make(chan any, 1)
		st := mustNew(t, WithPanicHandler(func(v any) { got <- v }), WithWorkers(1))
		defer st.Stop()
		_, err := st.AfterFunc(time.Millisecond, func() { panic("boom") })
		require.NoError(t, err)
		assert.Equal(t, "boom", <-got)
		ran := make(chan struct{})
		_, err = st.AfterFunc(time.Millisecond, func() { close(ran) })
		require.NoError(t, err)
		<-ran
	})
}

// TestPanicDefaultHandlerLogs: the default handler logs the value with
// slog, and writes the stack to standard error as lines, from the call to
// panic down, not as one quoted string of escaped newlines.
func TestPanicDefaultHandlerLogs(t *testing.T) {
	var logged, stderr strings.Builder
	var mu sync.Mutex
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil)))
	defer slog.SetDefault(prev)
	prevOut := panicOutput
	panicOutput = lockedWriter{&mu, &stderr}
	defer func() { panicOutput = prevOut }()
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		_, err := st.AfterFunc(time.Millisecond, func() { panic("kaboom") })
		require.NoError(t, err)
		time.Sleep(time.Second)
		synctest.Wait()
		st.Stop()
	})
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, logged.String(), "kaboom")
	assert.Contains(t, logged.String(), "timingwheel: callback panicked")
	assert.NotContains(t, logged.String(), "goroutine", "the stack is not in the log record")

	out := stderr.String()
	assert.True(t, strings.HasPrefix(out, "timingwheel: callback panicked: kaboom\n\ngoroutine "), "%q", out)
	assert.NotContains(t, out, `\n`, "escaped newlines")
	assert.NotContains(t, out, `\t`, "escaped tabs")
	lines := strings.Split(out, "\n")
	require.Greater(t, len(lines), 5, out)
	assert.True(t, strings.HasPrefix(lines[3], "panic("), "the stack starts at the call to panic:\n%s", out)
	assert.True(t, strings.HasPrefix(lines[4], "\t"), "a frame's file and line on a line of its own:\n%s", out)
	assert.Contains(t, out, "TestPanicDefaultHandlerLogs", "the callback's frame")
	assert.NotContains(t, out, "runtime/debug.Stack", "the handler's own frames")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// ---- 10. bad input ----

func TestBadOptions(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  Option
		want string
	}{
		{"zero tick", WithTick(0), "WithTick(0s)"},
		{"negative tick", WithTick(-time.Second), "WithTick(-1s)"},
		{"hour tick", WithTick(time.Hour), "WithTick(1h0m0s)"},
		{"largest tick", WithTick(math.MaxInt64), "WithTick(2562047h47m16.854775807s)"},
		{"wheel size 1", WithWheelSize(1), "WithWheelSize(1)"},
		{"wheel size 0", WithWheelSize(0), "WithWheelSize(0)"},
		{"huge wheel size", WithWheelSize(1 << 30), "WithWheelSize(1073741824)"},
		{"zero workers", WithWorkers(0), "WithWorkers(0)"},
		{"huge workers", WithWorkers(1 << 30), "WithWorkers(1073741824)"},
		{"nil clock", WithClock(nil), "WithClock(nil)"},
		{"negative max pending", WithMaxPending(-1), "WithMaxPending(-1)"},
		{"nil panic handler", WithPanicHandler(nil), "WithPanicHandler(nil)"},
		{"nil option", nil, "nil Option"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := New(c.opt)
			assert.Nil(t, st)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.True(t, strings.HasPrefix(err.Error(), "timingwheel: "), err.Error())
		})
	}
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		_, err := st.AfterFunc(time.Second, nil)
		assert.ErrorContains(t, err, "nil func")
		_, err = st.ScheduleFunc(nil, func() {})
		assert.ErrorContains(t, err, "nil Scheduler")
		_, err = st.ScheduleFunc(Every(time.Second), nil)
		assert.ErrorContains(t, err, "nil func")
		_, err = st.ScheduleFunc(Every(0), func() {})
		assert.ErrorContains(t, err, "period must be positive")
		assert.Panics(t, func() {
			//lint:ignore SA1012 the nil parent is what is tested
			st.WithTimeout(nil, time.Second)
		})
	})
}

func TestLargestDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		var ran atomic.Bool
		tm, err := st.AfterFunc(math.MaxInt64, func() { ran.Store(true) })
		require.NoError(t, err)
		assert.Equal(t, 1, st.Len())
		time.Sleep(200 * 365 * 24 * time.Hour)
		synctest.Wait()
		assert.False(t, ran.Load())
		assert.True(t, tm.Stop())
		assert.False(t, tm.Reset(math.MaxInt64))
		assert.Equal(t, 1, st.Len())
	})
}

func TestMaxPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithMaxPending(3))
		defer st.Stop()
		var tms []*Timer
		for range 3 {
			tm, err := st.AfterFunc(time.Second, func() {})
			require.NoError(t, err)
			tms = append(tms, tm)
		}
		_, err := st.AfterFunc(time.Second, func() {})
		assert.ErrorIs(t, err, ErrTooManyPending)
		_, err = st.ScheduleFunc(Every(time.Second), func() {})
		assert.ErrorIs(t, err, ErrTooManyPending)
		_, err = st.AfterFunc(0, func() {})
		assert.NoError(t, err, "d <= 0 is never pending")
		require.True(t, tms[0].Stop())
		_, err = st.AfterFunc(time.Second, func() {})
		assert.NoError(t, err)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		for range 3 {
			_, err := st.AfterFunc(time.Second, func() {})
			require.NoError(t, err, "fired timers free their places")
		}
	})
}

// TestClockPastLargestDeadline: a clock set centuries after New (beyond the
// largest Duration after the epoch) must neither hang the driver nor fire a
// timer clamped to that horizon early, nor lose timers due before it.
func TestClockPastLargestDeadline(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc, WithTick(3*time.Millisecond)) // MaxInt64 is not a multiple of the tick
	defer st.Stop()
	var runs atomic.Int32
	far, err := st.AfterFunc(math.MaxInt64, func() { runs.Add(1) })
	require.NoError(t, err)
	_, err = st.AfterFunc(200*365*24*time.Hour, func() { runs.Add(1) })
	require.NoError(t, err)
	fc.Add(math.MaxInt64)
	fc.Add(100 * 365 * 24 * time.Hour)
	st.step()
	assert.Equal(t, int32(1), runs.Load())
	assert.Equal(t, 1, st.Len())
	assert.True(t, far.Stop())
}

// TestSystemTimerStopReturnsOwedRun: a timer whose run is queued in the
// executor, then Reset (false: the run is still owed) and Stopped (true: the
// new arming is canceled), is still owed its queued run; Stop must return
// it, since that run never started. Found by reading the code during the
// soak work.
func TestSystemTimerStopReturnsOwedRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithWorkers(1))
		release := make(chan struct{})
		_, err := st.AfterFunc(time.Millisecond, func() { <-release })
		require.NoError(t, err)
		var ran atomic.Bool
		tm, err := st.AfterFunc(2*time.Millisecond, func() { ran.Store(true) })
		require.NoError(t, err)
		time.Sleep(2 * time.Millisecond)
		synctest.Wait() // tm's run is queued behind the blocked worker
		require.False(t, tm.Reset(time.Hour), "tm had fired")
		require.True(t, tm.Stop(), "the new arming was pending")
		got := make(chan []*Timer)
		go func() { got <- st.Stop() }()
		synctest.Wait()
		close(release)
		left := <-got
		assert.False(t, ran.Load())
		assert.Equal(t, []*Timer{tm}, left, "the owed run never started, and tm was not returned")
	})
}
