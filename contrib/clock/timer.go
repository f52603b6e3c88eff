package twclock

import (
	"sync"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/jonboulle/clockwork"
	"k8s.io/utils/clock"
)

// The timers and tickers both adapters return: each has both libraries'
// channel accessors.
var (
	_ clock.Timer      = (*chanTimer)(nil)
	_ clockwork.Timer  = (*chanTimer)(nil)
	_ clock.Ticker     = (*ticker)(nil)
	_ clockwork.Ticker = (*ticker)(nil)
	_ clock.Timer      = (*funcTimer)(nil)
	_ clockwork.Timer  = (*funcTimer)(nil)
)

// A chanTimer is a ChanTimer of the wheel or, once the wheel refused to
// arm it, a time.Timer.
type chanTimer struct {
	// mu guards wheel and std: a Reset the wheel refuses replaces the
	// first by the second, and C must not read the one being replaced.
	// Held only around calls that neither block nor run user code.
	mu    sync.Mutex
	wheel *timingwheel.ChanTimer // nil when std is set
	std   *time.Timer
}

func newChanTimer(st *timingwheel.SystemTimer, d time.Duration) *chanTimer {
	wt, err := st.NewTimer(d)
	if err != nil {
		return &chanTimer{std: time.NewTimer(d)}
	}
	return &chanTimer{wheel: wt}
}

// C returns the channel on which the time is delivered.
func (t *chanTimer) C() <-chan time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.std != nil {
		return t.std.C
	}
	return t.wheel.C
}

// Chan is C, by clockwork's name.
func (t *chanTimer) Chan() <-chan time.Time { return t.C() }

// Stop is time.Timer.Stop.
func (t *chanTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.std != nil {
		return t.std.Stop()
	}
	return t.wheel.Stop()
}

// Reset is time.Timer.Reset. If the wheel cannot arm the timer, it
// becomes a time.Timer, with a new channel.
func (t *chanTimer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.std != nil {
		return t.std.Reset(d)
	}
	// TryReset drains the wheel's channel before it fails: no value from
	// before is left there for a caller that still holds it.
	was, err := t.wheel.TryReset(d)
	if err != nil {
		t.wheel, t.std = nil, time.NewTimer(d)
	}
	return was
}

// A ticker is a Ticker of the wheel or, once the wheel refused to arm it,
// a time.Ticker.
type ticker struct {
	mu    sync.Mutex // guards wheel and std, as chanTimer.mu does
	wheel *timingwheel.Ticker
	std   *time.Ticker
}

func newTicker(st *timingwheel.SystemTimer, d time.Duration) *ticker {
	wt, err := st.NewTicker(d) // panics if d <= 0, as time.NewTicker does
	if err != nil {
		return &ticker{std: time.NewTicker(d)}
	}
	return &ticker{wheel: wt}
}

// C returns the channel on which the ticks are delivered.
func (t *ticker) C() <-chan time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.std != nil {
		return t.std.C
	}
	return t.wheel.C
}

// Chan is C, by clockwork's name.
func (t *ticker) Chan() <-chan time.Time { return t.C() }

// Stop is time.Ticker.Stop.
func (t *ticker) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.std != nil {
		t.std.Stop()
		return
	}
	t.wheel.Stop()
}

// Reset is time.Ticker.Reset: it panics if d <= 0. If the wheel cannot
// arm the ticker, it becomes a time.Ticker, with a new channel.
func (t *ticker) Reset(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.std != nil {
		t.std.Reset(d)
		return
	}
	if err := t.wheel.TryReset(d); err != nil {
		t.wheel, t.std = nil, time.NewTicker(d)
	}
}

// A funcTimer is a Timer of the wheel that runs f or, once the wheel
// refused to arm it, a time.Timer made by time.AfterFunc.
type funcTimer struct {
	f     func()
	mu    sync.Mutex // guards wheel and std, as chanTimer.mu does
	wheel *timingwheel.Timer
	std   *time.Timer
}

func newFuncTimer(st *timingwheel.SystemTimer, d time.Duration, f func()) *funcTimer {
	if f == nil {
		// time.AfterFunc takes a nil f and crashes the program when the
		// timer fires; the wheel refuses it. Neither is worth imitating.
		panic("twclock: AfterFunc: nil func")
	}
	wt, err := st.AfterFunc(d, f)
	if err != nil {
		return &funcTimer{f: f, std: time.AfterFunc(d, f)}
	}
	return &funcTimer{f: f, wheel: wt}
}

// C returns nil, as the C of a time.Timer made by time.AfterFunc is.
func (t *funcTimer) C() <-chan time.Time { return nil }

// Chan is C, by clockwork's name.
func (t *funcTimer) Chan() <-chan time.Time { return nil }

// Stop is time.Timer.Stop: if it returns true, f does not run.
func (t *funcTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.std != nil {
		return t.std.Stop()
	}
	return t.wheel.Stop()
}

// Reset is time.Timer.Reset: f runs once d has elapsed, whether it ran
// before or not. If the wheel cannot arm the timer, time.AfterFunc does.
func (t *funcTimer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.std != nil {
		return t.std.Reset(d)
	}
	was, err := t.wheel.TryReset(d)
	if err != nil {
		t.wheel, t.std = nil, time.AfterFunc(d, t.f)
	}
	return was
}
