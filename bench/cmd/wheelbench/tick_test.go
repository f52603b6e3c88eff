package main

import (
	"os"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// TestTickConfigApplied: each case of the tick workload runs on a
// SystemTimer of its own configuration, never early, and skips the peers.
// A 100ms tick rounds each deadline up to the next multiple of 100ms after
// New; over 200 deadlines spread across a whole tick, some are rounded up by
// most of the tick, so the latest callback is more than half a tick late
// however long the storm took to start. With New's default 1ms tick, it
// would be about a millisecond late.
func TestTickConfigApplied(t *testing.T) {
	const tick = 100 * time.Millisecond
	pr := newProgress(os.Stderr, true)
	c := Case{Label: "tick=100ms", Run: func(e *Env) error {
		opts := []timingwheel.Option{timingwheel.WithTick(tick), timingwheel.WithWheelSize(64)}
		return runTick(e, opts, 200, 10*time.Millisecond, 10*time.Millisecond+tick, 100, 10*time.Millisecond)
	}}
	r := runCase(c, timingwheelSpec, Tiny, pr, testTimeout)
	if r.Err != nil || r.Skipped != "" {
		t.Fatalf("error %v, skipped %q", r.Err, r.Skipped)
	}
	for _, name := range []string{"early", "p50 late", "p99 late", "max late", "storm CPU", "idle CPU"} {
		if _, ok := r.metric(name); !ok {
			t.Errorf("no %q figure: %v", name, r.Metrics)
		}
	}
	if early, _ := r.metric("early"); early != 0 {
		t.Errorf("%v callbacks ran early", early)
	}
	if late, _ := r.metric("max late"); late < float64(tick/2) {
		t.Errorf("max lateness %v with a %v tick: the tick was not applied", time.Duration(late), tick)
	}
	if n := len(r.Samples["lateness"]); n != 200 {
		t.Errorf("%d lateness samples, want 200", n)
	}
	for _, spec := range impls[1:] {
		r := runCase(c, spec, Tiny, pr, testTimeout)
		if r.Skipped != tickSkipWhy {
			t.Errorf("%s: skipped %q, error %v, want skipped %q", spec.Name, r.Skipped, r.Err, tickSkipWhy)
		}
	}
}

// TestTickOnRequest: a run without -workloads leaves tick out; naming it
// runs it.
func TestTickOnRequest(t *testing.T) {
	runProfile = Quick
	all, err := selectWorkloads("")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range all {
		if w.Name == "tick" {
			t.Errorf("the default run includes tick")
		}
	}
	if len(all) != len(workloads)-2 { // nor parallel: see TestParallelWithFull
		t.Errorf("the default run has %d workloads of %d", len(all), len(workloads))
	}
	sel, err := selectWorkloads("tick")
	if err != nil || len(sel) != 1 || sel[0].Name != "tick" {
		t.Errorf("selectWorkloads(tick) = %v, %v", sel, err)
	}
}

func TestDurationsParam(t *testing.T) {
	p := &Param[[]time.Duration]{}
	*p = *tickTicks // the parse and format functions
	p.set = false
	if err := p.Set("100us, 2ms"); err != nil {
		t.Fatal(err)
	}
	if got := p.Get(Quick); len(got) != 2 || got[0] != 100*time.Microsecond || got[1] != 2*time.Millisecond {
		t.Errorf("got %v", got)
	}
	if s := p.String(); s != "100µs,2ms" {
		t.Errorf("String() = %q", s)
	}
	for _, bad := range []string{"", "0s", "-1ms", "1ms,x"} {
		if err := p.Set(bad); err == nil {
			t.Errorf("Set(%q) succeeded", bad)
		}
	}
}
