package twclock

import (
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/jonboulle/clockwork"
	"k8s.io/utils/clock"
)

var (
	_ clock.PassiveClock                  = (*K8s)(nil)
	_ clock.WithTickerAndDelayedExecution = (*K8s)(nil)
	_ clockwork.Clock                     = (*Clockwork)(nil)
)

// K8s is a k8s.io/utils/clock clock whose timers run on a SystemTimer:
// a clock.WithTickerAndDelayedExecution, and so a clock.Clock,
// clock.WithTicker, clock.WithDelayedExecution and clock.PassiveClock.
type K8s struct {
	st *timingwheel.SystemTimer
}

// NewK8s returns a K8s clock whose timers run on st, or on
// timingwheel.Default if st is nil.
func NewK8s(st *timingwheel.SystemTimer) *K8s { return &K8s{st: orDefault(st)} }

// Now returns time.Now().
func (c *K8s) Now() time.Time { return time.Now() }

// Since returns time.Since(t).
func (c *K8s) Since(t time.Time) time.Duration { return time.Since(t) }

// After is the SystemTimer's After: its timer stays pending until it fires,
// as the clock.Clock interface warns; in a loop, Reset a timer from
// NewTimer instead.
func (c *K8s) After(d time.Duration) <-chan time.Time { return c.st.After(d) }

// NewTimer returns a timer on the wheel that delivers the time on C() once
// d has elapsed.
func (c *K8s) NewTimer(d time.Duration) clock.Timer { return newChanTimer(c.st, d) }

// Sleep waits on the wheel for d to elapse.
func (c *K8s) Sleep(d time.Duration) { sleep(c.st, d) }

// Tick is the SystemTimer's Tick: for a ticker never stopped. It returns
// nil if d <= 0.
func (c *K8s) Tick(d time.Duration) <-chan time.Time { return c.st.Tick(d) }

// NewTicker returns a ticker on the wheel that delivers the time on C()
// every d. It panics if d <= 0.
func (c *K8s) NewTicker(d time.Duration) clock.Ticker { return newTicker(c.st, d) }

// AfterFunc runs f on the wheel's executor pool once d has elapsed. The
// Timer's C() is nil. It panics if f is nil.
func (c *K8s) AfterFunc(d time.Duration, f func()) clock.Timer {
	return newFuncTimer(c.st, d, f)
}

// Clockwork is a github.com/jonboulle/clockwork Clock whose timers run on a
// SystemTimer.
type Clockwork struct {
	st *timingwheel.SystemTimer
}

// NewClockwork returns a Clockwork clock whose timers run on st, or on
// timingwheel.Default if st is nil.
func NewClockwork(st *timingwheel.SystemTimer) *Clockwork { return &Clockwork{st: orDefault(st)} }

// orDefault is st, or timingwheel.Default if st is nil: the SystemTimer
// both adapters' constructors take.
func orDefault(st *timingwheel.SystemTimer) *timingwheel.SystemTimer {
	if st == nil {
		return timingwheel.Default()
	}
	return st
}

// After is the SystemTimer's After: its timer stays pending until it fires;
// in a loop, Reset a timer from NewTimer instead.
func (c *Clockwork) After(d time.Duration) <-chan time.Time { return c.st.After(d) }

// Sleep waits on the wheel for d to elapse.
func (c *Clockwork) Sleep(d time.Duration) { sleep(c.st, d) }

// Now returns time.Now().
func (c *Clockwork) Now() time.Time { return time.Now() }

// Since returns time.Since(t).
func (c *Clockwork) Since(t time.Time) time.Duration { return time.Since(t) }

// Until returns time.Until(t).
func (c *Clockwork) Until(t time.Time) time.Duration { return time.Until(t) }

// NewTicker returns a ticker on the wheel that delivers the time on Chan()
// every d. It panics if d <= 0.
func (c *Clockwork) NewTicker(d time.Duration) clockwork.Ticker { return newTicker(c.st, d) }

// NewTimer returns a timer on the wheel that delivers the time on Chan()
// once d has elapsed.
func (c *Clockwork) NewTimer(d time.Duration) clockwork.Timer { return newChanTimer(c.st, d) }

// AfterFunc runs f on the wheel's executor pool once d has elapsed. The
// Timer's Chan() is nil. It panics if f is nil.
func (c *Clockwork) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	return newFuncTimer(c.st, d, f)
}

// sleep is Sleep: a receive from the wheel's After, which falls back to
// time.After where the wheel cannot arm a timer.
func sleep(st *timingwheel.SystemTimer, d time.Duration) {
	if d <= 0 {
		return // as time.Sleep: no timer to make
	}
	<-st.After(d)
}
