package timingwheel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ---- callbacks that misbehave ----

// TestBlockedCallbacksDoNotHoldUpOthers blocks every worker, for ever as far
// as the test is concerned, and checks that other timers still fire within
// a tick plus the executor's stall delay, and that the driver keeps going.
func TestBlockedCallbacksDoNotHoldUpOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick = time.Millisecond
		const stall = time.Millisecond // min(tick, 1ms)
		st := mustNew(t, WithTick(tick), WithWorkers(2))
		release := make(chan struct{})
		for range 2 {
			_, err := st.AfterFunc(tick, func() { <-release })
			require.NoError(t, err)
		}
		var lates []time.Duration
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 50 {
			d := time.Duration(2+i) * tick
			deadline := time.Now().Add(d)
			wg.Add(1)
			_, err := st.AfterFunc(d, func() {
				mu.Lock()
				lates = append(lates, time.Since(deadline))
				mu.Unlock()
				wg.Done()
				if i%10 == 0 {
					<-release // some of these block too
				}
			})
			require.NoError(t, err)
		}
		wg.Wait()
		for _, late := range lates {
			assert.GreaterOrEqual(t, late, time.Duration(0))
			assert.LessOrEqual(t, late, tick+stall, "held up by blocked callbacks")
		}
		close(release)
		st.Stop()
	})
}

// TestSlowCallbacks: callbacks that take seconds hold up nothing else.
func TestSlowCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithWorkers(1))
		defer st.Stop()
		start := time.Now()
		var order []int
		var mu sync.Mutex
		var wg sync.WaitGroup
		wg.Add(4)
		for i, d := range []time.Duration{time.Second, time.Second, 1500 * time.Millisecond, 2 * time.Second} {
			_, err := st.AfterFunc(d, func() {
				defer wg.Done()
				at := time.Since(start)
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				if at > d+2*time.Millisecond {
					t.Errorf("timer %d ran at %v, due at %v", i, at, d)
				}
				time.Sleep(3 * time.Second) // slow work
			})
			require.NoError(t, err)
		}
		wg.Wait()
		assert.ElementsMatch(t, []int{0, 1, 2, 3}, order)
	})
}

// TestCallbacksUseTheirOwnTimer: callbacks call Stop, Reset and AfterFunc
// on their own SystemTimer.
func TestCallbacksUseTheirOwnTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		start := time.Now()
		ran := make(chan string, 8)

		victim, err := st.AfterFunc(2*time.Second, func() { ran <- "victim" })
		require.NoError(t, err)
		var self *Timer
		selfRuns := 0
		armed := make(chan struct{})
		self, err = st.AfterFunc(time.Second, func() {
			<-armed
			selfRuns++
			assert.False(t, self.Stop(), "Stop of itself while running")
			if selfRuns == 1 {
				assert.True(t, victim.Stop(), "Stop of another pending timer")
				assert.False(t, self.Reset(time.Second), "Reset of itself while running")
			}
			_, err := st.AfterFunc(time.Second, func() { ran <- fmt.Sprint("child at ", time.Since(start)) })
			assert.NoError(t, err)
			ran <- fmt.Sprint("self at ", time.Since(start))
		})
		require.NoError(t, err)
		close(armed)
		time.Sleep(time.Hour)
		synctest.Wait()
		close(ran)
		var got []string
		for s := range ran {
			got = append(got, s)
		}
		assert.ElementsMatch(t, []string{"self at 1s", "self at 2s", "child at 2s", "child at 3s"}, got)
	})
}

// ---- clock faults ----

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

// TestManyTimersSameInstant: a million timers due at one instant all fire,
// once each; the wheel is then empty.
func TestManyTimersSameInstant(t *testing.T) {
	n := 1_000_000
	if raceEnabled || testing.Short() {
		n = 200_000
	}
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		deadline := time.Now().Add(time.Second)
		var fired, early, late atomic.Int64
		var wg sync.WaitGroup
		wg.Add(n)
		cb := func() {
			switch now := time.Now(); {
			case now.Before(deadline):
				early.Add(1)
			case now.After(deadline.Add(time.Millisecond)):
				late.Add(1)
			}
			fired.Add(1)
			wg.Done()
		}
		for range n {
			_, err := st.AfterFunc(time.Until(deadline), cb)
			require.NoError(t, err)
		}
		wg.Wait()
		assert.Equal(t, int64(n), fired.Load())
		assert.Zero(t, early.Load())
		assert.Zero(t, late.Load())
		assert.Equal(t, 0, st.Len())
	})
}

// ---- fuzzing the options ----

// FuzzOptions feeds arbitrary option values to New: it returns a working
// SystemTimer or an error naming the option, and never panics or hangs.
func FuzzOptions(f *testing.F) {
	f.Add(int64(time.Millisecond), 512, 2, 0)
	f.Add(int64(0), 1, 0, -1)
	f.Add(int64(-1), 0, -5, 10)
	f.Add(int64(1), 2, 1, 1)
	f.Add(int64(1<<62), 1<<16, 1<<16, 1<<40)
	f.Add(int64(1<<62), 1<<16+1, 1<<16+1, 0)
	f.Add(int64(1), 2, 2, 0)             // 1ns ticks with the largest delays
	f.Add(int64(1), 512, 2, 0)           // ... and the default wheel size
	f.Add(int64(7), 3, 1, 1)             // under 8ns: the horizon is 2^60 ticks
	f.Add(int64(time.Minute), 2, 1, 3)   // the largest tick
	f.Add(int64(time.Minute+1), 2, 1, 3) // and one past it
	f.Fuzz(func(t *testing.T, tick int64, size, workers, maxPending int) {
		st, err := New(WithTick(time.Duration(tick)), WithWheelSize(size), WithWorkers(workers), WithMaxPending(maxPending))
		valid := tick > 0 && tick <= int64(maxTick) && size >= 2 && size <= maxWheelSize && workers >= 1 && workers <= maxWorkers && maxPending >= 0
		if !valid {
			if err == nil {
				st.Stop()
				t.Fatalf("New accepted tick=%d size=%d workers=%d maxPending=%d", tick, size, workers, maxPending)
			}
			return
		}
		if err != nil {
			t.Fatalf("New rejected valid options: %v", err)
		}
		defer st.Stop()
		// It works: d <= 0 runs at once; a far timer is pending and stops.
		ran := make(chan struct{})
		if _, err := st.AfterFunc(0, func() { close(ran) }); err != nil {
			t.Fatal(err)
		}
		testwait.Recv(t, ran, "an immediate callback")
		tm, err := st.AfterFunc(time.Hour, func() {})
		if err != nil {
			t.Fatal(err)
		}
		if !tm.Stop() {
			t.Fatal("Stop of a pending timer returned false")
		}
		// The largest delays, whatever the tick: AfterFunc, Reset of a
		// stopped and of a pending timer, a deadline past 2262. None may
		// fire, and the driver must survive them (with a 1ns tick it
		// panicked: "no level above the top one").
		far, err := st.AfterFunc(math.MaxInt64, func() { t.Error("the largest delay fired") })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tm.TryReset(math.MaxInt64); err != nil && (maxPending != 1 || !errors.Is(err, ErrTooManyPending)) {
			t.Fatal(err)
		}
		if !far.Reset(math.MaxInt64 - 1) {
			t.Fatal("Reset of a pending timer returned false")
		}
		ctx, cancel := st.WithDeadline(context.Background(), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC))
		defer cancel()
		st.Len() // drains the incoming stacks
		// Up to two timers are pending here: with a bound of 1 or 2 the
		// context is refused, and says so.
		if err := ctx.Err(); err != nil && !(maxPending >= 1 && maxPending <= 2 && errors.Is(context.Cause(ctx), ErrTooManyPending)) {
			t.Fatalf("a deadline in 2300 expired: %v", err)
		}
		if !far.Stop() {
			t.Fatal("Stop of the largest delay returned false")
		}
	})
}

// goexitOnce is a Scheduler whose second Next calls runtime.Goexit (as
// t.FailNow in a test's Scheduler does).
type goexitOnce struct{ calls atomic.Int32 }

func (s *goexitOnce) Next(prev time.Time) time.Time {
	if s.calls.Add(1) == 2 {
		runtime.Goexit()
	}
	return prev.Add(time.Millisecond)
}

// TestSchedulerGoexit: a Scheduler.Next that exits its goroutine
// (runtime.Goexit, which a recover does not stop) unwound rearm between its
// unlock and relock, and the series stayed fired for ever: Stop reported
// false, Reset only recorded a request no rearm would carry out, and under
// WithMaxPending the series' place was never given back. The series must
// end, the panic handler hear of it, and the place come back.
func TestSchedulerGoexit(t *testing.T) {
	reports := make(chan any, 4)
	st, err := New(WithTick(time.Millisecond), WithMaxPending(1), WithPanicHandler(func(v any) { reports <- v }))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	runs := make(chan struct{}, 16)
	s := &goexitOnce{}
	tm, err := st.ScheduleFunc(s, func() { runs <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, runs, "the first run")
	v := testwait.Recv(t, reports, "the panic handler's report of the Goexit")
	if e, ok := v.(error); !ok || !strings.Contains(e.Error(), "Goexit") {
		t.Fatalf("the panic handler received %v; want an error about Goexit", v)
	}
	if _, state := unpack(tm.w.Load()); state != stateStopped {
		t.Fatalf("the series is in state %d after its Next exited; want stopped (%d)", state, stateStopped)
	}
	if tm.Stop() {
		t.Fatal("Stop of an ended series reported it pending")
	}
	other, err := st.AfterFunc(time.Hour, func() {})
	if err != nil {
		t.Fatalf("AfterFunc under WithMaxPending(1) after the series ended: %v; its place was not given back", err)
	}
	other.Stop()
}
