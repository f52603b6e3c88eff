//go:build timingwheel_failpoints

package timingwheel

import (
	"math/rand/v2"
	"runtime"
	"sync"
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
//
// A test may also park goroutines at a named failpoint (parkAt): then the
// window is not widened by chance but held open until the test lets the
// goroutine go, so that the racing operation lands inside it every time.
func failpoint(name string) {
	if parksArmed.Load() > 0 && parkHere(name) {
		return
	}
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
	if parksArmed.Load() > 0 && parkHere(name) {
		return
	}
	var s uint64
	for i := range uint64(3_000_000) {
		s += i * i
	}
	failpointSink.Add(s)
}

// A park holds the goroutines that reach one failpoint, up to a count,
// until the test releases them. Made by parkAt.
type park struct {
	name    string
	left    atomic.Int32  // goroutines still to be parked
	only    func() bool   // nil, or: park only a goroutine for which it reports true
	arrived chan struct{} // a token per goroutine parked
	release chan struct{} // closed to let them all go
	once    sync.Once     // closes release
	done    chan struct{} // a token per goroutine that left the park
}

var (
	// parksArmed counts the parks set: failpoint looks for one only while
	// it is not 0, so that the random widening costs no lock.
	parksArmed atomic.Int32
	// parksMu guards parks.
	parksMu sync.Mutex
	parks   = map[string]*park{}
)

// parkAt sets a park at the failpoint name for the next n goroutines to
// reach it (for which only, if not nil, reports true), and returns it. The
// test waits for them with wait, lets them go with release, and must clear
// the park (unpark) before it ends; a park left set would hold goroutines
// of later tests.
func parkAt(name string, n int, only func() bool) *park {
	p := &park{
		name:    name,
		only:    only,
		arrived: make(chan struct{}, n),
		release: make(chan struct{}),
		done:    make(chan struct{}, n),
	}
	p.left.Store(int32(n))
	parksMu.Lock()
	if parks[name] != nil {
		parksMu.Unlock()
		panic("timingwheel: test: two parks at failpoint " + name)
	}
	parks[name] = p
	parksMu.Unlock()
	parksArmed.Add(1)
	return p
}

// parkHere parks the calling goroutine if a park is set at name and still
// takes goroutines, and reports whether it did (after its release).
func parkHere(name string) bool {
	parksMu.Lock()
	p := parks[name]
	parksMu.Unlock()
	if p == nil || (p.only != nil && !p.only()) {
		return false
	}
	for {
		n := p.left.Load()
		if n <= 0 {
			return false
		}
		if p.left.CompareAndSwap(n, n-1) {
			break
		}
	}
	p.arrived <- struct{}{}
	<-p.release
	p.done <- struct{}{}
	return true
}

// unpark releases p's goroutines and clears the park, so that later
// arrivals pass.
func (p *park) unpark() {
	p.once.Do(func() { close(p.release) })
	parksMu.Lock()
	if parks[p.name] == p {
		delete(parks, p.name)
		parksArmed.Add(-1)
	}
	parksMu.Unlock()
}
