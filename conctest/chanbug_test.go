package conctest

import (
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/internal/isolate"
)

// TestChanTimerNegativeDuration: time.NewTimer(d) and Reset(d) with d <= 0
// are due at once, and since Go 1.23 the value sent is the time the timer
// was due: the time of the call (the runtime's when() takes d <= 0 as now).
// The ChanTimer sent the call's time plus d: an hour in the past for
// NewTimer(-time.Hour). Fixed; this guards the fix.
func TestChanTimerNegativeDuration(t *testing.T) {
	st, err := timingwheel.New(timingwheel.WithTick(tick))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	check := func(what string, c <-chan time.Time, before time.Time) {
		t.Helper()
		v := <-c
		if v.Before(before) {
			t.Errorf("%s sent %v before the call", what, before.Sub(v))
		}
	}
	before := time.Now()
	tm, err := st.NewTimer(-time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	check("NewTimer(-time.Hour)", tm.C, before)
	before = time.Now()
	tm.Reset(-time.Millisecond)
	check("Reset(-time.Millisecond)", tm.C, before)

	// The time package, for comparison.
	before = time.Now()
	rt := time.NewTimer(-time.Hour)
	check("time.NewTimer(-time.Hour)", rt.C, before)
}

// TestTickerAfterStopRace guards, under -race, against a data race that
// TestLinearizableTicker found (once, with failpoints, in a ticker made
// while SystemTimer.Stop ran): NewTicker on a stopped SystemTimer armed a
// timer of the clock (AfterFunc) and then stored it in the ticker's field
// rt, outside the busy state that guards rt. The clock's timer could fire
// at once, and its run, delivering the first tick, read rt to arm the
// next; when the run won, it found rt nil and armed a second timer of the
// clock, which NewTicker then overwrote: a timer that Stop did not disarm.
// NewTicker now holds the ticker busy while it sets rt. A mock clock makes
// the race certain where it exists: another goroutine advances the clock,
// so the run is its child, and nothing but the busy state orders the store
// before the run's read. Without -race the test checks little.
func TestTickerAfterStopRace(t *testing.T) {
	isolate.Run(t, childTimeout, func(t *testing.T) {
		mock := clock.NewMock()
		st, err := timingwheel.New(timingwheel.WithTick(tick), timingwheel.WithClock(mock))
		if err != nil {
			t.Fatal(err)
		}
		st.Stop()
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					mock.Add(time.Microsecond)
				}
			}
		})
		tk, err := st.NewTicker(time.Microsecond)
		if err != nil {
			t.Fatal(err)
		}
		<-tk.C
		tk.Stop()
		close(done)
		wg.Wait()
	})
}
