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
	check("N=1M ns/pair ≤ 0.2 × time.AfterFunc's", markMissed, "0.36× (table: 2.79×)")
	check("N=10M ns/pair ≤ 0.2 × time.AfterFunc's", markNotShown, "the quick sizes are N=100k, N=1M; -full runs N=10M")
	check("N=10M ns/pair ≤ 60", markNotShown, "-full")
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
		if strings.Contains(line, "ns/op") {
			t.Errorf("line %q", line)
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
