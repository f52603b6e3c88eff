package twclock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel"
	twclock "github.com/go-timingwheel/timingwheel/contrib/clock"
	"k8s.io/utils/clock"
)

func newK8s(t *testing.T, opts ...timingwheel.Option) (clock.WithTickerAndDelayedExecution, *timingwheel.SystemTimer) {
	st := newWheel(t, opts...)
	return twclock.NewK8s(st), st
}

func TestK8sTimer(t *testing.T) {
	t.Run("Fires", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _ := newK8s(t)
			start := c.Now()
			tm := c.NewTimer(10 * time.Millisecond)
			due(t, "NewTimer(10ms)", recv(t, "NewTimer(10ms)", tm.C()), start, 10*time.Millisecond)
			if tm.Stop() {
				t.Error("Stop after the value was received = true, want false")
			}
		})
	})
	t.Run("Stop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _ := newK8s(t)
			tm := c.NewTimer(10 * time.Millisecond)
			if !tm.Stop() {
				t.Fatal("Stop of a pending timer = false, want true")
			}
			c.Sleep(20 * time.Millisecond)
			synctest.Wait()
			empty(t, "C after Stop", tm.C())
			if tm.Stop() {
				t.Error("second Stop = true, want false")
			}
		})
	})
	t.Run("StopUnreceived", func(t *testing.T) {
		// Go 1.23: a value delivered and not received counts as pending,
		// and Stop takes it back.
		synctest.Test(t, func(t *testing.T) {
			c, _ := newK8s(t)
			tm := c.NewTimer(10 * time.Millisecond)
			c.Sleep(20 * time.Millisecond)
			synctest.Wait()
			if !tm.Stop() {
				t.Fatal("Stop of a timer that fired unreceived = false, want true")
			}
			empty(t, "C after Stop", tm.C())
		})
	})
	t.Run("Reset", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _ := newK8s(t)
			start := c.Now()
			tm := c.NewTimer(time.Hour)
			if !tm.Reset(10 * time.Millisecond) {
				t.Error("Reset of a pending timer = false, want true")
			}
			due(t, "Reset(10ms)", recv(t, "Reset(10ms)", tm.C()), start, 10*time.Millisecond)
			if tm.Reset(10 * time.Millisecond) {
				t.Error("Reset after the value was received = true, want false")
			}
			due(t, "second Reset(10ms)", recv(t, "second Reset(10ms)", tm.C()), start, 20*time.Millisecond)
		})
	})
	t.Run("ResetNoStaleValue", func(t *testing.T) {
		// The loop of a consumer that Resets without draining C: the
		// value from before the Reset is not received after it.
		synctest.Test(t, func(t *testing.T) {
			c, _ := newK8s(t)
			start := c.Now()
			tm := c.NewTimer(10 * time.Millisecond)
			c.Sleep(20 * time.Millisecond)
			synctest.Wait()
			if !tm.Reset(30 * time.Millisecond) {
				t.Error("Reset of a timer that fired unreceived = false, want true")
			}
			due(t, "after Reset(30ms)", recv(t, "after Reset(30ms)", tm.C()), start, 50*time.Millisecond)
		})
	})
	t.Run("ZeroDuration", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _ := newK8s(t)
			start := c.Now()
			tm := c.NewTimer(0)
			due(t, "NewTimer(0)", recv(t, "NewTimer(0)", tm.C()), start, 0)
		})
	})
}

func TestK8sTicker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newK8s(t)
		start := c.Now()
		tk := c.NewTicker(10 * time.Millisecond)
		for i := 1; i <= 3; i++ {
			due(t, "tick", recv(t, "tick", tk.C()), start, time.Duration(i)*10*time.Millisecond)
		}
		tk.Stop()
		c.Sleep(50 * time.Millisecond)
		synctest.Wait()
		empty(t, "C after Stop", tk.C())
		tk.Stop() // a second Stop does nothing

		mustPanic(t, "NewTicker(0)", func() { c.NewTicker(0) })
		mustPanic(t, "NewTicker(-1)", func() { c.NewTicker(-1) })
	})
}

func TestK8sTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newK8s(t)
		start := c.Now()
		ch := c.Tick(10 * time.Millisecond)
		due(t, "first tick", recv(t, "first tick", ch), start, 10*time.Millisecond)
		due(t, "second tick", recv(t, "second tick", ch), start, 20*time.Millisecond)
		if c.Tick(0) != nil || c.Tick(-1) != nil {
			t.Error("Tick(d <= 0) != nil, want nil as time.Tick")
		}
	})
}

func TestK8sAfterFunc(t *testing.T) {
	t.Run("Runs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _ := newK8s(t)
			start := c.Now()
			at := make(chan time.Time, 1)
			tm := c.AfterFunc(10*time.Millisecond, func() { at <- time.Now() })
			if tm.C() != nil {
				t.Error("C() of an AfterFunc timer != nil, want nil as time.AfterFunc's")
			}
			if got := recv(t, "AfterFunc(10ms)", at).Sub(start); got < 10*time.Millisecond || got > 10*time.Millisecond+tick {
				t.Errorf("f ran at start+%v, want [10ms, 11ms]", got)
			}
			if tm.Stop() {
				t.Error("Stop after f ran = true, want false")
			}
			// Reset runs f again, as time.Timer.Reset does.
			if tm.Reset(10 * time.Millisecond) {
				t.Error("Reset after f ran = true, want false")
			}
			recv(t, "after Reset", at)
		})
	})
	t.Run("Stop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _ := newK8s(t)
			done := make(chan struct{})
			tm := c.AfterFunc(10*time.Millisecond, func() { close(done) })
			if !tm.Stop() {
				t.Fatal("Stop of a pending AfterFunc = false, want true")
			}
			c.Sleep(20 * time.Millisecond)
			synctest.Wait()
			notRan(t, "after Stop", done)
		})
	})
	t.Run("NilFunc", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _ := newK8s(t)
			mustPanic(t, "AfterFunc(d, nil)", func() { c.AfterFunc(time.Millisecond, nil) })
		})
	})
}

func TestK8sAfterSleepNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newK8s(t)
		var _ clock.PassiveClock = c
		start := c.Now()
		if !start.Equal(time.Now()) {
			t.Errorf("Now = %v, want time.Now() %v", start, time.Now())
		}
		due(t, "After(10ms)", recv(t, "After(10ms)", c.After(10*time.Millisecond)), start, 10*time.Millisecond)

		start = c.Now()
		c.Sleep(10 * time.Millisecond)
		if got := c.Since(start); got < 10*time.Millisecond || got > 10*time.Millisecond+tick {
			t.Errorf("Sleep(10ms) returned after %v, want [10ms, 11ms]", got)
		}
		start = c.Now()
		c.Sleep(0)
		c.Sleep(-time.Second)
		if got := c.Since(start); got != 0 {
			t.Errorf("Sleep(0) and Sleep(-1s) took %v, want 0", got)
		}
	})
}

// TestK8sFallback stops the SystemTimer, or fills WithMaxPending's bound,
// and checks that every call still delivers, on the time package.
func TestK8sFallback(t *testing.T) {
	check := func(t *testing.T, c clock.WithTickerAndDelayedExecution) {
		start := c.Now()
		tm := c.NewTimer(10 * time.Millisecond)
		due(t, "NewTimer", recv(t, "NewTimer", tm.C()), start, 10*time.Millisecond)
		if tm.Reset(10 * time.Millisecond) {
			t.Error("Reset after the value was received = true, want false")
		}
		if !tm.Stop() {
			t.Error("Stop after Reset = false, want true")
		}

		start = c.Now()
		due(t, "After", recv(t, "After", c.After(10*time.Millisecond)), start, 10*time.Millisecond)

		start = c.Now()
		tk := c.NewTicker(10 * time.Millisecond)
		due(t, "first tick", recv(t, "first tick", tk.C()), start, 10*time.Millisecond)
		due(t, "second tick", recv(t, "second tick", tk.C()), start, 20*time.Millisecond)
		tk.Stop()

		done := make(chan struct{})
		c.AfterFunc(10*time.Millisecond, func() { close(done) })
		ran(t, "AfterFunc", done)
		stopped := make(chan struct{})
		if !c.AfterFunc(10*time.Millisecond, func() { close(stopped) }).Stop() {
			t.Error("Stop of a pending AfterFunc = false, want true")
		}

		start = c.Now()
		c.Sleep(10 * time.Millisecond)
		if got := c.Since(start); got != 10*time.Millisecond {
			t.Errorf("Sleep(10ms) took %v", got)
		}
		synctest.Wait()
		notRan(t, "stopped AfterFunc", stopped)
	}
	t.Run("Stopped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, st := newK8s(t)
			st.Stop()
			check(t, c)
		})
	})
	t.Run("MaxPending", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, st := newK8s(t, timingwheel.WithMaxPending(1))
			hold := c.NewTimer(time.Hour) // the bound's one place
			check(t, c)
			if st.Stats().Rejected == 0 {
				t.Error("Stats().Rejected = 0: the wheel refused nothing, so nothing fell back")
			}
			hold.Stop()
		})
	})
	t.Run("Reset", func(t *testing.T) {
		// A timer made on the wheel, Reset after the wheel stopped: it
		// moves to the time package, with a new channel.
		synctest.Test(t, func(t *testing.T) {
			c, st := newK8s(t)
			tm := c.NewTimer(time.Hour)
			done := make(chan struct{})
			ft := c.AfterFunc(time.Hour, func() { close(done) })
			st.Stop()
			start := c.Now()
			if !tm.Reset(10 * time.Millisecond) {
				t.Error("Reset of a pending timer = false, want true")
			}
			due(t, "Reset after Stop", recv(t, "Reset after Stop", tm.C()), start, 10*time.Millisecond)
			ft.Reset(10 * time.Millisecond)
			ran(t, "AfterFunc Reset after Stop", done)
		})
	})
}

// TestK8sRealClock drives the adapter on the real clock, as a k8s
// component does: a poll loop on a ticker, with a timeout timer Reset each
// round, and a retry by AfterFunc.
func TestK8sRealClock(t *testing.T) {
	st := newWheel(t)
	var c clock.WithTickerAndDelayedExecution = twclock.NewK8s(st)

	tk := c.NewTicker(2 * time.Millisecond)
	defer tk.Stop()
	timeout := c.NewTimer(wait)
	defer timeout.Stop()
	start := c.Now()
	for polls := 0; polls < 5; {
		select {
		case v := <-tk.C():
			if v.Before(start) {
				t.Fatalf("tick %v before the ticker was made at %v", v, start)
			}
			polls++
			timeout.Reset(wait)
		case <-timeout.C():
			t.Fatalf("no tick in %v", wait)
		}
	}
	if got := c.Since(start); got < 10*time.Millisecond {
		t.Errorf("5 ticks of 2ms in %v, want at least 10ms", got)
	}

	done := make(chan struct{})
	start = c.Now()
	c.AfterFunc(5*time.Millisecond, func() { close(done) })
	ran(t, "AfterFunc(5ms)", done)
	if got := c.Since(start); got < 5*time.Millisecond {
		t.Errorf("AfterFunc(5ms) ran after %v: early", got)
	}
	start = c.Now()
	c.Sleep(5 * time.Millisecond)
	if got := c.Since(start); got < 5*time.Millisecond {
		t.Errorf("Sleep(5ms) returned after %v: early", got)
	}
}

// TestNilIsDefault: NewK8s(nil) and NewClockwork(nil) run their timers on
// timingwheel.Default, never early, on the real clock.
func TestNilIsDefault(t *testing.T) {
	before := timingwheel.Default().Stats().Armed
	const d = 5 * time.Millisecond
	k := twclock.NewK8s(nil)
	start := time.Now()
	recv(t, "K8s NewTimer(5ms)", k.NewTimer(d).C())
	if got := time.Since(start); got < d {
		t.Errorf("K8s NewTimer(5ms) delivered after %v: early", got)
	}
	cw := twclock.NewClockwork(nil)
	start = time.Now()
	cw.Sleep(d)
	if got := time.Since(start); got < d {
		t.Errorf("Clockwork Sleep(5ms) returned after %v: early", got)
	}
	if after := timingwheel.Default().Stats().Armed; after < before+2 {
		t.Errorf("the default armed %d timers, want the 2 of the adapters at least", after-before)
	}
}
