package timingwheel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/isolate"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
)

// The time package's own tests of its timers (sleep_test.go, tick_test.go
// and its concurrency tests), ported in our words: to a SystemTimer's
// Timers, then to the package-level functions that stand in for time's.

// ---- on a SystemTimer's Timers ----

// The time package's own concurrency and timer-modification tests, ported in
// our words to wheel Timers: the scenarios, with the checks they make (and
// the stronger ones a wheel can make: every run counted). A timer's channel
// here is one the callback sends on, as a time.Timer's would be.

// sendTimer is a wheel Timer whose runs send on a channel.
type sendTimer struct {
	t Timer
	c chan time.Time
}

func newSendTimer(st *SystemTimer) *sendTimer {
	ct := &sendTimer{c: make(chan time.Time, 4)}
	st.Bind(&ct.t, func() { ct.c <- time.Now() })
	return ct
}

func newST(t *testing.T, opts ...Option) *SystemTimer {
	t.Helper()
	st := mustNew(t, opts...)
	t.Cleanup(func() { st.Stop() })
	return st
}

// TestConcurrentTimerReset: goroutines Reset one timer at the same time
// (the time package's test of the same name, looped): nothing breaks, and
// the timer is pending once, at one of the deadlines given.
func TestConcurrentTimerReset(t *testing.T) { concurrentResets(t, false) }

// TestConcurrentTimerResetStop: goroutines Reset one timer while others
// Stop it (the time package's test of the same name, looped; a Stop that
// left pending before unlinking fails it, as in
// TestConcurrentStopResetOneTimer).
func TestConcurrentTimerResetStop(t *testing.T) { concurrentResets(t, true) }

// concurrentResets has 8 goroutines Reset one timer, pending an hour out,
// to other deadlines an hour out, and, with stops, 8 more Stop it at the
// same time; then settle checks the timer. Without stops, every Reset
// must find the timer pending.
func concurrentResets(t *testing.T, stops bool) {
	stress(t, func(t *testing.T) {
		st := newST(t)
		c := newCounted(st)
		c.t.Reset(time.Hour)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range iters(1000) {
					if !c.t.Reset(time.Hour+time.Duration(g*1000+i)*time.Second) && !stops {
						t.Error("Reset of a timer pending an hour out reported it was not pending")
					}
				}
			})
			if stops {
				wg.Go(func() {
					for range iters(1000) {
						c.t.Stop()
					}
				})
			}
		}
		wg.Wait()
		settle(t, st, []*counted{c})
	})
}

// TestTimerModifiedEarlier: a timer moved from an hour out to the past,
// ten times over with Stop in between, still fires, at once (the time
// package's test, after Go issue 47329, where such a timer was dropped).
func TestTimerModifiedEarlier(t *testing.T) {
	st := newST(t)
	past := time.Until(time.Unix(0, 0))
	for range 1000 {
		ct := newSendTimer(st)
		ct.t.Reset(time.Hour)
		for range 10 {
			if !ct.t.Stop() {
				testwait.Recv(t, ct.c, "the run of a timer Stop reported as fired")
			}
			ct.t.Reset(past)
		}
		start := time.Now()
		testwait.Recv(t, ct.c, "the run of a timer moved to the past")
		if since := time.Since(start); since > 8*time.Second {
			t.Fatalf("a timer moved to the past fired %v later", since)
		}
	}
}

// TestAdjustTimers: a hundred timers, each taken at random through the
// same life: fired at once, Reset to minutes out and stopped three times,
// then Reset(0) and received. Moving timers earlier and later at random
// must lose no run and find none pending where none should be (the time
// package's test, after Go issue 47762).
func TestAdjustTimers(t *testing.T) {
	st := newST(t)
	rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
	timers := make([]*sendTimer, 100)
	interleaved(rng, len(timers), 9, func(i, step int) {
		switch step {
		case 0:
			timers[i] = newSendTimer(st)
			timers[i].t.Reset(0)
		case 1:
			testwait.Recv(t, timers[i].c, "a Reset(0) timer's run")
		case 2, 4, 6:
			if timers[i].t.Reset(time.Duration(step) * time.Minute) {
				t.Fatalf("timer %d, step %d: Reset found a timer pending that had fired or was stopped", i, step)
			}
		case 3, 5, 7:
			if !timers[i].t.Stop() {
				t.Fatalf("timer %d, step %d: Stop found a timer minutes out not pending", i, step)
			}
		case 8:
			if timers[i].t.Reset(0) {
				t.Fatalf("timer %d: Reset(0) found a stopped timer pending", i)
			}
		case 9:
			start := time.Now()
			testwait.Recv(t, timers[i].c, "a Reset(0) timer's run")
			if d := time.Since(start); d > 750*time.Millisecond {
				t.Errorf("timer %d took %v to fire after Reset(0)", i, d)
			}
		}
	})
}

// interleaved takes each of n timers through its steps 0 to last, calling
// step(i, s) for timer i's step s: each timer's steps in order, the steps
// of different timers interleaved at random by rng.
func interleaved(rng *rand.Rand, n, last int, step func(i, s int)) {
	steps := make([]int, n)
	left := rng.Perm(n)
	for len(left) > 0 {
		k := rng.IntN(len(left))
		i := left[k]
		if s := steps[i]; s <= last {
			steps[i]++
			step(i, s)
		} else {
			left[k] = left[len(left)-1]
			left = left[:len(left)-1]
		}
	}
}

// TestZeroTimer: timers of zero duration are never missed, made fresh, with
// AfterFunc, and as one timer Reset(0) over and over (the time package's
// test, after Go issue 44868).
func TestZeroTimer(t *testing.T) {
	n := 100_000
	if testing.Short() || raceEnabled {
		n = 10_000
	}
	check := func(t *testing.T, fire func(c chan time.Time)) {
		c := make(chan time.Time, 1)
		for range n {
			start := time.Now()
			fire(c)
			testwait.Recv(t, c, "a zero-duration timer's run")
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("a zero-duration timer took %v", d)
			}
		}
	}
	t.Run("impl=AfterFunc", func(t *testing.T) {
		st := newST(t)
		check(t, func(c chan time.Time) {
			if _, err := st.AfterFunc(0, func() { c <- time.Now() }); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("impl=Reset", func(t *testing.T) {
		st := newST(t)
		var c chan time.Time
		var tm Timer
		st.Bind(&tm, func() { c <- time.Now() })
		check(t, func(ch chan time.Time) {
			c = ch
			tm.Reset(0)
		})
	})
}

// TestAfterFuncStarvation: with one P and two goroutines ping-ponging on a
// channel, so that one of them is always runnable, a callback due in a
// microsecond still runs and stops them (the time package's test, after Go
// issue 65178). The wheel's driver and workers are goroutines too: they
// must get the P.
func TestAfterFuncStarvation(t *testing.T) {
	isolate.Run(t, stressTimeout, func(t *testing.T) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		st := newST(t)
		for range 100 {
			var stop atomic.Bool
			c := make(chan bool, 1)
			var wg sync.WaitGroup
			wg.Go(func() {
				for !stop.Load() {
					c <- true
				}
				close(c)
			})
			wg.Go(func() {
				for range c {
				}
			})
			if _, err := st.AfterFunc(time.Microsecond, func() { stop.Store(true) }); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
		}
	})
}

// ---- on the package-level functions ----

// The time package's own tests of its timer functions (sleep_test.go,
// tick_test.go), ported in our words to the package-level functions, which
// claim to be drop-in replacements. Each runs in a synctest bubble with a
// default of its own (bubbleDefault), so that its durations are exact: where
// the time package retries with longer durations to ride out a loaded
// machine, these check once, and check the upper bound too (one tick, 1ms).

const pkgTick = time.Millisecond // the default's tick: how late a timer may be

// within fails the test unless el, the time something took, is in [d, d+tick].
func within(t *testing.T, what string, el, d time.Duration) {
	t.Helper()
	if el < d || el > d+pkgTick {
		t.Errorf("%s took %v, want [%v, %v]", what, el, d, d+pkgTick)
	}
}

// TestDefaultSleep is the time package's TestSleep (a Sleep while another
// goroutine sleeps and wakes) and TestSleepZeroDeadlock's Sleep(0), which
// must return at once.
func TestDefaultSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		const delay = 100 * time.Millisecond
		woke := make(chan struct{})
		go func() {
			Sleep(delay / 2)
			close(woke)
		}()
		start := time.Now()
		Sleep(delay)
		within(t, "Sleep(100ms)", time.Since(start), delay)
		<-woke

		start = time.Now()
		for range 100 {
			Sleep(0)
			Sleep(-1)
			Sleep(math.MinInt64)
		}
		if el := time.Since(start); el != 0 {
			t.Errorf("Sleep(0) and negative Sleeps took %v", el)
		}
	})
}

// TestDefaultAfterFunc is the time package's TestAfterFunc: a function that
// re-arms itself with AfterFunc(0, f) and then blocks for a second, ten
// times. Each AfterFunc(0) must run although the one before still blocks.
func TestDefaultAfterFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		i := 10
		done := make(chan struct{})
		var f func()
		f = func() {
			i--
			if i < 0 {
				close(done)
				return
			}
			AfterFunc(0, f)
			Sleep(time.Second)
		}
		start := time.Now()
		AfterFunc(0, f)
		<-done
		// Each run starts the next before sleeping: none waits on another.
		if el := time.Since(start); el >= time.Second {
			t.Errorf("ten chained AfterFunc(0) took %v: a blocked callback held up the next", el)
		}
	})
}

// TestDefaultAfter is the time package's TestAfter and TestAfterTick: the
// value After delivers is the time it was due, and ten After in a row take
// ten times as long.
func TestDefaultAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		const delay = 100 * time.Millisecond
		start := time.Now()
		v := <-After(delay)
		within(t, "After(100ms)", time.Since(start), delay)
		within(t, "After(100ms)'s value", v.Sub(start), delay)

		const n, delta = 10, 10 * time.Millisecond
		start = time.Now()
		for range n {
			<-After(delta)
		}
		if el, target := time.Since(start), n*delta; el < target || el > target+n*pkgTick {
			t.Errorf("%d After(%v) in a row took %v, want [%v, %v]", n, delta, el, target, target+n*pkgTick)
		}
	})
}

// TestDefaultAfterStop is the time package's TestAfterStop, both ways
// (NewTimer and AfterFunc): timers stopped before they fire never fire, while
// timers around them do, and a second Stop reports false.
func TestDefaultAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		AfterFunc(100*time.Millisecond, func() {})
		t0 := NewTimer(50 * time.Millisecond)
		fired1 := make(chan bool, 1)
		t1 := AfterFunc(150*time.Millisecond, func() { fired1 <- true })
		c2 := After(200 * time.Millisecond)
		if !t0.Stop() {
			t.Fatal("Stop of a pending NewTimer timer reported false")
		}
		if !t1.Stop() {
			t.Fatal("Stop of a pending AfterFunc timer reported false")
		}
		<-c2
		select {
		case <-t0.C:
			t.Error("a stopped NewTimer timer delivered")
		case <-fired1:
			t.Error("a stopped AfterFunc timer ran")
		default:
		}
		if t1.Stop() {
			t.Error("Stop reported true twice")
		}
		if t0.Stop() {
			t.Error("ChanTimer.Stop reported true twice")
		}
	})
}

// TestDefaultAfterQueuing is the time package's TestAfterQueuing, both
// ways: timers armed in a scrambled order of deadlines deliver in the
// order of their deadlines, each within a tick of it.
func TestDefaultAfterQueuing(t *testing.T) {
	afters := map[string]func(time.Duration) <-chan time.Time{
		"After": After,
		"AfterFunc": func(d time.Duration) <-chan time.Time {
			c := make(chan time.Time, 1)
			AfterFunc(d, func() { c <- time.Now() })
			return c
		},
	}
	for name, after := range afters {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bubbleDefault(t)
				afterQueuing(t, after, func(t *testing.T, slot int, got, want time.Duration) {
					within(t, fmt.Sprintf("slot %d", slot), got, want)
				})
			})
		})
	}
}

// TestDefaultTimerStopMany is the time package's TestTimerStopStress,
// which is no stress test here (synctest runs it in no real time): a
// hundred goroutines each arm a timer for 2s and stop it after 1s; none
// runs, and each Stop reports true.
func TestDefaultTimerStopMany(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() {
				tm := AfterFunc(2*time.Second, func() { t.Errorf("timer %d was not stopped", i) })
				Sleep(time.Second)
				if !tm.Stop() {
					t.Errorf("timer %d: Stop of a pending timer reported false", i)
				}
			})
		}
		wg.Wait()
		Sleep(3 * time.Second)
	})
}

// TestDefaultReset is the time package's TestReset: a timer pushed back
// before it fires fires at its new deadline, not before; Reset reports true
// while pending and false once it has fired.
func TestDefaultReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		const d = 10 * time.Millisecond
		start := time.Now()
		tm := NewTimer(2 * d)
		Sleep(d)
		if !tm.Reset(3 * d) {
			t.Fatal("Reset of a pending timer reported false")
		}
		Sleep(2 * d)
		select {
		case <-tm.C:
			t.Fatal("the timer fired at its old deadline, or early")
		default:
		}
		v := <-tm.C
		within(t, "the reset timer", v.Sub(start), 4*d)
		if tm.Reset(50 * time.Millisecond) {
			t.Error("Reset of a timer whose value was received reported true")
		}
		tm.Stop()
	})
}

// TestDefaultOverflowSleep is the time package's TestOverflowSleep: the
// largest duration never fires and holds up no other timer; the most
// negative one fires at once.
func TestDefaultOverflowSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		const big = time.Duration(math.MaxInt64)
		bigTimer := NewTimer(big)
		select {
		case <-bigTimer.C:
			t.Fatal("a timer of the largest duration fired")
		case <-After(25 * time.Millisecond):
		}
		if !bigTimer.Stop() {
			t.Error("Stop of the largest-duration timer reported false")
		}
		const neg = time.Duration(math.MinInt64)
		start := time.Now()
		Sleep(neg)
		select {
		case <-After(neg):
		case <-After(time.Second):
			t.Fatal("After of the most negative duration did not fire")
		}
		if el := time.Since(start); el != 0 {
			t.Errorf("Sleep and After of the most negative duration took %v", el)
		}
	})
}

// TestDefaultZeroTimer is the time package's TestZeroTimer, for a new timer
// and for one reused by Reset: a timer of duration 0 has its value ready
// when NewTimer or Reset returns.
func TestDefaultZeroTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		reused := NewTimer(time.Hour)
		for i := range 1000 {
			for name, tm := range map[string]*ChanTimer{"NewTimer(0)": NewTimer(0), "Reset(0)": reused} {
				if tm == reused {
					tm.Reset(0)
				}
				select {
				case <-tm.C:
				default:
					t.Fatalf("round %d: %s had no value ready", i, name)
				}
			}
		}
	})
}

// TestDefaultTimerModifiedEarlier is the time package's
// TestTimerModifiedEarlier: a timer an hour out, stopped (or drained) and
// reset to the past ten times over, delivers at once.
func TestDefaultTimerModifiedEarlier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		past := time.Until(time.Unix(0, 0))
		for i := range 100 {
			tm := NewTimer(time.Hour)
			for range 10 {
				if !tm.Stop() {
					<-tm.C
				}
				tm.Reset(past)
			}
			deadline := NewTimer(10 * time.Second)
			start := time.Now()
			select {
			case <-tm.C:
				if el := time.Since(start); el != 0 {
					t.Errorf("round %d: a timer reset to the past took %v", i, el)
				}
			case <-deadline.C:
				t.Fatalf("round %d: a timer reset to the past never fired", i)
			}
			deadline.Stop()
		}
	})
}

// TestDefaultAdjustTimers is the time package's TestAdjustTimers: a hundred
// timers, each taken through the same steps (fire at once, received; reset
// long, stopped; three times; reset to zero, received at once), the steps
// of different timers interleaved at random (seeded: the same each run).
func TestDefaultAdjustTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		rnd := rand.New(rand.NewPCG(1, 2))
		timers := make([]*ChanTimer, 100)
		interleaved(rnd, len(timers), 9, func(i, step int) {
			tm := timers[i]
			switch step {
			case 0:
				timers[i] = NewTimer(0)
			case 1:
				<-tm.C
			case 2, 4, 6:
				if tm.Reset(time.Duration(step/2) * time.Minute) {
					t.Fatalf("timer %d: Reset of an idle timer reported true", i)
				}
			case 3, 5, 7:
				if !tm.Stop() {
					t.Fatalf("timer %d: Stop of a timer pending for minutes reported false", i)
				}
			case 8:
				if tm.Reset(0) {
					t.Fatalf("timer %d: Reset of a stopped timer reported true", i)
				}
			case 9:
				start := time.Now()
				<-tm.C
				if el := time.Since(start); el != 0 {
					t.Errorf("timer %d: Reset(0) delivered after %v", i, el)
				}
			}
		})
	})
}

// TestDefaultStopResetResult is the time package's TestStopResult and
// TestResetResult (go.dev/issue/69312), smaller, since synctest removes the
// need for numbers: of two timers due at once, the one whose value was not
// received is stopped or reset; if that reports false, its value must be
// waiting in C (a receive that blocks for ever fails the bubble).
func TestDefaultStopResetResult(t *testing.T) {
	for _, stop := range []bool{true, false} {
		name := map[bool]string{true: "Stop", false: "Reset"}[stop]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bubbleDefault(t)
				stopOrReset := func(tm *ChanTimer) bool {
					if stop {
						return tm.Stop()
					}
					return tm.Reset(time.Hour)
				}
				var wg sync.WaitGroup
				for range 20 {
					wg.Go(func() {
						for range 20 {
							t1, t2 := NewTimer(time.Millisecond), NewTimer(time.Millisecond)
							select {
							case <-t1.C:
								if !stopOrReset(t2) {
									<-t2.C
								}
							case <-t2.C:
								if !stopOrReset(t1) {
									<-t1.C
								}
							}
							t1.Stop()
							t2.Stop()
						}
					})
				}
				wg.Wait()
			})
		})
	}
}

// TestDefaultTicker is the time package's TestTicker and TestTeardown: a
// ticker's ticks come d apart, Reset changes the period, and after Stop no
// tick comes.
func TestDefaultTicker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		const count, delta = 10, 20 * time.Millisecond
		tk := NewTicker(delta)
		start := time.Now()
		for range count / 2 {
			<-tk.C
		}
		tk.Reset(2 * delta)
		for range count - count/2 {
			<-tk.C
		}
		tk.Stop()
		// The first half ticks on the wheel's ticks after start; the
		// second, after the Reset, at most a tick late each.
		target := 3 * delta * count / 2
		if el := time.Since(start); el < target || el > target+2*pkgTick {
			t.Errorf("%d ticks of %v then %d of %v took %v, want [%v, %v]", count/2, delta, count/2, 2*delta, el, target, target+2*pkgTick)
		}
		Sleep(2 * delta)
		select {
		case <-tk.C:
			t.Error("a tick after Stop")
		default:
		}

		for range 3 { // TestTeardown
			tk := NewTicker(delta)
			<-tk.C
			tk.Stop()
		}
	})
}

// TestDefaultAfterTimes is the time package's TestAfterTimes and
// TestTickTimes: a value received late is the time the timer was due, not
// the time it was received.
func TestDefaultAfterTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		for name, c := range map[string]func(time.Duration) <-chan time.Time{"After": After, "Tick": Tick} {
			start := time.Now()
			ch := c(10 * time.Millisecond)
			Sleep(500 * time.Millisecond)
			within(t, name+"'s value received 500ms late", (<-ch).Sub(start), 10*time.Millisecond)
		}
	})
}

// TestDefaultChan is the time package's TestChan (synchronous channels,
// Go 1.23 and later) on timers made by NewTimer and NewTicker: the scenarios
// testChan runs for SystemTimer's methods.
func TestDefaultChan(t *testing.T) {
	t.Run("Timer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			bubbleDefault(t)
			tm := NewTimer(10000 * time.Second)
			testChan(t, tm, tm.C, false)
		})
	})
	t.Run("Ticker", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			bubbleDefault(t)
			tk := NewTicker(10000 * time.Second)
			testChan(t, &tickerTimer{Ticker: tk}, tk.C, true)
		})
	})
}
