package twclock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel"
	twclock "github.com/go-timingwheel/timingwheel/contrib/clock"
	"github.com/jonboulle/clockwork"
)

func newClockwork(t *testing.T, opts ...timingwheel.Option) (clockwork.Clock, *timingwheel.SystemTimer) {
	st := newWheel(t, opts...)
	return twclock.NewClockwork(st), st
}

func TestClockworkTimer(t *testing.T) {
	t.Run("Fires", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _ := newClockwork(t)
			start := c.Now()
			tm := c.NewTimer(10 * time.Millisecond)
			due(t, "NewTimer(10ms)", recv(t, "NewTimer(10ms)", tm.Chan()), start, 10*time.Millisecond)
			if tm.Stop() {
				t.Error("Stop after the value was received = true, want false")
			}
		})
	})
	t.Run("Stop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _ := newClockwork(t)
			tm := c.NewTimer(10 * time.Millisecond)
			if !tm.Stop() {
				t.Fatal("Stop of a pending timer = false, want true")
			}
			c.Sleep(20 * time.Millisecond)
			synctest.Wait()
			empty(t, "Chan after Stop", tm.Chan())
		})
	})
	t.Run("Reset", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _ := newClockwork(t)
			start := c.Now()
			tm := c.NewTimer(10 * time.Millisecond)
			c.Sleep(20 * time.Millisecond)
			synctest.Wait()
			if !tm.Reset(30 * time.Millisecond) {
				t.Error("Reset of a timer that fired unreceived = false, want true")
			}
			due(t, "after Reset(30ms)", recv(t, "after Reset(30ms)", tm.Chan()), start, 50*time.Millisecond)
			if tm.Reset(10 * time.Millisecond) {
				t.Error("Reset after the value was received = true, want false")
			}
			if !tm.Stop() {
				t.Error("Stop after Reset = false, want true")
			}
		})
	})
}

func TestClockworkTicker(t *testing.T) {
	t.Run("TicksAndStop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, _ := newClockwork(t)
			start := c.Now()
			tk := c.NewTicker(10 * time.Millisecond)
			for i := 1; i <= 3; i++ {
				due(t, "tick", recv(t, "tick", tk.Chan()), start, time.Duration(i)*10*time.Millisecond)
			}
			tk.Stop()
			c.Sleep(50 * time.Millisecond)
			synctest.Wait()
			empty(t, "Chan after Stop", tk.Chan())
		})
	})
	t.Run("Reset", func(t *testing.T) {
		// Reset changes the period, as time.Ticker.Reset does: the next
		// tick is d from the Reset, and the ones after d apart.
		synctest.Test(t, func(t *testing.T) {
			c, _ := newClockwork(t)
			start := c.Now()
			tk := c.NewTicker(100 * time.Millisecond)
			c.Sleep(150 * time.Millisecond)
			synctest.Wait()
			tk.Reset(30 * time.Millisecond) // takes back the tick at 100ms
			empty(t, "Chan after Reset", tk.Chan())
			due(t, "first tick after Reset", recv(t, "first tick after Reset", tk.Chan()), start, 180*time.Millisecond)
			due(t, "second tick after Reset", recv(t, "second tick after Reset", tk.Chan()), start, 210*time.Millisecond)
			tk.Stop()
			// Reset after Stop starts it again.
			start = c.Now()
			tk.Reset(10 * time.Millisecond)
			due(t, "tick after Stop and Reset", recv(t, "tick after Stop and Reset", tk.Chan()), start, 10*time.Millisecond)
			tk.Stop()

			mustPanic(t, "Ticker.Reset(0)", func() { tk.Reset(0) })
			mustPanic(t, "NewTicker(0)", func() { c.NewTicker(0) })
		})
	})
}

func TestClockworkAfterFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newClockwork(t)
		done := make(chan struct{})
		tm := c.AfterFunc(10*time.Millisecond, func() { close(done) })
		if tm.Chan() != nil {
			t.Error("Chan() of an AfterFunc timer != nil, want nil as time.AfterFunc's")
		}
		ran(t, "AfterFunc(10ms)", done)

		stopped := make(chan struct{})
		if !c.AfterFunc(10*time.Millisecond, func() { close(stopped) }).Stop() {
			t.Fatal("Stop of a pending AfterFunc = false, want true")
		}
		c.Sleep(20 * time.Millisecond)
		synctest.Wait()
		notRan(t, "after Stop", stopped)
		mustPanic(t, "AfterFunc(d, nil)", func() { c.AfterFunc(time.Millisecond, nil) })
	})
}

func TestClockworkAfterSleepNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newClockwork(t)
		start := c.Now()
		due(t, "After(10ms)", recv(t, "After(10ms)", c.After(10*time.Millisecond)), start, 10*time.Millisecond)
		start = c.Now()
		c.Sleep(10 * time.Millisecond)
		if got := c.Since(start); got < 10*time.Millisecond || got > 10*time.Millisecond+tick {
			t.Errorf("Sleep(10ms) returned after %v, want [10ms, 11ms]", got)
		}
		if got := c.Until(c.Now().Add(time.Minute)); got != time.Minute {
			t.Errorf("Until(Now()+1m) = %v, want 1m", got)
		}
	})
}

// TestClockworkContext uses the adapter where clockwork's own helpers take
// a Clock: for a clock other than its FakeClock, WithTimeout is
// context.WithTimeout (see the package doc).
func TestClockworkContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newClockwork(t)
		ctx := clockwork.AddToContext(context.Background(), c)
		if clockwork.FromContext(ctx) != c {
			t.Fatal("FromContext did not return the adapter")
		}
		ctx, cancel := clockwork.WithTimeout(ctx, c, 10*time.Millisecond)
		defer cancel()
		<-ctx.Done()
		if ctx.Err() != context.DeadlineExceeded {
			t.Errorf("Err = %v, want DeadlineExceeded", ctx.Err())
		}
	})
}

// TestClockworkFallback checks that calls the wheel refuses still deliver,
// on the time package: after the SystemTimer's Stop, and beyond
// WithMaxPending's bound.
func TestClockworkFallback(t *testing.T) {
	check := func(t *testing.T, c clockwork.Clock) {
		start := c.Now()
		tm := c.NewTimer(10 * time.Millisecond)
		due(t, "NewTimer", recv(t, "NewTimer", tm.Chan()), start, 10*time.Millisecond)

		start = c.Now()
		tk := c.NewTicker(10 * time.Millisecond)
		due(t, "tick", recv(t, "tick", tk.Chan()), start, 10*time.Millisecond)
		tk.Reset(20 * time.Millisecond)
		due(t, "tick after Reset", recv(t, "tick after Reset", tk.Chan()), start, 30*time.Millisecond)
		tk.Stop()

		done := make(chan struct{})
		c.AfterFunc(10*time.Millisecond, func() { close(done) })
		ran(t, "AfterFunc", done)

		start = c.Now()
		due(t, "After", recv(t, "After", c.After(10*time.Millisecond)), start, 10*time.Millisecond)
	}
	t.Run("Stopped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, st := newClockwork(t)
			st.Stop()
			check(t, c)
		})
	})
	t.Run("MaxPending", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, st := newClockwork(t, timingwheel.WithMaxPending(1))
			hold := c.NewTimer(time.Hour)
			check(t, c)
			if st.Stats().Rejected == 0 {
				t.Error("Stats().Rejected = 0: the wheel refused nothing, so nothing fell back")
			}
			hold.Stop()
		})
	})
	t.Run("TickerReset", func(t *testing.T) {
		// A ticker on the wheel when the wheel stops ticks no more; a
		// Reset moves it to the time package, with a new channel.
		synctest.Test(t, func(t *testing.T) {
			c, st := newClockwork(t)
			start := c.Now()
			tk := c.NewTicker(10 * time.Millisecond)
			due(t, "tick", recv(t, "tick", tk.Chan()), start, 10*time.Millisecond)
			st.Stop()
			start = c.Now()
			tk.Reset(10 * time.Millisecond)
			due(t, "tick after Reset", recv(t, "tick after Reset", tk.Chan()), start, 10*time.Millisecond)
			due(t, "second tick after Reset", recv(t, "second tick after Reset", tk.Chan()), start, 20*time.Millisecond)
			tk.Stop()
		})
	})
}

// TestClockworkRealClock drives the adapter on the real clock.
func TestClockworkRealClock(t *testing.T) {
	st := newWheel(t)
	var c clockwork.Clock = twclock.NewClockwork(st)

	start := c.Now()
	tm := c.NewTimer(5 * time.Millisecond)
	defer tm.Stop()
	if v := recv(t, "NewTimer(5ms)", tm.Chan()); v.Sub(start) < 5*time.Millisecond {
		t.Errorf("NewTimer(5ms) delivered %v after start: early", v.Sub(start))
	}
	tk := c.NewTicker(2 * time.Millisecond)
	defer tk.Stop()
	for range 3 {
		recv(t, "tick", tk.Chan())
	}
	tk.Reset(time.Millisecond)
	recv(t, "tick after Reset", tk.Chan())

	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(done) })
	ran(t, "AfterFunc(1ms)", done)
}
