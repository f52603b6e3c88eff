package twclock_test

import (
	"sync"
	"testing"
	"time"

	twclock "github.com/go-timingwheel/timingwheel/contrib/clock"
)

// TestConcurrentFallback races Stop, Reset and the channel accessor of one
// timer, one ticker and one AfterFunc timer against the SystemTimer's
// Stop, after which the timer and the ticker go on, on the clock's timers,
// and a Reset moves the AfterFunc timer to time.AfterFunc. Under -race that
// must be safe; afterwards, each must deliver on a Reset. It runs on the
// real clock, so that the goroutines run in parallel.
func TestConcurrentFallback(t *testing.T) {
	st := newWheel(t)
	c := twclock.NewClockwork(st)
	tm := c.NewTimer(time.Hour)
	tk := c.NewTicker(time.Hour)
	fired := make(chan struct{}, 1)
	ft := c.AfterFunc(time.Hour, func() {
		select {
		case fired <- struct{}{}:
		default:
		}
	})

	const goroutines, rounds = 4, 500
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for i := range rounds {
				switch (g + i) % 3 {
				case 0:
					tm.Reset(time.Hour)
					tk.Reset(time.Hour)
					ft.Reset(time.Hour)
				case 1:
					tm.Stop()
					tk.Stop()
					ft.Stop()
				case 2:
					_ = tm.Chan()
					_ = tk.Chan()
				}
			}
		})
	}
	wg.Go(func() {
		<-start
		st.Stop()
	})
	close(start)
	wg.Wait()

	tm.Reset(time.Millisecond)
	recv(t, "timer Reset after the race", tm.Chan())
	tk.Reset(time.Millisecond)
	recv(t, "ticker Reset after the race", tk.Chan())
	tk.Stop()
	ft.Reset(time.Millisecond)
	select {
	case <-fired:
	case <-time.After(wait):
		t.Fatalf("AfterFunc Reset after the race: the function did not run in %v", wait)
	}
}
