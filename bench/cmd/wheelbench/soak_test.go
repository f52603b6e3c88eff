package main

import (
	"bytes"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// TestSoak runs the soak mode for a second and a half at tiny sizes, so
// that it keeps working: every check passes, and every path of the churn
// was taken.
func TestSoak(t *testing.T) {
	cfg := soakConfig{
		duration:   1500 * time.Millisecond,
		pending:    20_000,
		rate:       50_000,
		pendingMin: 50 * time.Millisecond, // some pending timers fire and are armed again
		pendingMax: time.Hour,
		late:       5 * time.Second, // CI machines are slow, and -race slower
		every:      250 * time.Millisecond,
		warmup:     500 * time.Millisecond,
		heapTol:    0.10,
		slack:      8,
		churners:   2,
		timeout:    testTimeout,
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	res := runSoak(cfg, io.Discard)
	var out bytes.Buffer
	res.write(&out)
	if !res.ok() {
		t.Fatalf("soak failed:\n%s", out.String())
	}
	for _, c := range []struct {
		what string
		n    int64
	}{
		{"callbacks run", res.runs},
		{"Stop calls that returned true", res.stopsTrue},
		{"Stop calls that returned false", res.stops - res.stopsTrue},
		{"Reset calls that returned true", res.resetsTrue},
		{"Reset calls that returned false", res.resets - res.resetsTrue},
		{"timers returned by SystemTimer.Stop", int64(res.returned)},
		{"samples", int64(len(res.samples))},
	} {
		if c.n == 0 {
			t.Errorf("no %s:\n%s", c.what, out.String())
		}
	}
	if res.returned != res.believed || res.matched != res.believed {
		t.Errorf("Stop returned %d, the checker held %d, %d matched", res.returned, res.believed, res.matched)
	}
	if !strings.Contains(out.String(), "PASS") {
		t.Errorf("summary without PASS:\n%s", out.String())
	}
}

// TestSoakChecker: the checker catches each kind of broken promise it
// knows, and does not flag a timer that keeps them.
func TestSoakChecker(t *testing.T) {
	const slots = 8
	c := newSoakChecker(slots, time.Millisecond, 10*time.Millisecond)
	want := [numSoakViolations]int64{}
	// check counts one more of each violation the step should flag, then
	// compares every count.
	check := func(step string, flagged ...soakViolation) {
		t.Helper()
		for _, v := range flagged {
			want[v]++
		}
		for k := range want {
			if got := c.counts[k].Load(); got != want[k] {
				t.Fatalf("%s: %d %q, want %d; examples: %q", step, got, soakViolationNames[k], want[k], c.examples[k])
			}
		}
	}
	hour := time.Hour

	// A timer run on time, and one stopped: no violation.
	g := c.beginArm(0, c.now()-int64(time.Millisecond), 0)
	c.fire(0, g)
	c.beginArm(1, c.now(), hour)
	c.stopped(1, true)
	check("on time, stopped")

	// Early, then twice, then a callback of a replaced timer.
	g = c.beginArm(2, c.now(), hour)
	c.fire(2, g)
	check("early", vEarly)
	c.fire(2, g)
	check("twice", vExtraRun)
	c.beginArm(2, c.now(), hour)
	c.fire(2, g)
	check("stale", vExtraRun)

	// Late.
	g = c.beginArm(3, c.now()-int64(time.Second), 0)
	c.fire(3, g)
	check("late", vLate)

	// Stop true after the run; Stop false before the deadline.
	c.stopped(0, true)
	check("Stop true after run", vStopTrue)
	c.beginArm(4, c.now(), hour)
	c.stopped(4, false)
	check("Stop false early", vStopFalseEarly)

	// Reset: true for a timer that ran; false before the deadline, and
	// then both runs are outstanding.
	r := c.beginReset(0, c.now(), hour)
	c.endReset(0, r, true)
	check("Reset true after run", vResetTrue)
	c.beginArm(5, c.now(), hour)
	r = c.beginReset(5, c.now(), hour)
	c.endReset(5, r, false)
	check("Reset false early", vResetFalseEarly)
	if out := c.slots[5].out(); out != 2 {
		t.Fatalf("runs outstanding after a Reset that returned false: %d, want 2", out)
	}
	// A Reset that returns true leaves one run, at the new deadline.
	g = c.beginArm(6, c.now(), hour)
	r = c.beginReset(6, c.now()-int64(time.Millisecond), 0)
	c.endReset(6, r, true)
	if out := c.slots[6].out(); out != 1 {
		t.Fatalf("runs outstanding after a Reset that returned true: %d, want 1", out)
	}
	c.fire(6, g)
	check("Reset true, then run")

	// Overdue, counted once however many sweeps see it.
	c.beginArm(7, c.now()-int64(time.Second), 0)
	for range 2 {
		c.sweep(c.now())
	}
	check("overdue", vOverdue)

	// After SystemTimer.Stop; the run itself is not counted late, as the
	// sweep counted the timer overdue.
	c.closed.Store(true)
	c.fire(7, soakGen(c.slots[7].state.Load()))
	check("after Stop", vAfterStop)
}

// TestSoakReconcile: the timers SystemTimer.Stop returns must be those the
// checker holds pending, each once.
func TestSoakReconcile(t *testing.T) {
	st, err := timingwheel.New()
	if err != nil {
		t.Fatal(err)
	}
	c := newSoakChecker(4, time.Millisecond, 10*time.Millisecond)
	for id := range uint32(4) {
		g := c.beginArm(id, c.now(), time.Hour)
		if c.handles[id], err = st.AfterFunc(time.Hour, soakCallback(id, g)); err != nil {
			t.Fatal(err)
		}
	}
	// Slot 3's timer is stopped behind the checker's back: it must come
	// out as unexpected when Stop's list is doctored to hold it.
	c.handles[3].Stop()
	c.slots[3].state.Add(^uint64(0)) // one run fewer
	left := st.Stop()
	if len(left) != 3 {
		t.Fatalf("Stop returned %d timers, want 3", len(left))
	}
	believed, matched := c.reconcile(left, c.now())
	if believed != 3 || matched != 3 || c.violations() != 0 {
		t.Fatalf("reconcile: believed %d, matched %d, %d violations", believed, matched, c.violations())
	}
	// Drop slot 0's timer and add slot 3's: one lost, one unexpected.
	doctored := append(left[:0:0], c.handles[3])
	for _, tm := range left {
		if tm != c.handles[0] {
			doctored = append(doctored, tm)
		}
	}
	believed, matched = c.reconcile(doctored, c.now())
	if believed != 3 || matched != 2 || c.counts[vLost].Load() != 1 || c.counts[vUnexpected].Load() != 1 {
		t.Fatalf("doctored: believed %d, matched %d, lost %d, unexpected %d", believed, matched, c.counts[vLost].Load(), c.counts[vUnexpected].Load())
	}
}

// TestLateBuckets: every lateness falls in a bucket whose top is above it
// and whose bucket below tops out at or below it.
func TestLateBuckets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		v := rng.Int64N(1 << rng.IntN(62))
		b := lateBucket(v)
		if b < 0 || b >= soakLateBuckets {
			t.Fatalf("lateBucket(%d) = %d, out of range", v, b)
		}
		if v <= 0 {
			if b != 0 {
				t.Fatalf("lateBucket(%d) = %d, want 0", v, b)
			}
			continue
		}
		if top := lateBucketTop(b); top <= v || (b > 1 && lateBucketTop(b-1) > v) {
			t.Fatalf("lateBucket(%d) = %d, whose top is %d and the previous one's %d", v, b, top, lateBucketTop(b-1))
		}
	}
	h := make([]int64, soakLateBuckets)
	for v := int64(1); v <= 100; v++ {
		h[lateBucket(v*int64(time.Millisecond))]++
	}
	if p := latePercentile(h, 50); p < 50*int64(time.Millisecond) || p > 64*int64(time.Millisecond) {
		t.Errorf("p50 of 1..100ms: %v", time.Duration(p))
	}
}

// TestSoakLater: planned slots come out once their time has come, in the
// order of their times, and none is lost when a plan adds another.
func TestSoakLater(t *testing.T) {
	l := newSoakLater()
	ms := int64(time.Millisecond)
	l.add(0, 0)
	l.add(30*ms, 2)
	l.add(12*ms, 1)
	l.add(10*time.Hour.Nanoseconds(), 3) // beyond the horizon: clamped
	var got []uint32
	collect := func(id uint32) { got = append(got, id) }
	l.due(5*ms, collect)
	if len(got) != 1 || got[0] != 0 {
		t.Fatalf("due at 5ms: %v", got)
	}
	l.due(40*ms, func(id uint32) {
		collect(id)
		if id == 1 {
			l.add(0, 4) // in the past: the next bucket
		}
	})
	if want := []uint32{0, 1, 4, 2}; !slices.Equal(got, want) {
		t.Fatalf("due at 40ms: %v, want %v", got, want)
	}
	l.due(soakLaterRes*soakLaterBuckets+40*ms, collect)
	if len(got) != 5 || got[4] != 3 {
		t.Fatalf("clamped plan: %v", got)
	}
}
