package main

import (
	"context"
	"time"
)

// runtimeSpec is the standard library's time.AfterFunc: the runtime's
// per-P timer heaps.
var runtimeSpec = &ImplSpec{
	Name: "time.AfterFunc",
	How: func() string {
		return "time.AfterFunc, (*time.Timer).Stop and Reset, time.NewTimer; each callback runs in a goroutine of its own"
	},
	New: func() Impl { return runtimeImpl{} },
}

type runtimeImpl struct{}

func (runtimeImpl) AfterFunc(d time.Duration, f func()) Handle { return time.AfterFunc(d, f) }
func (runtimeImpl) Stop(h Handle) bool                         { return h.(*time.Timer).Stop() }
func (runtimeImpl) Flush()                                     {}
func (runtimeImpl) Pending() int                               { return -1 }

// Reset implements Resetter with (*time.Timer).Reset.
func (runtimeImpl) Reset(h Handle, d time.Duration) bool { return h.(*time.Timer).Reset(d) }

// Unarmed implements Resetter with a time.Timer made by AfterFunc and
// stopped at once: the time package has no other way to make one that runs
// a function.
func (runtimeImpl) Unarmed(f func()) Handle {
	t := time.AfterFunc(time.Hour, f)
	t.Stop()
	return t
}

// NewChanTimer implements ChanTimerMaker with time.NewTimer.
func (runtimeImpl) NewChanTimer(d time.Duration) (ChanTimer, <-chan time.Time) {
	t := time.NewTimer(d)
	return t, t.C
}

// WithTimeout implements TimeoutContexter with context.WithTimeout.
func (runtimeImpl) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}

// Close stops the timers one by one: the runtime has no container to drop.
func (runtimeImpl) Close(pending []Handle) {
	for _, h := range pending {
		if h != nil {
			h.(*time.Timer).Stop()
		}
	}
}
