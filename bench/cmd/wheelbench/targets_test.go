package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTargetsNameWorkloads: every target belongs to a registered workload,
// and every workload of the comparison has targets.
func TestTargetsNameWorkloads(t *testing.T) {
	for _, tg := range targets {
		if !slices.ContainsFunc(workloads, func(w *Workload) bool { return w.Name == tg.Workload }) {
			t.Errorf("target %q: no workload %q", tg.What, tg.Workload)
		}
	}
	for _, wl := range workloads {
		if !wl.OnRequest && !slices.ContainsFunc(targets, func(tg Target) bool { return tg.Workload == wl.Name }) {
			t.Errorf("workload %s has no targets", wl.Name)
		}
	}
}

// churnCase is a case of churn with the given figures, ns/pair and
// allocs/pair, for this library and for time.AfterFunc.
func churnCase(label string, wheelNs, wheelAllocs, runtimeNs float64) CaseResult {
	return CaseResult{Case: Case{Label: label}, Results: []Result{
		{Impl: timingwheelSpec.Name, Metrics: []Metric{
			{Name: "ns/pair", Value: wheelNs}, {Name: "allocs/pair", Value: wheelAllocs}}},
		{Impl: runtimeSpec.Name, Metrics: []Metric{
			{Name: "ns/pair", Value: runtimeNs}, {Name: "allocs/pair", Value: 1}}},
		{Impl: gozeroSpec.Name, Skipped: "too big"},
	}}
}

// TestJudgeQuickChurn: at the quick sizes, the N=1M targets are judged
// with their ratio, the N=10M ones are reported as not shown, with the
// sizes that ran and the flag that runs them, and a target that holds at
// every size gets a line per case.
func TestJudgeQuickChurn(t *testing.T) {
	runProfile = Quick
	wl := workloads[slices.IndexFunc(workloads, func(w *Workload) bool { return w.Name == "churn" })]
	cases := []CaseResult{
		churnCase("N=100k", 50, 1, 200),
		churnCase("N=1M", 102, 1.0000004, 285),
	}
	vs := judge(wl, cases)
	got := map[string]Verdict{}
	for _, v := range vs {
		got[v.Case+" "+v.What] = v
	}
	check := func(key, mark, figure string) {
		t.Helper()
		v, ok := got[key]
		if !ok {
			t.Fatalf("no verdict %q in %+v", key, vs)
		}
		if v.Mark != mark || !strings.Contains(v.Figure, figure) {
			t.Errorf("%s: got %s %q, want %s and %q", key, v.Mark, v.Figure, mark, figure)
		}
	}
	check("N=1M ns/pair ≤ 0.2 × time.AfterFunc's", markMissed, "timingwheel ÷ time.AfterFunc = 0.36× (lower is better)")
	// A target not shown at its size, missed at the largest quick size:
	// the line says so, with the figure there.
	check("N=10M ns/pair ≤ 0.2 × time.AfterFunc's", markNotShown,
		"the quick sizes are N=100k, N=1M; -full runs N=10M; missed at N=1M: timingwheel ÷ time.AfterFunc = 0.36× (lower is better)")
	check("N=10M ns/pair ≤ 60", markNotShown, "-full runs N=10M; missed at N=1M: 102 = 1.70× the bound")
	check("N=100k allocs/pair ≤ 1, the Timer: Stop allocates nothing", markMet, "1.00")
	check("N=1M allocs/pair ≤ 1, the Timer: Stop allocates nothing", markMet, "1.00")
	if len(vs) != 5 {
		t.Errorf("%d verdicts, want 5: %+v", len(vs), vs)
	}

	var b bytes.Buffer
	writeVerdicts(&b, vs)
	out := b.String()
	for _, want := range []string{
		"  ✗ churn  N=1M ",
		"2 met, 1 missed, 2 not shown: 2 stated at sizes the quick run does not reach (-full runs them)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for line := range strings.Lines(out) {
		if strings.Contains(line, "ns/op") || strings.Contains(line, "table:") {
			t.Errorf("line %q", line)
		}
	}
}

// TestJudgeQuickMetAtSmallerSize: a target not shown at its size and met
// at the largest quick size is a bare "–", with the sizes and the flag; the
// largest size decides, not a smaller one that misses.
func TestJudgeQuickMetAtSmallerSize(t *testing.T) {
	runProfile = Quick
	wl := workloads[slices.IndexFunc(workloads, func(w *Workload) bool { return w.Name == "churn" })]
	vs := judge(wl, []CaseResult{
		churnCase("N=100k", 90, 1, 200), // 0.45×: missed at 100k
		churnCase("N=1M", 50, 1, 285),   // 0.18×: met at 1M
	})
	for _, v := range vs {
		if v.Case == "N=10M" && strings.Contains(v.Figure, "missed at") {
			t.Errorf("%s: %q, want no figure of a smaller size", v.What, v.Figure)
		}
	}
}

// TestJudgeWithoutBaseline: a run without the baseline, or in which this
// library failed, shows the target as not shown, and says why.
func TestJudgeWithoutBaseline(t *testing.T) {
	runProfile = Quick
	wl := workloads[slices.IndexFunc(workloads, func(w *Workload) bool { return w.Name == "churn" })]
	only := churnCase("N=1M", 50, 1, 285)
	only.Results = only.Results[:1]
	failed := churnCase("N=1M", 50, 1, 285)
	failed.Results[0] = Result{Impl: timingwheelSpec.Name, Err: errors.New("boom")}
	for _, c := range []struct {
		cr   CaseResult
		want string
	}{
		{only, "time.AfterFunc not in this run (-impls)"},
		{failed, "timingwheel did not run: boom"},
	} {
		vs := judge(wl, []CaseResult{c.cr})
		if vs[0].Mark != markNotShown || vs[0].Figure != c.want {
			t.Errorf("got %+v, want %s %q", vs[0], markNotShown, c.want)
		}
	}
}

// TestVerdictsFile: what a child appends, its parent reads back.
func TestVerdictsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v")
	a := []Verdict{{"churn", "N=1M", "ns/pair ≤ 60", markMissed, "91.6 = 1.53× the bound", ""}}
	b := []Verdict{{"storm", "M=1M", "CPU ≤ 1s", markNotShown, "the quick sizes are M=200k; -full runs M=1M", notAtSize}}
	if err := appendVerdicts(path, a); err != nil {
		t.Fatal(err)
	}
	if err := appendVerdicts(path, b); err != nil {
		t.Fatal(err)
	}
	got, err := readVerdicts(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(a, b...); !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestJudgeMemoryAsPrinted: a figure that prints as the bound meets it
// (the live heap moves by a few bytes per million timers); one above it
// misses.
func TestJudgeMemoryAsPrinted(t *testing.T) {
	runProfile = Quick
	wl := workloads[slices.IndexFunc(workloads, func(w *Workload) bool { return w.Name == "memory" })]
	for _, c := range []struct {
		bytes float64
		mark  string
	}{{47.5, markMet}, {48.02, markMet}, {48.6, markMissed}} {
		cr := CaseResult{Case: Case{Label: "N=1M"}, Results: []Result{
			{Impl: timingwheelSpec.Name, Metrics: []Metric{{Name: "B/timer", Value: c.bytes}}}}}
		if vs := judge(wl, []CaseResult{cr}); len(vs) != 1 || vs[0].Mark != c.mark {
			t.Errorf("%v B/timer: got %+v, want %s", c.bytes, vs, c.mark)
		}
	}
}

// TestJudgeQuickStorm: the storm targets are stated at M=1M; a quick run
// at M=200k whose p99 misses 2ms says so beside the "–", and the ones it
// meets (early = 0) stay bare.
func TestJudgeQuickStorm(t *testing.T) {
	runProfile = Quick
	wl := workloads[slices.IndexFunc(workloads, func(w *Workload) bool { return w.Name == "storm" })]
	cr := CaseResult{Case: Case{Label: "M=200k in [1s,2s]"}, Results: []Result{
		{Impl: timingwheelSpec.Name, Metrics: []Metric{
			{Name: "early", Value: 0}, {Name: "p99 late", Value: 2.38e6},
			{Name: "max late", Value: 4e6}, {Name: "CPU", Value: 2e8}}},
	}}
	got := map[string]string{}
	for _, v := range judge(wl, []CaseResult{cr}) {
		if v.Mark != markNotShown {
			t.Errorf("%s: %s, want %s: the target is stated at M=1M", v.What, v.Mark, markNotShown)
		}
		got[v.What] = v.Figure
	}
	if f := got["p99 late ≤ 2ms"]; !strings.HasSuffix(f, "; missed at M=200k: 2.38ms = 1.19× the bound") {
		t.Errorf("p99: %q", f)
	}
	for _, what := range []string{"early = 0", "max late ≤ 5ms", "CPU ≤ 1s"} {
		if f := got[what]; strings.Contains(f, "missed at") {
			t.Errorf("%s: %q, met at M=200k", what, f)
		}
	}
}
