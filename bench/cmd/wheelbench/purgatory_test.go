package main

import (
	"math"
	"os"
	"slices"
	"testing"
	"time"
)

func TestPurgLatencies(t *testing.T) {
	cs, err := parsePurgLatencies("20ms/60ms, 200ms/400ms")
	if err != nil || !slices.Equal(cs, purgKafkaCases) {
		t.Fatalf("parsePurgLatencies = %v, %v; want %v", cs, err, purgKafkaCases)
	}
	if s := formatPurgLatencies(cs); s != "20ms/60ms,200ms/400ms" {
		t.Errorf("formatPurgLatencies = %q", s)
	}
	for _, bad := range []string{"", "20ms", "20ms/x", "60ms/20ms", "0s/1ms", "-1ms/1ms"} {
		if _, err := parsePurgLatencies(bad); err == nil {
			t.Errorf("parsePurgLatencies(%q) succeeded", bad)
		}
	}
}

// TestPurgSchedule: the arrivals are a Poisson process of the rate asked
// for, and the latencies have the median and 75th percentile asked for.
func TestPurgSchedule(t *testing.T) {
	c := purgConfig{n: 200_000, rate: 200_000, latency: purgLatencyCase{20 * time.Millisecond, 60 * time.Millisecond}}
	arrive, latency := purgSchedule(c)
	if !slices.IsSorted(arrive) || arrive[0] < 0 {
		t.Fatalf("arrivals are not increasing from 0")
	}
	rate := float64(c.n) / (float64(arrive[c.n-1]) / 1e9)
	if math.Abs(rate/float64(c.rate)-1) > 0.01 {
		t.Errorf("rate %.0f/s, want %d/s within 1%%", rate, c.rate)
	}
	// Exponential gaps: their standard deviation equals their mean.
	var sum, sq float64
	for i := 1; i < c.n; i++ {
		g := float64(arrive[i] - arrive[i-1])
		sum += g
		sq += g * g
	}
	mean := sum / float64(c.n-1)
	if sd := math.Sqrt(sq/float64(c.n-1) - mean*mean); math.Abs(sd/mean-1) > 0.02 {
		t.Errorf("gaps: sd/mean = %.3f, want 1 (exponential)", sd/mean)
	}
	sorted := slices.Clone(latency)
	slices.Sort(sorted)
	for _, q := range []struct {
		p    float64
		want time.Duration
	}{{50, c.latency.p50}, {75, c.latency.p75}} {
		if got := time.Duration(percentile(sorted, q.p)); math.Abs(float64(got)/float64(q.want)-1) > 0.03 {
			t.Errorf("latency p%v = %v, want %v within 3%%", q.p, got, q.want)
		}
	}
}

func TestPurgKeyNames(t *testing.T) {
	keys := purgKeyNames()
	if len(keys) != purgKeys {
		t.Fatalf("%d keys, want %d", len(keys), purgKeys)
	}
	for i, k := range keys {
		if slices.Contains(keys[:i], k) {
			t.Errorf("key %q twice", k)
		}
	}
	if !slices.Equal(keys, purgKeyNames()) {
		t.Errorf("the keys differ between runs")
	}
}

// TestPurgCalendar: a request is taken from the completion queue in the
// first slot that ends at or after its completion time, never before, and
// never in a slot already taken.
func TestPurgCalendar(t *testing.T) {
	c := newPurgCalendar(10 * time.Millisecond)
	op := func(at int64) *purgOp { return &purgOp{completesAt: at} }
	a, b, late := op(1), op(purgSlot), op(3*purgSlot+1)
	c.add(a)
	c.add(b)
	c.add(late)
	if _, _, ok := c.take(purgSlot-1, nil); ok {
		t.Fatalf("slot 1 taken before it ended")
	}
	got, k, ok := c.take(purgSlot, nil)
	if !ok || k != 1 || !slices.Equal(got, []*purgOp{a, b}) {
		t.Fatalf("slot 1: %v %d %v", got, k, ok)
	}
	// Slot 1 is taken: a request due in it now goes to the next one.
	early := op(purgSlot)
	c.add(early)
	got, k, ok = c.take(10*purgSlot, nil)
	if !ok || k != 2 || !slices.Equal(got, []*purgOp{early}) {
		t.Fatalf("slot 2: %v %d %v", got, k, ok)
	}
	got, k, _ = c.take(10*purgSlot, nil)
	if k != 3 || len(got) != 0 {
		t.Fatalf("slot 3: %v %d", got, k)
	}
	got, k, _ = c.take(10*purgSlot, nil)
	if k != 4 || !slices.Equal(got, []*purgOp{late}) {
		t.Fatalf("slot 4: %v %d", got, k)
	}
}

// fakeImpl is an Impl whose timers fire when the test says, and whose Stop
// cannot tell whether it kept the function from running, like go-zero's.
type fakeImpl struct {
	fs    []func()
	stops int
}

func (f *fakeImpl) AfterFunc(d time.Duration, fn func()) Handle {
	f.fs = append(f.fs, fn)
	return len(f.fs) - 1
}
func (f *fakeImpl) Stop(Handle) bool { f.stops++; return true }
func (f *fakeImpl) Flush()           {}
func (f *fakeImpl) Pending() int     { return -1 }
func (f *fakeImpl) Close([]Handle)   {}

// TestImplTimer: on an implementation whose Stop always says true, the
// wrapper's Stop is true only if it kept the function from running, and the
// function runs at most once.
func TestImplTimer(t *testing.T) {
	f := &fakeImpl{}
	runs := 0
	pg, err := newPurgatoryOn(f)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()

	fired := &implTimer{impl: f, f: func() { runs++ }}
	fired.h = f.AfterFunc(time.Second, fired.fire)
	f.fs[0]()
	if fired.Stop() || runs != 1 || f.stops != 0 {
		t.Errorf("after it fired: Stop true, or %d runs, %d Stop calls", runs, f.stops)
	}
	stopped := &implTimer{impl: f, f: func() { runs++ }}
	stopped.h = f.AfterFunc(time.Second, stopped.fire)
	if !stopped.Stop() || f.stops != 1 {
		t.Errorf("before it fired: Stop false, or %d Stop calls", f.stops)
	}
	f.fs[1]()
	if runs != 1 {
		t.Errorf("a stopped timer's function ran")
	}
}

// TestPurgatoryWorkload runs a small case against every implementation and
// checks the accounting: every request ended once, as completed or expired,
// in the proportions the latency distribution gives.
func TestPurgatoryWorkload(t *testing.T) {
	c := purgConfig{n: 5000, rate: 200_000, generators: 2, timeout: 20 * time.Millisecond,
		latency: purgLatencyCase{2 * time.Millisecond, 6 * time.Millisecond}}
	_, latency := purgSchedule(c)
	wantExpired := 0
	for _, l := range latency {
		if l >= int64(c.timeout) {
			wantExpired++
		}
	}
	pr := newProgress(os.Stderr, true)
	for _, spec := range impls {
		r := runCase(Case{Label: "t", Run: func(e *Env) error { return runPurgatory(e, c) }}, spec, Tiny, pr, testTimeout)
		if r.Err != nil || r.Skipped != "" {
			t.Fatalf("%s: error %v, skipped %q", spec.Name, r.Err, r.Skipped)
		}
		completed, _ := r.metric("completed")
		expired, _ := r.metric("expired")
		calls, _ := r.metric("OnComplete")
		if calls != float64(c.n) || completed+expired != float64(c.n) {
			t.Errorf("%s: %v OnComplete calls, %v completed + %v expired; want %d", spec.Name, calls, completed, expired, c.n)
		}
		// A request whose latency is just below the timeout may expire
		// before the completion goroutine gets to it (how many depends
		// on the machine); one whose latency is not below it must.
		if expired < float64(wantExpired) {
			t.Errorf("%s: %v expired, want at least %d", spec.Name, expired, wantExpired)
		}
		if achieved, ok := r.metric("achieved/s"); !ok || achieved <= 0 {
			t.Errorf("%s: achieved/s %v", spec.Name, achieved)
		}
	}
}
