package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// A Handle is what an Impl's AfterFunc returns, to pass to its Stop.
type Handle any

// An Impl is one timer implementation under test. Every workload drives
// every Impl through this interface, so the cost of the interface call is
// the same for each. AfterFunc and Stop may be called from any goroutine.
// An Impl panics on an error: the harness never misuses it.
type Impl interface {
	// AfterFunc arranges for f to run once d has elapsed.
	AfterFunc(d time.Duration, f func()) Handle
	// Stop cancels the timer of h. It reports whether that kept f from
	// running, when the implementation can tell; otherwise it returns true.
	Stop(h Handle) bool
	// Flush returns once every AfterFunc and Stop made so far has taken
	// effect: at once for an implementation whose calls are synchronous.
	// A workload that times a phase of calls includes a Flush in it.
	Flush()
	// Pending returns the number of pending timers, or -1 if the
	// implementation cannot tell.
	Pending() int
	// Close stops every timer in pending that may still be pending, and
	// any goroutine of the implementation: after Close, no callback of a
	// timer whose handle is in pending, or of a timer the implementation
	// tracks itself, starts.
	Close(pending []Handle)
}

// A TimeoutContexter is an Impl that can also put a context's deadline on
// its timers, like context.WithTimeout. Workloads that need contexts (an
// HTTP server's per-request timeouts) find it by type assertion and skip
// the implementations that lack it:
//
//	tc, ok := e.Impl.(TimeoutContexter)
//	if !ok {
//		return &SkipError{Reason: "no context API"}
//	}
type TimeoutContexter interface {
	WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc)
}

// A Resetter is an Impl whose timers can be re-armed, as time.Timer.Reset
// does: pushed back while pending, or armed again once fired or stopped.
// Workloads of timers pushed back over and over (rearm, reuse) find it by
// type assertion and skip the implementations that lack it.
type Resetter interface {
	// Reset re-arms h's timer to run its function d from now. It reports
	// whether the timer was pending, when the implementation can tell;
	// otherwise it returns true.
	Reset(h Handle, d time.Duration) bool
	// Unarmed returns the handle of a timer that runs f once armed by
	// Reset, and is not armed yet: a timer kept in the caller's own
	// struct, where the implementation allows it.
	Unarmed(f func()) Handle
}

// A ChanTimerMaker is an Impl that can also make timers that deliver on a
// channel, as time.NewTimer does. Workloads of channel timers (selectloop,
// parallel's newtimer) find it by type assertion and skip the
// implementations that lack it.
type ChanTimerMaker interface {
	// NewChanTimer makes a timer that sends the time on the returned
	// channel once d has elapsed; the channel is the timer's C, the same
	// for its whole life.
	NewChanTimer(d time.Duration) (ChanTimer, <-chan time.Time)
}

// A ChanTimer is a timer made by a ChanTimerMaker, with the time
// package's semantics since Go 1.23: *time.Timer and
// *timingwheel.ChanTimer as they are, so that a workload's Reset and Stop
// cost each implementation the same dynamic call.
type ChanTimer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// A LatenessReporter is an Impl that measures how late its callbacks
// start, as this library's Stats does: the storm prints that beside its
// own measurement, and checks that they agree.
type LatenessReporter interface {
	// Lateness returns the histogram of callback start − due time so
	// far, and the tick the due times are rounded up to.
	Lateness() (timingwheel.Histogram, time.Duration)
}

// An ImplSpec names an implementation and makes instances of it.
type ImplSpec struct {
	Name string // column or row name in the tables
	// How says how the implementation is set up and driven, for the
	// header of the output; called after the flags are parsed.
	How func() string
	New func() Impl
	// MaxPending, when positive, is the most timers the implementation is
	// asked to hold at once; larger cases skip it with SkipWhy.
	MaxPending func() int
	SkipWhy    string
	// Serial, when not empty, says that one goroutine of the
	// implementation's own carries out all its calls, and why: a workload
	// that measures how the calls scale over cores (parallel) skips it
	// with this reason.
	Serial string
}

// impls lists the implementations in the order every case runs them. The
// first is this library: every ratio is to it.
var impls = []*ImplSpec{
	timingwheelSpec,
	runtimeSpec,
	gozeroSpec,
}

// noop is the shared callback of timers that are never meant to fire.
func noop() {}

// mustOK panics with the name of the implementation if err is not nil.
func mustOK(impl string, err error) {
	if err != nil {
		panic(fmt.Sprintf("wheelbench: %s: %v", impl, err))
	}
}
