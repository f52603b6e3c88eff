package timingwheel

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/isolate"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
)

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
func TestConcurrentTimerReset(t *testing.T) {
	stress(t, func(t *testing.T) {
		st := newST(t)
		c := newCounted(st)
		c.t.Reset(time.Hour)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range iters(1000) {
					if !c.t.Reset(time.Hour + time.Duration(g*1000+i)*time.Second) {
						t.Error("Reset of a timer pending an hour out reported it was not pending")
					}
				}
			})
		}
		wg.Wait()
		settle(t, st, []*counted{c})
	})
}

// TestConcurrentTimerResetStop: goroutines Reset one timer while others
// Stop it (the time package's test of the same name, looped; a Stop that
// left pending before unlinking fails it, as in
// TestConcurrentStopResetOneTimer).
func TestConcurrentTimerResetStop(t *testing.T) {
	stress(t, func(t *testing.T) {
		st := newST(t)
		c := newCounted(st)
		c.t.Reset(time.Hour)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range iters(1000) {
					c.t.Reset(time.Hour + time.Duration(g*1000+i)*time.Second)
				}
			})
			wg.Go(func() {
				for range iters(1000) {
					c.t.Stop()
				}
			})
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
	steps := make([]int, len(timers))
	left := rng.Perm(len(timers))
	for len(left) > 0 {
		k := rng.IntN(len(left))
		i := left[k]
		step := steps[i]
		steps[i]++
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
		default:
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
