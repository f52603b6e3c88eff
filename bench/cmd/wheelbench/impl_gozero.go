package main

import (
	"flag"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/zeromicro/go-zero/core/collection"
)

const gozeroPath = "github.com/zeromicro/go-zero"

var (
	gozeroSlots = flag.Int("gozero-slots", 1<<16, "go-zero: slots of its wheel (with its 1ms interval, 65536 slots turn once in 65.5s)")
	gozeroMax   = flag.Int("gozero-max", 2_000_000, "go-zero: skip it in cases that hold more pending timers than this")
)

// gozeroSpec is go-zero's core/collection.TimingWheel: one wheel of slots,
// each a container/list, with a "circle" count per entry for delays beyond
// one turn; a goroutine owns the wheel, takes SetTimer and RemoveTimer over
// unbuffered channels, and advances one slot per tick of a time.Ticker.
var gozeroSpec = &ImplSpec{
	Name: "go-zero",
	How: func() string {
		return fmt.Sprintf("%s/core/collection %s: NewTimingWheel(1ms, %d slots), SetTimer with a fresh key, RemoveTimer; "+
			"asynchronous: timed phases include a Flush until its goroutine has done every call",
			gozeroPath, moduleVersion(gozeroPath), *gozeroSlots)
	},
	New:        newGozero,
	MaxPending: func() int { return *gozeroMax },
	SkipWhy: "more than -gozero-max pending: each SetTimer is a hand-off to its goroutine (~3-4 µs here), so 10M take ~40 s " +
		"to set up (the first 1-2 min timers would fire during the churn pairs) and ~2.2 GB (~220 B a timer)",
	Serial: "one goroutine of go-zero's carries out all its calls: they do not run on several cores",
}

type gozeroImpl struct {
	tw   *collection.TimingWheel
	keys atomic.Uint64 // the last key used: keys must be unique
}

// flushKey is a key no timer has: removing it is a no-op that the wheel's
// goroutine must still receive.
type flushKey struct{}

func newGozero() Impl {
	tw, err := collection.NewTimingWheel(time.Millisecond, *gozeroSlots, func(_, f any) { f.(func())() })
	mustOK("go-zero NewTimingWheel", err)
	return &gozeroImpl{tw: tw}
}

// AfterFunc sets a timer under a fresh key; the key is the handle. go-zero
// refuses delays <= 0 and rounds delays below its interval up to one
// interval, so a delay <= 0 is passed as 1ns.
func (g *gozeroImpl) AfterFunc(d time.Duration, f func()) Handle {
	key := any(g.keys.Add(1))
	mustOK("go-zero SetTimer", g.tw.SetTimer(key, f, max(d, 1)))
	return key
}

// Stop removes the timer. go-zero does not say whether the timer was still
// pending, so Stop returns true.
func (g *gozeroImpl) Stop(h Handle) bool {
	mustOK("go-zero RemoveTimer", g.tw.RemoveTimer(h))
	return true
}

// Flush sends two no-op removals. The wheel's goroutine receives from its
// unbuffered channels only between operations, so when the second send
// completes it has finished every operation before the first.
func (g *gozeroImpl) Flush() {
	for range 2 {
		mustOK("go-zero RemoveTimer", g.tw.RemoveTimer(flushKey{}))
	}
}

func (g *gozeroImpl) Pending() int { return -1 }

// Close stops the wheel: its goroutine exits and its timers never fire.
// Callbacks it had already started in goroutines of their own may still be
// running; go-zero offers no way to wait for them.
func (g *gozeroImpl) Close([]Handle) { g.tw.Stop() }

// moduleVersion returns the version of a dependency built into the binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "(unknown version)"
}
