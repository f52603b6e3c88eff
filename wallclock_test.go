package timingwheel

import (
	"context"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"
)

// stepWall returns t, which must have a monotonic reading, with its wall
// clock reading moved by d and its monotonic reading kept: what New would
// have read as its epoch had the wall clock been stepped by -d since. No API
// makes such a Time, so it edits the two words of time.Time's
// representation (wall: hasMonotonic, 33 bits of seconds since 1885, 30 bits
// of nanoseconds; ext: the monotonic reading), and checks the result through
// the API, so that a change of representation fails the test loudly.
func stepWall(tb testing.TB, t time.Time, d time.Duration) time.Time {
	tb.Helper()
	const (
		hasMonotonic = 1 << 63
		nsecShift    = 30
		nsecMask     = 1<<nsecShift - 1
		secMask      = 1<<33 - 1
	)
	type repr struct {
		wall uint64
		ext  int64
		loc  *time.Location
	}
	require.Equal(tb, unsafe.Sizeof(repr{}), unsafe.Sizeof(t), "time.Time changed shape")
	u := t
	p := (*repr)(unsafe.Pointer(&u))
	require.NotZero(tb, p.wall&hasMonotonic, "t has no monotonic reading")
	sec := int64(p.wall >> nsecShift & secMask)
	ns := sec*1e9 + int64(p.wall&nsecMask) + int64(d)
	p.wall = hasMonotonic | uint64(ns/1e9)&secMask<<nsecShift | uint64(ns%1e9)
	require.Equal(tb, time.Duration(0), u.Sub(t), "the monotonic reading moved")
	require.Equal(tb, d, u.Round(0).Sub(t.Round(0)), "the wall reading did not move by d")
	return u
}

// wallStepped returns a SystemTimer on the real clock, without goroutines,
// whose epoch reads the wall clock 300ms later than it would now: as if the
// wall clock had been stepped back 300ms since New (an NTP step, a VM
// restore). Its monotonic time is unaffected.
func wallStepped(t *testing.T) *SystemTimer {
	st := mustNew(t, WithClock(clock.New()), withManual())
	require.True(t, st.realClock)
	st.epoch = stepWall(t, st.epoch, 300*time.Millisecond)
	return st
}

// dueNs returns the deadline, in ns since the epoch, at which the wheel
// will run tm: the due tick it was placed at (after a drain).
func dueNs(st *SystemTimer, tm *Timer) int64 {
	st.Len() // drains the incoming stacks
	tm.sh.mu.Lock()
	defer tm.sh.mu.Unlock()
	due, _ := unpack(tm.w.Load())
	return st.fromValue(due)
}

// TestWallClockDeadlineAfterStep: a deadline without a monotonic reading
// (here time.Now().Round(0), as time.Unix, time.Date, Parse or a deadline
// from the wire would be) is measured as time.Until measures it, at the
// call: after a wall-clock step back since New, the context still expires
// at its deadline, not the step earlier. Before the fix it was measured
// against the epoch's wall reading and fired 300ms early.
func TestWallClockDeadlineAfterStep(t *testing.T) {
	st := wallStepped(t)
	defer st.Stop()
	before := st.now()
	d := time.Now().Round(0).Add(time.Hour)
	ctx, cancel := st.WithDeadline(context.Background(), d)
	defer cancel()
	after := st.now()
	got, ok := ctx.Deadline()
	require.True(t, ok)
	require.Equal(t, d, got)
	// time.Until(d) at the call lies within [hour - (after-before), hour].
	due := dueNs(st, &ctx.(*timerCtx).t)
	require.GreaterOrEqual(t, due, before+int64(time.Hour)-(after-before), "the deadline moved early by the wall-clock step")
	require.LessOrEqual(t, due, after+int64(time.Hour)+st.tick, "the deadline moved late")
}

// TestWallClockScheduleAfterStep: the same for the times a Scheduler gives,
// such as a cron schedule's wall-clock times.
func TestWallClockScheduleAfterStep(t *testing.T) {
	st := wallStepped(t)
	defer st.Stop()
	before := st.now()
	at := time.Now().Round(0).Add(time.Hour)
	tm, err := st.ScheduleFunc(schedulerFunc(func(prev time.Time) time.Time {
		if prev.Before(at) {
			return at
		}
		return time.Time{}
	}), func() {})
	require.NoError(t, err)
	after := st.now()
	due := dueNs(st, tm)
	require.GreaterOrEqual(t, due, before+int64(time.Hour)-(after-before), "the run moved early by the wall-clock step")
	require.LessOrEqual(t, due, after+int64(time.Hour)+st.tick, "the run moved late")
}

type schedulerFunc func(prev time.Time) time.Time

func (f schedulerFunc) Next(prev time.Time) time.Time { return f(prev) }

// TestDeadlineFromClockCenturiesBeforeEpoch: a deadline is never early,
// whatever the clock reads. With a clock more than the largest Duration
// before the epoch (a mock set back), the clock reading's offset from the
// epoch saturates at its minimum and the deadline's distance from the
// reading at its maximum; their sum, -1ns, is before a deadline 10 years
// after the epoch, which then expired as soon as the clock reached the
// epoch, or at once.
func TestDeadlineFromClockCenturiesBeforeEpoch(t *testing.T) {
	const year = 365 * 24 * time.Hour
	fc := newFakeClock()
	st := newManual(t, fc)
	epoch := fc.Now()
	fc.Add(-math.MaxInt64)
	fc.Add(-10 * year) // 302 years before the epoch
	st.step()
	deadline := epoch.Add(10 * year)
	ctx, cancel := st.WithDeadline(context.Background(), deadline)
	defer cancel()
	st.step()
	require.NoError(t, ctx.Err(), "expired 312 years before its deadline")
	fc.Add(math.MaxInt64)
	fc.Add(10*year + time.Second) // the epoch and a second: 10 years to go
	st.step()
	require.NoError(t, ctx.Err(), "expired %v before its deadline", deadline.Sub(fc.Now()))
}

// TestWallClockChanValueAfterStep: a channel timer's value is the time it
// was due, read on the clock when it fires, as package time's is: its
// wall reading is the wall clock's. It was New's wall reading plus the
// time since, off by every step of the wall clock since New (and every
// suspend, which the monotonic clock does not count): 300ms here.
func TestWallClockChanValueAfterStep(t *testing.T) {
	st := wallStepped(t)
	defer st.Stop()
	check := func(what string, got, before, after time.Time) {
		t.Helper()
		got, before, after = got.Round(0), before.Round(0), after.Round(0) // wall readings
		if got.Before(before) || got.After(after) {
			t.Errorf("%s: the value reads %v on the wall clock, not in [%v, %v]", what,
				got.Format(time.StampMicro), before.Format(time.StampMicro), after.Format(time.StampMicro))
		}
	}
	before := time.Now()
	ct, err := st.NewTimer(0)
	require.NoError(t, err)
	check("NewTimer(0)", <-ct.C, before, time.Now())

	before = time.Now()
	ct.Reset(0)
	check("Reset(0)", <-ct.C, before, time.Now())

	// Fired by the wheel: due a microsecond after the Reset.
	before = time.Now()
	ct.Reset(time.Microsecond)
	for st.now() < ct.ct.when.Load() { // until it is due, on the wheel's clock
	}
	st.step()
	check("Reset(1µs), fired", <-ct.C, before, time.Now())
}
