package timingwheel

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// gateScheduler runs every step, and blocks in the first Next called after
// the series' first run (the rearm after it, on an executor goroutine,
// with the shard's lock released) until the test opens the gate: the
// window in which a Stop or Reset must be left for rearm to carry out.
type gateScheduler struct {
	step    time.Duration
	ran     atomic.Bool // set by the series' function
	blocked atomic.Bool
	entered chan struct{}
	gate    chan struct{}
}

func newGateScheduler(step time.Duration) *gateScheduler {
	return &gateScheduler{step: step, entered: make(chan struct{}), gate: make(chan struct{})}
}

func (g *gateScheduler) Next(prev time.Time) time.Time {
	if g.ran.Load() && g.blocked.CompareAndSwap(false, true) {
		close(g.entered)
		<-g.gate
	}
	return prev.Add(g.step)
}

// TestConcurrentWindowNext puts Stop, Reset and SystemTimer.Stop inside the
// window where a periodic timer's rearm has released its shard's lock to
// call Scheduler.Next. Each must win over what Next returns: after Stop no
// run follows; after Reset the next run is at the Reset's deadline, not at
// Next's; after SystemTimer.Stop the timer is pending nowhere. Guards: a
// rearm that, once Next returns, schedules Next's time without looking
// again at what came meanwhile (the Stop or Reset is lost, the series goes
// on).
func TestConcurrentWindowNext(t *testing.T) {
	const step = 10 * time.Millisecond
	for _, op := range []string{"Stop", "Reset", "SystemStop"} {
		t.Run(op, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := mustNew(t, WithTick(time.Millisecond))
				defer st.Stop()
				g := newGateScheduler(step)
				var runs atomic.Int32
				var last atomic.Int64 // when the latest run started, ns since start
				start := time.Now()
				tm, err := st.ScheduleFunc(g, func() {
					runs.Add(1)
					last.Store(int64(time.Since(start)))
					g.ran.Store(true)
				})
				if err != nil {
					t.Fatal(err)
				}
				<-g.entered // the first run ran; its rearm is in Next
				stopped := make(chan []*Timer, 1)
				var resetAt time.Duration
				switch op {
				case "Stop":
					if tm.Stop() {
						t.Fatal("Stop during the rearm returned true: no run was pending")
					}
				case "Reset":
					resetAt = time.Since(start) + 5*step
					if tm.Reset(5 * step) {
						t.Fatal("Reset during the rearm returned true: no run was pending")
					}
				case "SystemStop":
					go func() { stopped <- st.Stop() }()
					synctest.Wait() // Stop waits for the run's rearm, in Next
				}
				close(g.gate)
				synctest.Wait()
				switch op {
				case "Stop":
					time.Sleep(10 * step) // the bubble's clock: nothing may run
					synctest.Wait()
					if n := runs.Load(); n != 1 {
						t.Fatalf("the series ran %d times; Stop during Next must end it after the first", n)
					}
					if n := st.Len(); n != 0 {
						t.Fatalf("Len = %d after the series was stopped", n)
					}
				case "Reset":
					time.Sleep(resetAt - time.Since(start) - time.Millisecond)
					synctest.Wait()
					if n := runs.Load(); n != 1 {
						t.Fatalf("the series ran again %v after start, before the Reset's deadline %v: Next's time won over the Reset", time.Duration(last.Load()), resetAt)
					}
					time.Sleep(3 * time.Millisecond)
					synctest.Wait()
					if n := runs.Load(); n != 2 {
						t.Fatalf("the series ran %d times by the Reset's deadline, want 2", n)
					}
				case "SystemStop":
					left := <-stopped
					for _, l := range left {
						if l == tm {
							t.Fatal("SystemTimer.Stop returned a series whose run had started")
						}
					}
					if tm.Stop() {
						t.Fatal("Stop after SystemTimer.Stop returned true: the rearm scheduled the series on a stopped SystemTimer")
					}
					if n := st.Len(); n != 0 {
						t.Fatalf("Len = %d after SystemTimer.Stop", n)
					}
				}
			})
		})
	}
}
