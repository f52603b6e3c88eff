package timingwheel

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/defaulttimer"
)

// The package-level functions below have the signatures of the time and
// context packages' functions of the same names, so that a program moves
// its timers to the wheel by changing an import: time.AfterFunc becomes
// timingwheel.AfterFunc, context.WithTimeout timingwheel.WithTimeout. They
// run on one SystemTimer, the default, that Default returns.
//
// The default is made on first use, with the default options, and never
// stops: a program that never calls these functions starts no goroutine for
// them, and one that does pays one driver goroutine and a worker per
// processor for the rest of its life, as the runtime keeps its own timer
// machinery. Since it never stops and has no WithMaxPending bound, the
// errors a SystemTimer's methods return cannot happen on it: the functions
// return none, as the time package's do, and would panic, naming the error,
// if one did.
//
// The default is kept behind an atomic pointer rather than a sync.Once, so
// that the package's tests can give each synctest bubble a default of its
// own and stop it (see useDefault in the tests, and defaulttimer).
var defaultTimer struct {
	st atomic.Pointer[SystemTimer]
	mu sync.Mutex // serializes the making of the default
}

// Default returns the SystemTimer that the package-level functions use,
// made on the first call with the default options: for its Stats, or to
// publish it with expvarstats or contrib/prometheus.
//
// What a SystemTimer made by New has that the default has not: options
// (a tick, a bound on pending timers, a number of workers, a panic handler,
// a clock for tests) and Stop, which ends its goroutines and returns the
// timers that never ran. Stop panics on the default, which other packages
// of the program share. Make your own with New where you need any of them:
// a subsystem that shuts down on its own, a bound to shed load, a mock clock.
func Default() *SystemTimer {
	if st := defaultTimer.st.Load(); st != nil {
		return st
	}
	defaultTimer.mu.Lock()
	defer defaultTimer.mu.Unlock()
	if st := defaultTimer.st.Load(); st != nil {
		return st
	}
	st, err := New()
	if err != nil {
		panic("timingwheel: making the default SystemTimer: " + err.Error()) // cannot happen: no options
	}
	st.isDefault = true
	defaultTimer.st.Store(st)
	return st
}

func init() { defaulttimer.Stop = stopDefault }

// stopDefault stops the default, if it was made, and forgets it, so that
// the next use makes another: for the tests of this package and of the
// packages built on it, whose goleak checks would report its goroutines.
func stopDefault() {
	defaultTimer.mu.Lock()
	st := defaultTimer.st.Swap(nil)
	defaultTimer.mu.Unlock()
	if st != nil {
		st.stop()
	}
}

// mustArm panics if err, which the default cannot return, is not nil.
func mustArm(name string, err error) {
	if err != nil {
		panic(fmt.Sprintf("timingwheel: %s on the default SystemTimer: %v (the default never stops and has no bound: this cannot happen)", name, err))
	}
}

// AfterFunc waits for d to elapse and then calls f on the default
// SystemTimer's executor, as time.AfterFunc calls it in its own goroutine:
// never before d, at most a tick (1ms) after, or later under load. The
// Timer's Stop and Reset report what time.Timer's do. See
// [SystemTimer.AfterFunc].
//
// AfterFunc panics if f is nil. time.AfterFunc takes a nil f and crashes
// the program when the timer fires ("go of nil func value"), from a
// goroutine of its own that no recover reaches; the panic here comes at the
// call, where the mistake is.
func AfterFunc(d time.Duration, f func()) *Timer {
	if f == nil {
		panic("timingwheel: AfterFunc: nil func")
	}
	t, err := Default().AfterFunc(d, f)
	mustArm("AfterFunc", err)
	return t
}

// NewTimer makes a ChanTimer on the default SystemTimer that delivers the
// time on its channel once d has elapsed, as time.NewTimer does, with the
// time package's semantics since Go 1.23 and the differences that
// [SystemTimer.NewTimer] lists: C has a buffer of one value, and a timer
// nobody stopped stays pending until it fires.
func NewTimer(d time.Duration) *ChanTimer {
	t, err := Default().NewTimer(d)
	mustArm("NewTimer", err)
	return t
}

// After waits for d to elapse and then delivers the time on the returned
// channel, as time.After does: NewTimer(d).C. Its timer stays pending until
// it fires, where the runtime collects an unreferenced one: in a loop, make
// one timer with NewTimer and Reset it instead (see [SystemTimer.After]).
func After(d time.Duration) <-chan time.Time {
	return NewTimer(d).C
}

// NewTicker makes a Ticker on the default SystemTimer that delivers the time
// on its channel every d, as time.NewTicker does. It panics if d <= 0, as
// time.NewTicker does. See [SystemTimer.NewTicker].
func NewTicker(d time.Duration) *Ticker {
	if d <= 0 {
		panic("timingwheel: non-positive interval for NewTicker")
	}
	t, err := Default().NewTicker(d)
	mustArm("NewTicker", err)
	return t
}

// Tick is NewTicker(d).C, as time.Tick is, for a ticker that runs as long
// as the program does. It returns nil if d <= 0, as time.Tick does.
func Tick(d time.Duration) <-chan time.Time {
	if d <= 0 {
		return nil
	}
	return NewTicker(d).C
}

// Sleep pauses the calling goroutine for at least d, as time.Sleep does, on
// a timer of the default SystemTimer: never less than d, at most a tick
// more. If d <= 0 it returns at once.
func Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	<-NewTimer(d).C // fired, so nothing is left pending
}

// WithTimeout is context.WithTimeout with the deadline on the default
// SystemTimer: see [SystemTimer.WithDeadline] for what differs (the context
// is done up to a tick after its deadline, never before).
func WithTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return Default().WithTimeout(parent, timeout)
}

// WithTimeoutCause is context.WithTimeoutCause on the default SystemTimer:
// WithTimeout whose context has the cause cause once its deadline passes.
func WithTimeoutCause(parent context.Context, timeout time.Duration, cause error) (context.Context, context.CancelFunc) {
	return Default().WithTimeoutCause(parent, timeout, cause)
}

// WithDeadline is context.WithDeadline with the deadline on the default
// SystemTimer: see [SystemTimer.WithDeadline].
func WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return Default().WithDeadline(parent, d)
}

// WithDeadlineCause is context.WithDeadlineCause on the default
// SystemTimer: WithDeadline whose context has the cause cause once its
// deadline passes.
func WithDeadlineCause(parent context.Context, d time.Time, cause error) (context.Context, context.CancelFunc) {
	return Default().WithDeadlineCause(parent, d, cause)
}
