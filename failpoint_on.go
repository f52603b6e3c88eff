//go:build timingwheel_failpoints

package timingwheel

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
)

// failpointsOn reports whether failpoints are compiled in.
const failpointsOn = true

// failpointSink keeps the spin below from being optimized away.
var failpointSink atomic.Uint64

// failpoint widens the window it marks: at random it does nothing, yields
// the processor (the goroutine goes to the back of the run queue, so that
// every other runnable goroutine can come in), or spins for up to a few
// microseconds. It never sleeps: in a testing/synctest bubble a sleep would
// move the fake clock, and a spin on the clock would never end.
func failpoint(string) {
	switch r := rand.Uint32N(16); {
	case r < 6:
	case r < 12:
		runtime.Gosched()
	default:
		n := rand.Uint64N(4096)
		var s uint64
		for i := range n {
			s += i * i
		}
		failpointSink.Add(s)
	}
}

// failpointStall is failpoint that, now and then (1 in 32), keeps the
// goroutine for a millisecond or two of spinning: longer than a tick, so
// that a timer armed just before the window fires while the goroutine is
// still in it. It marks windows that a goroutine preempted by the OS holds
// open that long. A spin, not a sleep, for the reason failpoint gives.
func failpointStall(name string) {
	if rand.Uint32N(32) != 0 {
		failpoint(name)
		return
	}
	var s uint64
	for i := range uint64(3_000_000) {
		s += i * i
	}
	failpointSink.Add(s)
}
