package main

import (
	"context"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// timingwheelSpec is this library, with New's defaults (tick 1ms, wheel size
// 512, GOMAXPROCS workers).
var timingwheelSpec = &ImplSpec{
	Name: "timingwheel",
	How: func() string {
		return "timingwheel.New() with defaults (tick 1ms); AfterFunc, Timer.Stop, Timer.Reset, Bind, NewTimer, Len, SystemTimer.Stop"
	},
	New: func() Impl {
		st, err := timingwheel.New()
		mustOK("timingwheel.New", err)
		return &wheelImpl{st: st}
	},
}

type wheelImpl struct {
	st *timingwheel.SystemTimer
}

func (w *wheelImpl) AfterFunc(d time.Duration, f func()) Handle {
	t, err := w.st.AfterFunc(d, f)
	mustOK("timingwheel AfterFunc", err)
	return t
}

func (w *wheelImpl) Stop(h Handle) bool { return h.(*timingwheel.Timer).Stop() }
func (w *wheelImpl) Flush()             {}
func (w *wheelImpl) Pending() int       { return w.st.Len() }

// Lateness implements LatenessReporter with the SystemTimer's Stats.
func (w *wheelImpl) Lateness() (timingwheel.Histogram, time.Duration) {
	s := w.st.Stats()
	return s.Lateness, s.Tick
}

// Reset implements Resetter with Timer.Reset.
func (w *wheelImpl) Reset(h Handle, d time.Duration) bool { return h.(*timingwheel.Timer).Reset(d) }

// boundTimer is a caller's struct with its timer in it: a session or a
// connection, whose other fields (80 bytes here, 128 in all) a real one
// has. A bare Timer is 48 bytes, so two of them allocated back to back
// may share a cache line, and then two goroutines each resetting and
// stopping its own pay for it: on the 2-vCPU machine of bench/README.md,
// Reset+Stop took 162–175 ns a goroutine in 3 of 4 runs with the two
// timers 48 bytes apart, against 46–52 ns in every run with them 176
// bytes apart or more (a test run in the root module on 2026-11-27, not
// kept). The runtime's timer, which time.AfterFunc allocates, is over 100
// bytes.
type boundTimer struct {
	t timingwheel.Timer
	_ [80]byte // the rest of the caller's struct
}

// Unarmed implements Resetter with a Timer bound in a struct of its own
// (SystemTimer.Bind): arming and disarming it allocate nothing.
func (w *wheelImpl) Unarmed(f func()) Handle {
	b := &boundTimer{}
	w.st.Bind(&b.t, f)
	return &b.t
}

// NewChanTimer implements ChanTimerMaker with SystemTimer.NewTimer.
func (w *wheelImpl) NewChanTimer(d time.Duration) (ChanTimer, <-chan time.Time) {
	t, err := w.st.NewTimer(d)
	mustOK("timingwheel NewTimer", err)
	return t, t.C
}

// WithTimeout implements TimeoutContexter with SystemTimer.WithTimeout.
func (w *wheelImpl) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return w.st.WithTimeout(parent, d)
}

// Close stops the SystemTimer, which stops every timer it holds and waits
// for its goroutines.
func (w *wheelImpl) Close([]Handle) { w.st.Stop() }
