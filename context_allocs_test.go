package timingwheel

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// withTimeoutFunc is SystemTimer.WithTimeout's and context.WithTimeout's
// signature.
type withTimeoutFunc func(context.Context, time.Duration) (context.Context, context.CancelFunc)

// ownAllocs is testing.AllocsPerRun(runs, f), the smallest of three
// measurements. AllocsPerRun counts the allocations of every goroutine of
// the process, and goroutines that earlier tests left running (a Ticker's
// runs, a runtime timer's function, the cleanup of a collected shard token)
// allocate now and then: once CI's full run of the package saw a figure one
// above the scenario's own (8 for WithTimeout+Done+expiry, exactly 7 alone
// in 100 runs). Such allocations only add; an allocation the scenario
// makes is in all three measurements.
func ownAllocs(runs int, f func()) float64 {
	m := testing.AllocsPerRun(runs, f)
	for range 2 {
		m = min(m, testing.AllocsPerRun(runs, f))
	}
	return m
}

// TestContextAllocs pins the allocations of a wheel context against the
// standard library's, scenario by scenario, in the same run: no more when
// nobody waits for the context (2 against 4: the cancelCtx that derived
// contexts attach to is made on demand); two more once Done is called (7
// against 5: that cancelCtx, its cancel function, and its tie to the wheel
// through the context package's AfterFunc path, the price of derived
// contexts seeing DeadlineExceeded synchronously; see timerCtx); two more
// again under a standard cancelable parent (context.AfterFunc's context and
// stop function, the only tie to such a parent that keeps DeadlineExceeded).
// AllocsPerRun counts whole allocations: the figures are exact. The wheel's
// expiries run on this goroutine (a manual SystemTimer), the standard
// library's in a synctest bubble.
func TestContextAllocs(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	stdParent, cancelStdParent := context.WithCancel(context.Background())
	defer cancelStdParent()
	wheelParent, cancelWheelParent := st.WithTimeout(context.Background(), 100*time.Hour)
	defer cancelWheelParent()
	stdDeadlineParent, cancelStdDeadlineParent := context.WithTimeout(context.Background(), 100*time.Hour)
	defer cancelStdDeadlineParent()

	const runs = 200
	cancel := func(wt withTimeoutFunc, parent context.Context, done bool) float64 {
		return ownAllocs(runs, func() {
			ctx, cancel := wt(parent, time.Hour)
			if done {
				_ = ctx.Done()
			}
			cancel()
		})
	}
	// The expiry, seen by Err alone or waited for on Done.
	wheelExpiry := func(done bool) float64 {
		return ownAllocs(runs, func() {
			ctx, cancel := st.WithTimeout(context.Background(), time.Millisecond)
			if done {
				_ = ctx.Done()
			}
			fc.Add(time.Millisecond)
			st.step()
			if ctx.Err() == nil {
				panic("not expired")
			}
			cancel()
		})
	}
	var stdExpiry [2]float64
	synctest.Test(t, func(t *testing.T) {
		for i, done := range []bool{false, true} {
			stdExpiry[i] = ownAllocs(runs, func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				if done {
					_ = ctx.Done()
				}
				time.Sleep(time.Millisecond)
				synctest.Wait() // the timer's function runs on a goroutine
				if ctx.Err() == nil {
					panic("not expired")
				}
				cancel()
			})
		}
	})
	var wheelNow, stdNow float64
	synctest.Test(t, func(t *testing.T) { // the real clock: a deadline passed already
		st := mustNew(t)
		defer st.Stop()
		now := func(wt withTimeoutFunc) float64 {
			return ownAllocs(runs, func() {
				ctx, cancel := wt(context.Background(), 0)
				<-ctx.Done()
				cancel()
			})
		}
		wheelNow, stdNow = now(st.WithTimeout), now(context.WithTimeout)
	})

	wheel := withTimeoutFunc(st.WithTimeout)
	std := withTimeoutFunc(context.WithTimeout)
	type key struct{}
	for _, c := range []struct {
		name       string
		wheel, std float64
		extra      float64 // allocations the wheel may take beyond the standard library's
	}{
		{"WithTimeout+cancel", cancel(wheel, context.Background(), false), cancel(std, context.Background(), false), 0},
		{"WithTimeout+expiry, seen by Err", wheelExpiry(false), stdExpiry[0], 0},
		{"WithTimeout(0)+Done", wheelNow, stdNow, 0},
		{"WithTimeout+Done+cancel", cancel(wheel, context.Background(), true), cancel(std, context.Background(), true), 2},
		{"WithTimeout+Done+expiry", wheelExpiry(true), stdExpiry[1], 2},
		{"under a deadline context: WithTimeout+Done+cancel", cancel(wheel, wheelParent, true), cancel(std, stdDeadlineParent, true), 2},
		{"under a value layer over it", cancel(wheel, context.WithValue(wheelParent, key{}, 1), true), cancel(std, context.WithValue(stdDeadlineParent, key{}, 1), true), 2},
		{"under a cancelable parent: WithTimeout+cancel", cancel(wheel, stdParent, false), cancel(std, stdParent, false), 0},
		{"under a cancelable parent: WithTimeout+Done+cancel", cancel(wheel, stdParent, true), cancel(std, stdParent, true), 4},
	} {
		t.Logf("%-52s wheel %.0f, context.WithTimeout %.0f", c.name, c.wheel, c.std)
		assert.NotZero(t, c.std, c.name)
		assert.LessOrEqual(t, c.wheel, c.std+c.extra, c.name)
	}
}
