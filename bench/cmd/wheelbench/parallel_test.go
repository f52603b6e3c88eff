package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestParallelWithFull: a quick run without -workloads leaves parallel
// out, -full runs it, and naming it runs it at either size.
func TestParallelWithFull(t *testing.T) {
	defer func() { runProfile = Quick }()
	for _, c := range []struct {
		prof Profile
		list string
		want bool
	}{{Quick, "", false}, {Full, "", true}, {Quick, "parallel", true}, {Full, "churn", false}} {
		runProfile = c.prof
		ws, err := selectWorkloads(c.list)
		if err != nil {
			t.Fatal(err)
		}
		got := slices.ContainsFunc(ws, func(w *Workload) bool { return w.Name == "parallel" })
		if got != c.want || slices.ContainsFunc(ws, func(w *Workload) bool { return w.Name == "tick" }) {
			t.Errorf("%v, -workloads %q: got %v, want parallel %v and no tick", c.prof, c.list, names(ws), c.want)
		}
	}
}

func names(ws []*Workload) []string {
	var s []string
	for _, w := range ws {
		s = append(s, w.Name)
	}
	return s
}

func TestParallelK(t *testing.T) {
	for _, c := range []struct {
		cpus        int
		quick, full []int
	}{
		{1, []int{1}, []int{1, 2, 4, 8, 16}},
		{2, []int{1, 2}, []int{1, 2, 4, 8, 16}},
		{6, []int{1, 2, 6}, []int{1, 2, 4, 6, 8, 16}},
		{16, []int{1, 2, 16}, []int{1, 2, 4, 8, 16}},
		{64, []int{1, 2, 64}, []int{1, 2, 4, 8, 16, 64}},
	} {
		if got := parallelQuickK(c.cpus); !slices.Equal(got, c.quick) {
			t.Errorf("%d CPUs: quick %v, want %v", c.cpus, got, c.quick)
		}
		if got := parallelFullK(c.cpus); !slices.Equal(got, c.full) {
			t.Errorf("%d CPUs: full %v, want %v", c.cpus, got, c.full)
		}
	}
}

// TestParallelLabel: a case with more goroutines than CPUs says so, and
// the operation is read back from every label.
func TestParallelLabel(t *testing.T) {
	if got := parallelLabel(1, "churn"); got != "k=1 churn" {
		t.Errorf("k=1: %q", got)
	}
	k := parallelCPUs + 1
	over := parallelLabel(k, "reuse")
	if want := fmt.Sprintf("k=%d reuse (> %d CPUs)", k, parallelCPUs); over != want {
		t.Errorf("k=%d: %q, want %q", k, over, want)
	}
	if op := parallelOpOf(over); op != "reuse" {
		t.Errorf("parallelOpOf(%q) = %q", over, op)
	}
}

// TestParallelWork: a case after k=1 reports its work relative to k=1
// and its efficiency; one with more goroutines than CPUs does not.
func TestParallelWork(t *testing.T) {
	pr := newProgress(os.Stderr, true)
	atOne := map[[2]string]float64{}
	op := parallelOpList[slices.IndexFunc(parallelOpList, func(o parallelOp) bool { return o.name == "reuse" })]
	run := func(k int) Result {
		c := Case{Label: parallelLabel(k, op.name), GOMAXPROCS: k,
			Run: func(e *Env) error { return runParallel(e, op, k, 2000, 10, atOne) }}
		r := runCase(c, runtimeSpec, Tiny, pr, testTimeout)
		if r.Err != nil || r.Skipped != "" {
			t.Fatalf("k=%d: %v %s", k, r.Err, r.Skipped)
		}
		return r
	}
	one := run(1)
	if w, ok := one.metric("work"); !ok || w != 1 {
		t.Errorf("k=1: work %v %v, want 1", w, ok)
	}
	again := run(1) // k=1 again: its work is relative to the first k=1's
	w, ok1 := again.metric("work")
	eff, ok2 := again.metric("eff %")
	ns1, _ := one.metric("ns/op")
	ns2, _ := again.metric("ns/op")
	if !ok1 || !ok2 || w != ns1/ns2 || eff != 100*w {
		t.Errorf("work %v, eff %v; ns/op %v then %v", w, eff, ns1, ns2)
	}
	over := run(parallelCPUs + 1)
	if _, ok := over.metric("work"); ok {
		t.Errorf("k=%d on %d CPUs has a work figure", parallelCPUs+1, parallelCPUs)
	}
	if _, ok := over.metric("ns/op"); !ok {
		t.Errorf("k=%d: no ns/op", parallelCPUs+1)
	}
}

// parallelCase is a case of parallel with ns/op and work figures.
func parallelCase(k int, op string, wheelNs, runtimeNs, work float64) CaseResult {
	return CaseResult{Case: Case{Label: parallelLabel(k, op)}, Results: []Result{
		{Impl: timingwheelSpec.Name, Metrics: []Metric{{Name: "ns/op", Value: wheelNs}, {Name: "work", Value: work}}},
		{Impl: runtimeSpec.Name, Metrics: []Metric{{Name: "ns/op", Value: runtimeNs}, {Name: "work", Value: 1}}},
		{Impl: gozeroSpec.Name, Skipped: gozeroSpec.Serial},
	}}
}

// TestJudgeParallel: the work targets at k=2 are judged where there are
// two CPUs, those at k=16 are not shown where there are fewer than 16,
// and an operation the run left out says so.
func TestJudgeParallel(t *testing.T) {
	if parallelCPUs < 2 {
		t.Skip("one CPU: no k=2 target is shown")
	}
	runProfile = Quick
	wl := workloadNamed("parallel")
	cases := []CaseResult{
		parallelCase(1, "churn", 80, 160, 1),
		parallelCase(2, "churn", 45, 100, 1.78),
		parallelCase(1, "rearm", 35, 38, 1),
		parallelCase(2, "rearm", 23, 20, 1.52),
	}
	check := verdictChecker(t, judge(wl, cases))
	check("k=2 churn work ≥ 1.70 × k=1's", markMet, "1.78")
	check("k=2 rearm work ≥ 1.70 × k=1's", markMissed, "1.52")
	check("k=2 reuse work ≥ 1.70 × k=1's", markNotShown, "-parallel-cases left reuse out")
	if parallelCPUs < 16 {
		check("k=16 churn on 16 CPUs work ≥ 12.0 × k=1's", markNotShown, fmt.Sprintf("needs 16 CPUs, this machine has %d", parallelCPUs))
	}
	if parallelCPUs == 2 {
		check("k=2 churn ns/op ≤ 0.5 × time.AfterFunc's", markMet, "0.45×")
		// 23/20 = 1.15 at k=2 against 35/38 = 0.92 at k=1: worse.
		check("k=2 rearm ns/op ÷ time.Timer.Reset's ≤ that at k=1", markMissed, "1.15× here, 0.92× at k=1")
	}
}

// TestSelectLoopFailsOnTimeout: a timeout that wins the select fails the
// case, for each implementation with channel timers.
func TestSelectLoopFailsOnTimeout(t *testing.T) {
	pr := newProgress(os.Stderr, true)
	// A timeout of 0: the timer's value is there at once after every
	// Reset, so the select takes it whenever the message is not there
	// yet, and half the time when it is.
	c := Case{Label: "G=4", Run: func(e *Env) error { return runSelectLoop(e, 4, 20, 0) }}
	for _, spec := range []*ImplSpec{timingwheelSpec, runtimeSpec} {
		r := runCase(c, spec, Tiny, pr, testTimeout)
		if r.Err == nil || !strings.Contains(r.Err.Error(), "timeouts fired") {
			t.Errorf("%s: got error %v, want timeouts fired", spec.Name, r.Err)
		}
	}
}
