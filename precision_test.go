package timingwheel

import (
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/testwait"
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

// TestToValueRoundsUpAndSaturates: a deadline becomes a state word's value
// rounded up to the unit, never below it (never early), saturating at
// maxValue (never) and at -maxValue, at every unit the tick allows; and
// the fast path gives what the reference (the general computation) gives,
// on both sides of where it ends.
func TestToValueRoundsUpAndSaturates(t *testing.T) {
	for _, tick := range []time.Duration{time.Millisecond, 24 * time.Nanosecond, 8 * time.Nanosecond, 4 * time.Nanosecond, 3 * time.Nanosecond, time.Nanosecond} {
		st := &SystemTimer{tick: int64(tick)}
		st.setUnit()
		unit := int64(1) << st.vshift
		edge := min(maxValue, math.MaxInt64/unit) * unit // the largest deadline a value holds, or near it
		fast := int64(st.vfast)
		for _, when := range []int64{math.MinInt64, -edge - 1, -5, -1, 0, 1, unit - 1, unit, unit + 1, 1e9 + 3, edge - 1, edge, edge + 1, fast - 1, fast, fast + 1, math.MaxInt64 - unit, math.MaxInt64 - 1, math.MaxInt64} {
			v := st.toValue(when)
			ref := int64(maxValue)
			if r := when + st.vround; r >= when {
				ref = max(min(r>>st.vshift, maxValue), -maxValue)
			}
			if v != ref {
				t.Fatalf("tick %v: toValue(%d) = %d, want %d", tick, when, v, ref)
			}
			if v < -maxValue || v > maxValue {
				t.Fatalf("tick %v: toValue(%d) = %d, outside ±maxValue", tick, when, v)
			}
			if v < maxValue && v > -maxValue && v <= math.MaxInt64/unit && (v*unit < when || v*unit-when >= unit) {
				t.Fatalf("tick %v: toValue(%d) = %d: %d ns, not the deadline rounded up to %d ns", tick, when, v, v*unit, unit)
			}
			if when >= 0 && v < 0 || when >= math.MaxInt64-unit && v != maxValue && v*unit < when {
				t.Fatalf("tick %v: toValue(%d) = %d, early", tick, when, v)
			}
		}
	}
}
