package twclock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel"
	twclock "github.com/go-timingwheel/timingwheel/contrib/clock"
	"github.com/jonboulle/clockwork"
	"k8s.io/utils/clock"
)

// The behaviour both adapters share, tested on each through its library's
// interface: anyClock is what clock.WithTickerAndDelayedExecution and
// clockwork.Clock have in common, with the channel accessor under one name.
// The wrappers below only rename; what one library has and the other lacks
// (clockwork's Ticker.Reset and Until, k8s's Tick) is tested in
// extras_test.go.
type anyClock interface {
	Now() time.Time
	Since(time.Time) time.Duration
	After(time.Duration) <-chan time.Time
	Sleep(time.Duration)
	NewTimer(time.Duration) anyTimer
	NewTicker(time.Duration) anyTicker
	AfterFunc(time.Duration, func()) anyTimer
}

type anyTimer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(time.Duration) bool
}

type anyTicker interface {
	C() <-chan time.Time
	Stop()
}

// k8sClock holds the k8s adapter as its interface, so that the tests call
// nothing else of it.
type k8sClock struct {
	c clock.WithTickerAndDelayedExecution
}

func (k k8sClock) Now() time.Time                         { return k.c.Now() }
func (k k8sClock) Since(t time.Time) time.Duration        { return k.c.Since(t) }
func (k k8sClock) After(d time.Duration) <-chan time.Time { return k.c.After(d) }
func (k k8sClock) Sleep(d time.Duration)                  { k.c.Sleep(d) }
func (k k8sClock) NewTimer(d time.Duration) anyTimer      { return k.c.NewTimer(d) }

// NewTicker hides the adapter's Reset, which clock.Ticker does not have.
func (k k8sClock) NewTicker(d time.Duration) anyTicker { return k8sTicker{k.c.NewTicker(d)} }
func (k k8sClock) AfterFunc(d time.Duration, f func()) anyTimer {
	return k.c.AfterFunc(d, f)
}

type k8sTicker struct{ clock.Ticker }

// clockworkClock holds the clockwork adapter as its interface.
type clockworkClock struct{ c clockwork.Clock }

func (w clockworkClock) Now() time.Time                         { return w.c.Now() }
func (w clockworkClock) Since(t time.Time) time.Duration        { return w.c.Since(t) }
func (w clockworkClock) After(d time.Duration) <-chan time.Time { return w.c.After(d) }
func (w clockworkClock) Sleep(d time.Duration)                  { w.c.Sleep(d) }
func (w clockworkClock) NewTimer(d time.Duration) anyTimer {
	return clockworkTimer{w.c.NewTimer(d)}
}
func (w clockworkClock) NewTicker(d time.Duration) anyTicker {
	return clockworkTicker{w.c.NewTicker(d)}
}
func (w clockworkClock) AfterFunc(d time.Duration, f func()) anyTimer {
	return clockworkTimer{w.c.AfterFunc(d, f)}
}

type clockworkTimer struct{ clockwork.Timer }

func (t clockworkTimer) C() <-chan time.Time { return t.Chan() }

type clockworkTicker struct{ clockwork.Ticker }

func (t clockworkTicker) C() <-chan time.Time { return t.Chan() }

// adapters lists the two adapters, each made on a given SystemTimer.
var adapters = []struct {
	name string
	make func(*timingwheel.SystemTimer) anyClock
}{
	{"K8s", func(st *timingwheel.SystemTimer) anyClock { return k8sClock{twclock.NewK8s(st)} }},
	{"Clockwork", func(st *timingwheel.SystemTimer) anyClock { return clockworkClock{twclock.NewClockwork(st)} }},
}

// forEachAdapter runs test in a synctest bubble on each adapter, made on a
// new SystemTimer with opts.
func forEachAdapter(t *testing.T, test func(t *testing.T, c anyClock, st *timingwheel.SystemTimer), opts ...timingwheel.Option) {
	t.Helper()
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := newWheel(t, opts...)
				test(t, a.make(st), st)
			})
		})
	}
}

func TestTimer(t *testing.T) {
	t.Run("Fires", func(t *testing.T) {
		forEachAdapter(t, func(t *testing.T, c anyClock, _ *timingwheel.SystemTimer) {
			start := c.Now()
			tm := c.NewTimer(10 * time.Millisecond)
			due(t, "NewTimer(10ms)", tm.C(), start, 10*time.Millisecond)
			if tm.Stop() {
				t.Error("Stop after the value was received = true, want false")
			}
		})
	})
	t.Run("Stop", func(t *testing.T) {
		forEachAdapter(t, func(t *testing.T, c anyClock, _ *timingwheel.SystemTimer) {
			tm := c.NewTimer(10 * time.Millisecond)
			if !tm.Stop() {
				t.Fatal("Stop of a pending timer = false, want true")
			}
			c.Sleep(20 * time.Millisecond)
			synctest.Wait()
			empty(t, "channel after Stop", tm.C())
			if tm.Stop() {
				t.Error("second Stop = true, want false")
			}
		})
	})
	t.Run("StopUnreceived", func(t *testing.T) {
		// Go 1.23: a value delivered and not received counts as pending,
		// and Stop takes it back.
		forEachAdapter(t, func(t *testing.T, c anyClock, _ *timingwheel.SystemTimer) {
			tm := c.NewTimer(10 * time.Millisecond)
			c.Sleep(20 * time.Millisecond)
			synctest.Wait()
			if !tm.Stop() {
				t.Fatal("Stop of a timer that fired unreceived = false, want true")
			}
			empty(t, "channel after Stop", tm.C())
		})
	})
	t.Run("Reset", func(t *testing.T) {
		forEachAdapter(t, func(t *testing.T, c anyClock, _ *timingwheel.SystemTimer) {
			start := c.Now()
			tm := c.NewTimer(time.Hour)
			if !tm.Reset(10 * time.Millisecond) {
				t.Error("Reset of a pending timer = false, want true")
			}
			due(t, "Reset(10ms)", tm.C(), start, 10*time.Millisecond)
			if tm.Reset(10 * time.Millisecond) {
				t.Error("Reset after the value was received = true, want false")
			}
			due(t, "second Reset(10ms)", tm.C(), start, 20*time.Millisecond)
		})
	})
	t.Run("ResetNoStaleValue", func(t *testing.T) {
		// The loop of a consumer that Resets without draining the
		// channel: the value from before the Reset is not received after
		// it.
		forEachAdapter(t, func(t *testing.T, c anyClock, _ *timingwheel.SystemTimer) {
			start := c.Now()
			tm := c.NewTimer(10 * time.Millisecond)
			c.Sleep(20 * time.Millisecond)
			synctest.Wait()
			if !tm.Reset(30 * time.Millisecond) {
				t.Error("Reset of a timer that fired unreceived = false, want true")
			}
			due(t, "after Reset(30ms)", tm.C(), start, 50*time.Millisecond)
			if tm.Reset(10 * time.Millisecond) {
				t.Error("Reset after the value was received = true, want false")
			}
			if !tm.Stop() {
				t.Error("Stop after Reset = false, want true")
			}
		})
	})
	t.Run("ZeroDuration", func(t *testing.T) {
		forEachAdapter(t, func(t *testing.T, c anyClock, _ *timingwheel.SystemTimer) {
			start := c.Now()
			tm := c.NewTimer(0)
			due(t, "NewTimer(0)", tm.C(), start, 0)
		})
	})
}

func TestTicker(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, c anyClock, _ *timingwheel.SystemTimer) {
		start := c.Now()
		tk := c.NewTicker(10 * time.Millisecond)
		for i := 1; i <= 3; i++ {
			due(t, "tick", tk.C(), start, time.Duration(i)*10*time.Millisecond)
		}
		tk.Stop()
		c.Sleep(50 * time.Millisecond)
		synctest.Wait()
		empty(t, "channel after Stop", tk.C())
		tk.Stop() // a second Stop does nothing

		mustPanic(t, "NewTicker(0)", func() { c.NewTicker(0) })
		mustPanic(t, "NewTicker(-1)", func() { c.NewTicker(-1) })
	})
}

func TestAfterFunc(t *testing.T) {
	t.Run("Runs", func(t *testing.T) {
		forEachAdapter(t, func(t *testing.T, c anyClock, _ *timingwheel.SystemTimer) {
			start := c.Now()
			at := make(chan time.Time, 1)
			tm := c.AfterFunc(10*time.Millisecond, func() { at <- time.Now() })
			if tm.C() != nil {
				t.Error("the channel of an AfterFunc timer != nil, want nil as time.AfterFunc's")
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
		forEachAdapter(t, func(t *testing.T, c anyClock, _ *timingwheel.SystemTimer) {
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
		forEachAdapter(t, func(t *testing.T, c anyClock, _ *timingwheel.SystemTimer) {
			mustPanic(t, "AfterFunc(d, nil)", func() { c.AfterFunc(time.Millisecond, nil) })
		})
	})
}

func TestAfterSleepNow(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, c anyClock, _ *timingwheel.SystemTimer) {
		start := c.Now()
		if !start.Equal(time.Now()) {
			t.Errorf("Now = %v, want time.Now() %v", start, time.Now())
		}
		due(t, "After(10ms)", c.After(10*time.Millisecond), start, 10*time.Millisecond)

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

// resettable is a ticker with Reset: clockwork's, not k8s's.
type resettable interface{ Reset(time.Duration) }

// TestFallback stops the SystemTimer, or fills WithMaxPending's bound, and
// checks that every call still delivers, on the time package.
func TestFallback(t *testing.T) {
	check := func(t *testing.T, c anyClock) {
		start := c.Now()
		tm := c.NewTimer(10 * time.Millisecond)
		due(t, "NewTimer", tm.C(), start, 10*time.Millisecond)
		if tm.Reset(10 * time.Millisecond) {
			t.Error("Reset after the value was received = true, want false")
		}
		if !tm.Stop() {
			t.Error("Stop after Reset = false, want true")
		}

		start = c.Now()
		due(t, "After", c.After(10*time.Millisecond), start, 10*time.Millisecond)

		start = c.Now()
		tk := c.NewTicker(10 * time.Millisecond)
		due(t, "first tick", tk.C(), start, 10*time.Millisecond)
		due(t, "second tick", tk.C(), start, 20*time.Millisecond)
		if r, ok := tk.(resettable); ok {
			r.Reset(20 * time.Millisecond)
			due(t, "tick after Reset", tk.C(), start, 40*time.Millisecond)
		}
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
		forEachAdapter(t, func(t *testing.T, c anyClock, st *timingwheel.SystemTimer) {
			st.Stop()
			check(t, c)
		})
	})
	t.Run("MaxPending", func(t *testing.T) {
		forEachAdapter(t, func(t *testing.T, c anyClock, st *timingwheel.SystemTimer) {
			hold := c.NewTimer(time.Hour) // the bound's one place
			check(t, c)
			if st.Stats().Rejected == 0 {
				t.Error("Stats().Rejected = 0: the wheel refused nothing, so nothing fell back")
			}
			hold.Stop()
		}, timingwheel.WithMaxPending(1))
	})
	t.Run("Reset", func(t *testing.T) {
		// Timers made on the wheel, Reset after the wheel stopped: the
		// channel timer goes on, on the clock's timers (the wheel's
		// ChanTimer outlives it), with the same channel; the AfterFunc
		// timer moves to time.AfterFunc.
		forEachAdapter(t, func(t *testing.T, c anyClock, st *timingwheel.SystemTimer) {
			tm := c.NewTimer(time.Hour)
			done := make(chan struct{})
			ft := c.AfterFunc(time.Hour, func() { close(done) })
			st.Stop()
			start := c.Now()
			if !tm.Reset(10 * time.Millisecond) {
				t.Error("Reset of a pending timer = false, want true")
			}
			due(t, "Reset after Stop", tm.C(), start, 10*time.Millisecond)
			ft.Reset(10 * time.Millisecond)
			ran(t, "AfterFunc Reset after Stop", done)
		})
	})
}

// TestRealClock drives each adapter on the real clock, as a k8s component
// does: a poll loop on a ticker, with a timeout timer Reset each round, and
// a retry by AfterFunc.
func TestRealClock(t *testing.T) {
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			c := a.make(newWheel(t))

			start := c.Now()
			tm := c.NewTimer(5 * time.Millisecond)
			defer tm.Stop()
			if v := recv(t, "NewTimer(5ms)", tm.C()); v.Sub(start) < 5*time.Millisecond {
				t.Errorf("NewTimer(5ms) delivered %v after start: early", v.Sub(start))
			}

			tk := c.NewTicker(2 * time.Millisecond)
			defer tk.Stop()
			timeout := c.NewTimer(wait)
			defer timeout.Stop()
			start = c.Now()
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
			if r, ok := tk.(resettable); ok {
				r.Reset(time.Millisecond)
				recv(t, "tick after Reset", tk.C())
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
		})
	}
}

// TestNilIsDefault: NewK8s(nil) and NewClockwork(nil) run their timers on
// timingwheel.Default, never early, on the real clock.
func TestNilIsDefault(t *testing.T) {
	before := timingwheel.Default().Stats().Armed
	const d = 5 * time.Millisecond
	for _, a := range adapters {
		c := a.make(nil)
		start := time.Now()
		recv(t, a.name+" NewTimer(5ms)", c.NewTimer(d).C())
		if got := time.Since(start); got < d {
			t.Errorf("%s NewTimer(5ms) delivered after %v: early", a.name, got)
		}
		start = time.Now()
		c.Sleep(d)
		if got := time.Since(start); got < d {
			t.Errorf("%s Sleep(5ms) returned after %v: early", a.name, got)
		}
	}
	if after := timingwheel.Default().Stats().Armed; after < before+4 {
		t.Errorf("the default armed %d timers, want the 4 of the adapters at least", after-before)
	}
}
