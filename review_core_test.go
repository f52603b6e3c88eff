package timingwheel

// Review tests of the lock-free core (issue 18 follow-up). Each targets one
// interleaving the concurrency suite does not assert on; see the report.

import (
	"context"
	"errors"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/isolate"
)

// TestReviewPostponeNeverEarly races the lock-free postpone of Reset (a CAS
// of the due tick of a pending timer) against the driver's fire CAS in
// shard.link: timers armed 1ms out are each Reset(1h) once, around the time
// they come due. A Reset that reports true postponed a pending timer: its
// callback must never run. One that reports false found it fired: it ran
// exactly once (the re-arm is an hour out).
func TestReviewPostponeNeverEarly(t *testing.T) {
	isolate.Run(t, stressTimeout, func(t *testing.T) {
		preempting(t)
		st, err := New(WithTick(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Stop()
		var postponed, fired int
		for round := range iters(40) {
			const n = 256
			timers := make([]*counted, n)
			for i := range timers {
				timers[i] = newCounted(st)
			}
			for _, c := range timers {
				c.t.Reset(time.Millisecond)
			}
			was := make([]bool, n)
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
					// Spread the Resets over 0-5ms: across the fire.
					start := time.Now()
					for i := g; i < n; i += 4 {
						at := 5*time.Millisecond*time.Duration(i)/n + time.Duration(rng.IntN(20))*time.Microsecond
						for time.Since(start) < at {
							runtime.Gosched()
						}
						was[i] = timers[i].t.Reset(time.Hour)
					}
				})
			}
			wg.Wait()
			// Reset(1h) reported false only for a timer already handed to
			// the executor, so waitIdle is what the counts wait for. The
			// pause is no synchronisation: it gives a postponed timer that
			// the driver fired by its old deadline (1ms, long past) time to
			// show up as a run.
			time.Sleep(5 * time.Millisecond)
			waitIdle(t, st)
			for i, c := range timers {
				want := int64(1)
				if was[i] {
					want = 0
					postponed++
				} else {
					fired++
				}
				if got := c.runs.Load(); got != want {
					t.Fatalf("round %d, timer %d: Reset(1h) reported %v, and the callback ran %d times (want %d)", round, i, was[i], got, want)
				}
				c.t.Stop()
			}
		}
		t.Logf("postponed %d, found fired %d", postponed, fired)
	})
}

// slowEvery is Every(d) with a Next that yields, to widen rearm's window
// between unlocking and relocking the shard.
type slowEvery time.Duration

func (e slowEvery) Next(prev time.Time) time.Time {
	for range rand.IntN(3) {
		runtime.Gosched()
	}
	return prev.Add(time.Duration(e))
}

// TestReviewPeriodicVsSystemStop races periodic timers' Stop, Reset and
// rearm (Scheduler.Next outside the lock) against SystemTimer.Stop, called
// from outside or from inside a callback. After Stop: no callback starts,
// every Stop reports false, every TryReset ErrStopped, Len is 0, and Stop
// returned each timer at most once.
func TestReviewPeriodicVsSystemStop(t *testing.T) {
	isolate.Run(t, stressTimeout, func(t *testing.T) {
		preempting(t)
		for round := range iters(60) {
			st, err := New(WithTick(time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			var over atomic.Bool
			var late atomic.Int64
			fromCallback := round%2 == 1
			stopped := make(chan []*Timer, 1)
			var stopOnce sync.Once
			var timers []*Timer
			for i := range 16 {
				tm, err := st.ScheduleFunc(slowEvery(time.Duration(200+i*50)*time.Microsecond), func() {
					if over.Load() {
						late.Add(1)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				timers = append(timers, tm)
			}
			if fromCallback {
				// A once-timer whose callback stops the SystemTimer.
				if _, err := st.AfterFunc(time.Duration(1+rand.IntN(3))*time.Millisecond, func() {
					stopOnce.Do(func() { stopped <- st.Stop() })
				}); err != nil {
					t.Fatal(err)
				}
			}
			quit := make(chan struct{})
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
					for {
						select {
						case <-quit:
							return
						default:
						}
						tm := timers[rng.IntN(len(timers))]
						if rng.IntN(2) == 0 {
							tm.Stop()
						} else {
							_, _ = tm.TryReset(time.Duration(rng.IntN(1500)) * time.Microsecond)
						}
					}
				})
			}
			var left []*Timer
			if fromCallback {
				left = <-stopped
			} else {
				time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
				left = st.Stop()
			}
			over.Store(true)
			close(quit)
			wg.Wait()
			if msg := sameTimers(left, uniq(left)); msg != "" {
				t.Fatalf("round %d: Stop returned a timer twice", round)
			}
			for i, tm := range timers {
				if tm.Stop() {
					t.Fatalf("round %d: periodic %d: Stop reported true after SystemTimer.Stop", round, i)
				}
				if _, err := tm.TryReset(time.Millisecond); !errors.Is(err, ErrStopped) {
					t.Fatalf("round %d: periodic %d: TryReset after SystemTimer.Stop: %v", round, i, err)
				}
			}
			if n := st.Len(); n != 0 {
				t.Fatalf("round %d: Len %d after Stop", round, n)
			}
			time.Sleep(3 * time.Millisecond)
			if n := late.Load(); n != 0 && !fromCallback {
				t.Fatalf("round %d: %d callbacks started after Stop returned", round, n)
			}
		}
	})
}

// TestReviewContextsVsSystemStop races wheel contexts' birth, expiry and
// cancel against SystemTimer.Stop. Once Stop has returned and the creators
// are done, every context must be done: a context whose timer Stop neither
// returned nor ran would stay live forever.
func TestReviewContextsVsSystemStop(t *testing.T) {
	isolate.Run(t, stressTimeout, func(t *testing.T) {
		preempting(t)
		for round := range iters(60) {
			st, err := New(WithTick(time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			parent, pcancel := context.WithCancel(context.Background())
			const g = 4
			ctxs := make([][]context.Context, g)
			var wg sync.WaitGroup
			var stopping atomic.Bool
			for k := range g {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(round), uint64(k)))
					for !stopping.Load() || rng.IntN(4) != 0 {
						var p context.Context = parent
						if len(ctxs[k]) > 0 && rng.IntN(3) == 0 {
							p = ctxs[k][rng.IntN(len(ctxs[k]))] // a wheel parent
						}
						ctx, cancel := st.WithTimeout(p, time.Duration(rng.IntN(3000))*time.Microsecond)
						ctxs[k] = append(ctxs[k], ctx)
						if rng.IntN(3) == 0 {
							go cancel()
						}
						if len(ctxs[k]) > 2000 {
							break
						}
					}
				})
			}
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			stopping.Store(true)
			st.Stop()
			wg.Wait()
			for k := range g {
				for i, ctx := range ctxs[k] {
					if ctx.Err() == nil {
						t.Fatalf("round %d: context %d/%d is live after SystemTimer.Stop", round, k, i)
					}
				}
			}
			pcancel()
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

// TestReviewSchedulerGoexit: a Scheduler.Next that exits its goroutine
// (runtime.Goexit, which a recover does not stop) unwound rearm between its
// unlock and relock, and the series stayed fired for ever: Stop reported
// false, Reset only recorded a request no rearm would carry out, and under
// WithMaxPending the series' place was never given back (found by the
// review of issue 18). The series must end, the panic handler hear of it,
// and the place come back.
func TestReviewSchedulerGoexit(t *testing.T) {
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
