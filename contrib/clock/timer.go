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

// A fallbackTimer is a timer W of the wheel or, once the wheel refused to
// arm it, a time.Timer, made by newStd.
type fallbackTimer[W interface {
	Stop() bool
	TryReset(time.Duration) (bool, error)
}] struct {
	// mu guards wheel and std: a Reset the wheel refuses replaces the
	// first by the second, and C must not read the one being replaced.
	// Held only around calls that neither block nor run user code.
	mu     sync.Mutex
	wheel  W // the zero W when std is set
	std    *time.Timer
	newStd func(time.Duration) *time.Timer // immutable
}

// Stop is time.Timer.Stop: if it returns true, the timer does not fire.
func (t *fallbackTimer[W]) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.std != nil {
		return t.std.Stop()
	}
	return t.wheel.Stop()
}

// Reset is time.Timer.Reset. If the wheel cannot arm the timer, it
// becomes a time.Timer (a chanTimer's with a new channel).
func (t *fallbackTimer[W]) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.std != nil {
		return t.std.Reset(d)
	}
	// A ChanTimer's TryReset drains its channel before it fails: no value
	// from before is left there for a caller that still holds it.
	was, err := t.wheel.TryReset(d)
	if err != nil {
		var zero W
		t.wheel, t.std = zero, t.newStd(d)
	}
	return was
}

// A chanTimer is a ChanTimer of the wheel or, once the wheel refused to
// arm it, a time.Timer.
type chanTimer struct {
	fallbackTimer[*timingwheel.ChanTimer]
}

func newChanTimer(st *timingwheel.SystemTimer, d time.Duration) *chanTimer {
	t := &chanTimer{fallbackTimer[*timingwheel.ChanTimer]{newStd: time.NewTimer}}
	wt, err := st.NewTimer(d)
	if err != nil {
		t.std = t.newStd(d)
	} else {
		t.wheel = wt
	}
	return t
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

// A ticker is a Ticker of the wheel or, once the wheel refused to arm it,
// a time.Ticker.
type ticker struct {
	mu    sync.Mutex // guards wheel and std, as fallbackTimer.mu does
	wheel *timingwheel.Ticker
	std   *time.Ticker
}

func newTicker(st *timingwheel.SystemTimer, d time.Duration) *ticker {
	if d <= 0 {
		panic("non-positive interval for NewTicker") // time.NewTicker's
	}
	wt, err := st.NewTicker(d)
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
	if d <= 0 {
		panic("non-positive interval for Ticker.Reset") // time.Ticker.Reset's
	}
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
	fallbackTimer[*timingwheel.Timer]
}

func newFuncTimer(st *timingwheel.SystemTimer, d time.Duration, f func()) *funcTimer {
	if f == nil {
		// time.AfterFunc takes a nil f and crashes the program when the
		// timer fires; the wheel refuses it. Neither is worth imitating.
		panic("twclock: AfterFunc: nil func")
	}
	t := &funcTimer{fallbackTimer[*timingwheel.Timer]{
		newStd: func(d time.Duration) *time.Timer { return time.AfterFunc(d, f) },
	}}
	wt, err := st.AfterFunc(d, f)
	if err != nil {
		t.std = t.newStd(d)
	} else {
		t.wheel = wt
	}
	return t
}

// C returns nil, as the C of a time.Timer made by time.AfterFunc is.
func (t *funcTimer) C() <-chan time.Time { return nil }

// Chan is C, by clockwork's name.
func (t *funcTimer) Chan() <-chan time.Time { return nil }
