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

// verdictChecker returns a check that vs holds a verdict on key (its case
// and what it judges) with mark, and a figure that contains figure.
func verdictChecker(t *testing.T, vs []Verdict) func(key, mark, figure string) {
	got := map[string]Verdict{}
	for _, v := range vs {
		got[v.Case+" "+v.What] = v
	}
	return func(key, mark, figure string) {
		t.Helper()
		v, ok := got[key]
		if !ok {
			t.Fatalf("no verdict %q in %+v", key, vs)
		}
		if v.Mark != mark || !strings.Contains(v.Figure, figure) {
			t.Errorf("%s: got %s %q, want %s and %q", key, v.Mark, v.Figure, mark, figure)
		}
	}
}

// workloadNamed returns the registered workload called name.
func workloadNamed(name string) *Workload {
	return workloads[slices.IndexFunc(workloads, func(w *Workload) bool { return w.Name == name })]
}

// TestJudgeQuickChurn: at the quick sizes, the N=1M targets are judged
// with their ratio, the N=10M ones are reported as not shown, with the
// sizes that ran and the flag that runs them, and a target that holds at
// every size gets a line per case.
func TestJudgeQuickChurn(t *testing.T) {
	runProfile = Quick
	wl := workloadNamed("churn")
	cases := []CaseResult{
		churnCase("N=100k", 50, 1, 200),
		churnCase("N=1M", 102, 1.0000004, 285),
	}
	vs := judge(wl, cases)
	check := verdictChecker(t, vs)
	check("N=1M ns/pair ≤ 0.2 × time.AfterFunc's", markMissed, "0.36×")
	// A target not shown at its size, missed at the largest quick size:
	// the line says so, with the figure there.
	check("N=10M ns/pair ≤ 0.2 × time.AfterFunc's", markNotShown,
		"the quick sizes are N=100k, N=1M; -full runs N=10M; missed at N=1M: 0.36×")
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
	wl := workloadNamed("churn")
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
	wl := workloadNamed("churn")
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
	wl := workloadNamed("memory")
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
// at M=200k whose p99 misses 1ms says so beside the "–", and the ones it
// meets (early = 0) stay bare.
func TestJudgeQuickStorm(t *testing.T) {
	runProfile = Quick
	wl := workloadNamed("storm")
	cr := CaseResult{Case: Case{Label: "M=200k in [1s,2s]"}, Results: []Result{
		{Impl: timingwheelSpec.Name, Metrics: []Metric{
			{Name: "early", Value: 0}, {Name: "p99 late", Value: 2.38e6},
			{Name: "max late", Value: 2.5e6}, {Name: "CPU", Value: 2e8}}},
	}}
	got := map[string]string{}
	for _, v := range judge(wl, []CaseResult{cr}) {
		if v.Mark != markNotShown {
			t.Errorf("%s: %s, want %s: the target is stated at M=1M", v.What, v.Mark, markNotShown)
		}
		got[v.What] = v.Figure
	}
	if f := got["p99 late ≤ 1ms"]; !strings.HasSuffix(f, "; missed at M=200k: 2.38ms = 2.38× the bound") {
		t.Errorf("p99: %q", f)
	}
	for _, what := range []string{"early = 0", "max late ≤ 3ms", "CPU ≤ 1s"} {
		if f := got[what]; strings.Contains(f, "missed at") {
			t.Errorf("%s: %q, met at M=200k", what, f)
		}
	}
}

// wheelAnd is a case labeled label whose timingwheel result has the
// metric at v and whose time.AfterFunc result has it at base.
func wheelAnd(label, metric string, v, base float64) CaseResult {
	return CaseResult{Case: Case{Label: label}, Results: []Result{
		{Impl: timingwheelSpec.Name, Metrics: []Metric{{Name: metric, Value: v}}},
		{Impl: runtimeSpec.Name, Metrics: []Metric{{Name: metric, Value: base}}},
	}}
}

// TestVerdictFigures: each kind of target's verdict, and the figure it
// prints, which reads as the verdict: a narrow miss shows the digits that
// make it one, a narrow pass those that make it one, and a ratio is
// timingwheel's figure ÷ the other's.
func TestVerdictFigures(t *testing.T) {
	k1 := parallelLabel(1, "rearm")
	for _, c := range []struct {
		name string
		eval func(CaseResult, []CaseResult) (bool, string, error)
		cr   CaseResult
		all  []CaseResult
		met  bool
		fig  string
	}{
		{"relative met", relative("ns", runtimeName, 0.2), wheelAnd("N=1M", "ns", 36, 200), nil, true, "0.18×"},
		{"relative missed", relative("ns", runtimeName, 0.2), wheelAnd("N=1M", "ns", 72, 200), nil, false, "0.36×"},
		{"relative missed by 0.5%", relative("ns", runtimeName, 0.2), wheelAnd("N=1M", "ns", 40.2, 200), nil, false, "0.201×"},
		{"relative met at the bound", relative("ns", runtimeName, 0.2), wheelAnd("N=1M", "ns", 40, 200), nil, true, "0.20×"},
		{"relative met by 0.1%", relative("ns", runtimeName, 0.8), wheelAnd("N=1M", "ns", 79.92, 100), nil, true, "0.80×"},
		{"below met by 0.1%", below("cpu", runtimeName), wheelAnd("c=10k", "cpu", 999, 1000), nil, true, "0.999×"},
		{"below missed at a tie", below("cpu", runtimeName), wheelAnd("c=10k", "cpu", 1000, 1000), nil, false, "1.00×"},
		{"below missed by 0.1%", below("cpu", runtimeName), wheelAnd("c=10k", "cpu", 1001, 1000), nil, false, "1.00×"},
		{"absolute missed by 0.2%", absolute("B/timer", 48, Decimal), wheelAnd("N=1M", "B/timer", 48.1, 0), nil, false, "48.1 = 1.002× the bound"},
		{"absolute met as printed", absolute("B/timer", 48, Decimal), wheelAnd("N=1M", "B/timer", 48.004, 0), nil, true, "48.0 = 1.00× the bound"},
		{"absolute met", absolute("B/timer", 48, Decimal), wheelAnd("N=1M", "B/timer", 47.9, 0), nil, true, "47.9 = 1.00× the bound"},
		{"absolute duration missed", absolute("p99", 2e6, Duration), wheelAnd("M=1M", "p99", 2.38e6, 0), nil, false, "2.38ms = 1.19× the bound"},
		{"absolute duration missed by 0.3%", absolute("p99", 2e6, Duration), wheelAnd("M=1M", "p99", 2.006e6, 0), nil, false, "2.01ms = 1.003× the bound"},
		{"absolute count", absolute("early", 0, Count), wheelAnd("M=1M", "early", 1, 0), nil, false, "1"},
		{"atLeast missed by 0.1%", atLeast("work", 1.7, Decimal), wheelAnd("k=2 churn", "work", 1.698, 0), nil, false, "1.698"},
		{"atLeast met", atLeast("work", 1.7, Decimal), wheelAnd("k=2 churn", "work", 1.704, 0), nil, true, "1.70"},
		{"atLeast percent missed", atLeast("achieved %", 99, Decimal), wheelAnd("N=1M", "achieved %", 98.96, 0), nil, false, "98.96"},
		{"atLeast duration met", atLeast("late min", 0, Duration), wheelAnd("c=10k", "late min", 0, 0), nil, true, "0ns"},
		{"noWorse met", noWorseThanAtOne("ns/op", runtimeName, "rearm"), wheelAnd("k=2 rearm", "ns/op", 50, 100),
			[]CaseResult{wheelAnd(k1, "ns/op", 60, 100)}, true, "0.50× here, 0.60× at k=1"},
		{"noWorse missed narrowly", noWorseThanAtOne("ns/op", runtimeName, "rearm"), wheelAnd("k=2 rearm", "ns/op", 53.2, 100),
			[]CaseResult{wheelAnd(k1, "ns/op", 53.1, 100)}, false, "0.532× here, 0.531× at k=1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			met, fig, err := c.eval(c.cr, c.all)
			if err != nil {
				t.Fatal(err)
			}
			if met != c.met || fig != c.fig {
				t.Errorf("got %v %q, want %v %q", met, fig, c.met, c.fig)
			}
		})
	}
}

// TestMissed: -check counts the missed targets, not those not shown.
func TestMissed(t *testing.T) {
	for _, c := range []struct {
		marks []string
		want  int
	}{
		{nil, 0},
		{[]string{markMet, markNotShown}, 0},
		{[]string{markMet, markMissed, markNotShown, markMissed}, 2},
	} {
		t.Run(strings.Join(c.marks, ","), func(t *testing.T) {
			var vs []Verdict
			for _, m := range c.marks {
				vs = append(vs, Verdict{Mark: m})
			}
			if got := missed(vs); got != c.want {
				t.Errorf("missed = %d, want %d", got, c.want)
			}
		})
	}
}
