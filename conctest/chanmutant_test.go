package conctest

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-timingwheel/timingwheel/internal/isolate"
)

// The mutants put a fault between a history and its timer, each one a bug
// that a channel timer could have. TestChanMutants records histories
// through each and demands that the checker reject one: the model's unit
// tests show that it rejects hand-written bad histories, these that the
// histories the tests record are ones in which real bugs show.

// relay returns a mutant that passes the values through a goroutine and a
// buffer of one, which Stop and Reset do not empty, sending what f makes
// of each (the values, and their number so far).
func relay(f func(v time.Time, n int) []time.Time) func(chanTimer, <-chan struct{}) chanTimer {
	return func(tm chanTimer, quit <-chan struct{}) chanTimer {
		c := make(chan time.Time, 1)
		in := tm.c
		go func() {
			for n := 1; ; n++ {
				select {
				case v := <-in:
					for _, v := range f(v, n) {
						select {
						case c <- v:
						case <-quit:
							return
						}
					}
				case <-quit:
					return
				}
			}
		}()
		tm.c = c
		return tm
	}
}

var (
	// stale: a value delivered before a Stop or Reset can be received
	// after it, and they report it taken back only if it had not yet been
	// relayed.
	stale = relay(func(v time.Time, _ int) []time.Time { return []time.Time{v} })
	// twice delivers every value twice.
	twice = relay(func(v time.Time, _ int) []time.Time { return []time.Time{v, v} })
	// lost loses every other value.
	lost = relay(func(v time.Time, n int) []time.Time {
		if n%2 == 0 {
			return nil
		}
		return []time.Time{v}
	})
	// sentAt sends the time the value was sent, as time.Timer did before
	// Go 1.23, not the time it was due.
	sentAt = relay(func(time.Time, int) []time.Time { return []time.Time{time.Now()} })
)

// stopLies makes every third Stop report the opposite of what it did.
func stopLies(tm chanTimer, _ <-chan struct{}) chanTimer {
	var n atomic.Int32
	stop := tm.stop
	tm.stop = func() bool { return stop() != (n.Add(1)%3 == 0) }
	return tm
}

// early arms for half the duration asked: values and ticks come early.
func early(tm chanTimer, _ <-chan struct{}) chanTimer {
	reset, tryReset := tm.reset, tm.tryReset
	tm.reset = func(d time.Duration) bool { return reset(d / 2) }
	tm.tryReset = func(d time.Duration) (bool, error) { return tryReset(d / 2) }
	return tm
}

// never arms for an hour when asked for a short positive duration: Stop
// and Reset report as they should, but the value never comes.
func never(tm chanTimer, _ <-chan struct{}) chanTimer {
	reset, tryReset := tm.reset, tm.tryReset
	long := func(d time.Duration) time.Duration {
		if d > 0 {
			return time.Hour
		}
		return d
	}
	tm.reset = func(d time.Duration) bool { return reset(long(d)) }
	tm.tryReset = func(d time.Duration) (bool, error) { return tryReset(long(d)) }
	return tm
}

// TestChanMutants: each mutant is caught within a few hundred histories
// (most within a few).
func TestChanMutants(t *testing.T) {
	mutants := []struct {
		name      string
		mutant    func(chanTimer, <-chan struct{}) chanTimer
		timerOnly bool // a Ticker's Stop reports nothing to lie about
	}{
		{"stale", stale, false},
		{"twice", twice, false},
		{"lost", lost, false},
		{"sentAt", sentAt, false},
		{"stopLies", stopLies, true},
		{"early", early, false},
		{"never", never, false},
	}
	isolate.Run(t, childTimeout, func(t *testing.T) {
		old := runtime.GOMAXPROCS(8)
		defer runtime.GOMAXPROCS(old)
		seed := seedBase(t)
		for _, kind := range []struct {
			name   string
			ticker bool
		}{{"ChanTimer", false}, {"Ticker", true}} {
			for _, m := range mutants {
				if m.timerOnly && kind.ticker {
					continue
				}
				t.Run(kind.name+"/"+m.name, func(t *testing.T) {
					const n = 300
					for i := range n {
						h := recordChan(t, seed+uint64(i), chanConfig{ticker: kind.ticker, mutant: m.mutant})
						if r, _ := porcupine.CheckOperationsVerbose(newChanModel(kind.ticker), h.ops, checkTimeout); r == porcupine.Illegal {
							t.Logf("caught by history %d (seed %#x)", i+1, h.seed)
							return
						}
					}
					t.Errorf("%d histories through the mutant, and the checker accepted them all", n)
				})
			}
		}
	})
}
