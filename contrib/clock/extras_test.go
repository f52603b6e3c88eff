package twclock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	twclock "github.com/go-timingwheel/timingwheel/contrib/clock"
	"github.com/jonboulle/clockwork"
	"k8s.io/utils/clock"
)

// What one library has and the other lacks: clockwork's Ticker.Reset and
// Until, k8s's Tick. adapters_test.go tests the rest on both adapters.

func TestClockworkTickerReset(t *testing.T) {
	// Reset changes the period, as time.Ticker.Reset does: the next
	// tick is d from the Reset, and the ones after d apart.
	synctest.Test(t, func(t *testing.T) {
		var c clockwork.Clock = twclock.NewClockwork(newWheel(t))
		start := c.Now()
		tk := c.NewTicker(100 * time.Millisecond)
		c.Sleep(150 * time.Millisecond)
		synctest.Wait()
		tk.Reset(30 * time.Millisecond) // takes back the tick at 100ms
		empty(t, "Chan after Reset", tk.Chan())
		due(t, "first tick after Reset", tk.Chan(), start, 180*time.Millisecond)
		due(t, "second tick after Reset", tk.Chan(), start, 210*time.Millisecond)
		tk.Stop()
		// Reset after Stop starts it again.
		start = c.Now()
		tk.Reset(10 * time.Millisecond)
		due(t, "tick after Stop and Reset", tk.Chan(), start, 10*time.Millisecond)
		tk.Stop()

		mustPanic(t, "Ticker.Reset(0)", func() { tk.Reset(0) })
	})
}

// TestClockworkTickerResetFallback: a ticker on the wheel when the wheel
// stops goes on, on the clock's timers, and a Reset after that delivers on
// the same channel.
func TestClockworkTickerResetFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newWheel(t)
		var c clockwork.Clock = twclock.NewClockwork(st)
		start := c.Now()
		tk := c.NewTicker(10 * time.Millisecond)
		due(t, "tick", tk.Chan(), start, 10*time.Millisecond)
		st.Stop()
		start = c.Now()
		tk.Reset(10 * time.Millisecond)
		due(t, "tick after Reset", tk.Chan(), start, 10*time.Millisecond)
		due(t, "second tick after Reset", tk.Chan(), start, 20*time.Millisecond)
		tk.Stop()
	})
}

func TestClockworkUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c clockwork.Clock = twclock.NewClockwork(newWheel(t))
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
		var c clockwork.Clock = twclock.NewClockwork(newWheel(t))
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

func TestK8sTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c clock.WithTickerAndDelayedExecution = twclock.NewK8s(newWheel(t))
		var _ clock.PassiveClock = c
		start := c.Now()
		ch := c.Tick(10 * time.Millisecond)
		due(t, "first tick", ch, start, 10*time.Millisecond)
		due(t, "second tick", ch, start, 20*time.Millisecond)
		if c.Tick(0) != nil || c.Tick(-1) != nil {
			t.Error("Tick(d <= 0) != nil, want nil as time.Tick")
		}
	})
}

// TestTickerPanicsAsTimeDoes: NewTicker, and clockwork's Ticker.Reset, with
// a period d <= 0 panic with package time's own messages, as the real
// clocks do (they were the wheel's, prefixed "timingwheel:").
func TestTickerPanicsAsTimeDoes(t *testing.T) {
	st := newWheel(t)
	recovered := func(f func()) (v any) {
		defer func() { v = recover() }()
		f()
		return nil
	}
	want := recovered(func() { time.NewTicker(0) })
	if got := recovered(func() { twclock.NewK8s(st).NewTicker(0) }); got != want {
		t.Errorf("K8s NewTicker(0): panic %v, want %v", got, want)
	}
	if got := recovered(func() { twclock.NewClockwork(st).NewTicker(-1) }); got != want {
		t.Errorf("Clockwork NewTicker(-1): panic %v, want %v", got, want)
	}
	tk := twclock.NewClockwork(st).NewTicker(time.Hour)
	defer tk.Stop()
	want = recovered(func() { time.NewTicker(time.Hour).Reset(0) })
	if got := recovered(func() { tk.Reset(0) }); got != want {
		t.Errorf("Clockwork Ticker.Reset(0): panic %v, want %v", got, want)
	}
}
