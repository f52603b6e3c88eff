package timingwheel

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/stretchr/testify/require"
)

// TestTimerAloneFiresAtItsDeadline: a timer alone in its level-0 bucket
// fires at its deadline, not at the end of its tick: the bucket is queued
// at the earliest deadline it holds. With a 1ms tick, a timer due at 1.3ms
// has run once the clock reads 1.3ms, and not at 1.3ms less a nanosecond.
// Before, it ran at 2ms: a short timer was up to a tick late, and the
// driver's sleep to the tick's end, a fraction of a millisecond, cost up
// to a millisecond more in the runtime's netpoller.
func TestTimerAloneFiresAtItsDeadline(t *testing.T) {
	for _, d := range []time.Duration{1300 * time.Microsecond, 7*time.Millisecond + 16, 300 * time.Millisecond, 3 * time.Second} {
		t.Run(d.String(), func(t *testing.T) {
			fc := newFakeClock()
			st := newManual(t, fc, WithTick(time.Millisecond))
			defer st.Stop()
			ran := 0
			if _, err := st.AfterFunc(d, func() { ran++ }); err != nil {
				t.Fatal(err)
			}
			fc.Add(d - time.Nanosecond)
			st.step()
			if ran != 0 {
				t.Fatalf("ran a nanosecond before its deadline")
			}
			fc.Add(time.Nanosecond)
			st.step()
			if ran != 1 {
				t.Fatalf("not run at its deadline (%v after arming)", d)
			}
		})
	}
}

// TestBucketLeftoversRunByTheirTick: the timers of a level-0 bucket that
// are not due when it expires at its earliest deadline come back to it,
// queued at the end of the tick: none runs before its deadline, and each
// has run once its tick has passed.
func TestBucketLeftoversRunByTheirTick(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc, WithTick(time.Millisecond))
	defer st.Stop()
	ran := map[time.Duration]time.Duration{} // deadline: when it ran
	start := fc.Now()
	for _, d := range []time.Duration{4200 * time.Microsecond, 4500 * time.Microsecond, 4900 * time.Microsecond, 5 * time.Millisecond} {
		if _, err := st.AfterFunc(d, func() { ran[d] = fc.Now().Sub(start) }); err != nil {
			t.Fatal(err)
		}
	}
	for fc.Now().Sub(start) < 6*time.Millisecond {
		fc.Add(100 * time.Microsecond)
		st.step()
		for d, at := range ran {
			if at < d {
				t.Fatalf("the timer due at %v ran at %v", d, at)
			}
		}
		if now := fc.Now().Sub(start); now >= 5*time.Millisecond && len(ran) != 4 {
			t.Fatalf("at %v, the tick of all four has passed and %d ran", now, len(ran))
		}
	}
	if ran[4200*time.Microsecond] != 4200*time.Microsecond {
		t.Fatalf("the first of the bucket ran at %v, not at its deadline", ran[4200*time.Microsecond])
	}
}

// TestGOMAXPROCSRaisedAfterNew: processors beyond the shards New made (and
// beyond their push counts) share shards: timers armed, reset and stopped
// from goroutines on every processor all behave.
func TestGOMAXPROCSRaisedAfterNew(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	st := mustNew(t)
	defer st.Stop()
	runtime.GOMAXPROCS(8)
	var wg sync.WaitGroup
	fired := make(chan struct{}, 8*100)
	for range 8 {
		wg.Go(func() {
			var tm Timer
			st.Bind(&tm, func() {})
			for range 1000 {
				tm.Reset(time.Hour)
				if !tm.Stop() {
					t.Error("Stop of a timer armed an hour out returned false")
					return
				}
			}
			for range 100 {
				if _, err := st.AfterFunc(time.Microsecond, func() { fired <- struct{}{} }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for range 8 * 100 {
		testwait.Recv(t, fired, "a callback")
	}
}

// TestToValueRoundsUp: a deadline becomes a state word's value rounded up
// to the unit, 16ns, whatever the tick: never below it (never early), and
// converted back, less than a unit above it; maxValue (never) only within
// a unit of math.MaxInt64, where rounding up would pass the horizon.
func TestToValueRoundsUp(t *testing.T) {
	const unit = 1 << unitShift
	st := &SystemTimer{}
	for _, when := range []int64{math.MinInt64, math.MinInt64 + 1, -unit - 1, -unit, -5, -1, 0, 1, unit - 1, unit, unit + 1, 1e9 + 3,
		math.MaxInt64 - 2*unit, math.MaxInt64 - unit, math.MaxInt64 - unit + 1, math.MaxInt64 - unit + 2, math.MaxInt64 - 1, math.MaxInt64} {
		v := st.toValue(when)
		if v > maxValue || v < -maxValue {
			t.Fatalf("toValue(%d) = %d, outside ±maxValue", when, v)
		}
		if when > math.MaxInt64-(unit-1) {
			if v != maxValue {
				t.Fatalf("toValue(%d) = %d, want maxValue (never)", when, v)
			}
			continue
		}
		if back := st.fromValue(v); v == maxValue || back < when || back-when >= unit {
			t.Fatalf("toValue(%d) = %d, back %d: not the deadline rounded up to %dns", when, v, back, unit)
		}
	}
}

// TestHorizonAtEveryTick: at every tick of 8ns and more, deadlines come up
// to the horizon, the largest Duration after New, and those in its last
// tick never come. A tick not a multiple of 16ns once made the state
// word's unit 1, 2 or 4ns, and with it the horizon 36, 73 or 146 years: a
// 200-year timer at 100ns never ran. And at a tick that divides
// math.MaxInt64 (49ns), a deadline in the last tick went to a bucket that
// no expiry reaches (the invariant check failed once the clock passed it)
// instead of the never list.
func TestHorizonAtEveryTick(t *testing.T) {
	const year = 365 * 24 * time.Hour
	for _, tick := range []time.Duration{time.Millisecond, time.Microsecond, 100, 49, 24, 12, 10, 8} {
		t.Run(tick.String()+"/last tick", func(t *testing.T) {
			fc := newFakeClock()
			st := newManual(t, fc, WithTick(tick))
			for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1} {
				_, err := st.AfterFunc(d, func() { t.Errorf("a deadline %v after New came", d) })
				require.NoError(t, err)
			}
			st.step()
			fc.Add(math.MaxInt64)
			fc.Add(time.Hour) // past the horizon
			st.step()
			require.Equal(t, 2, st.Len())
		})
		t.Run(tick.String()+"/200 years", func(t *testing.T) {
			fc := newFakeClock()
			st := newManual(t, fc, WithTick(tick))
			var ran atomic.Int32
			_, err := st.AfterFunc(200*year, func() { ran.Add(1) })
			require.NoError(t, err)
			fc.Add(200*year - time.Second)
			st.step()
			require.Zero(t, ran.Load(), "ran a second early")
			fc.Add(2 * time.Second)
			st.step()
			require.Equal(t, int32(1), ran.Load(), "a 200-year timer did not run 200 years and a second after New")
		})
	}
}
