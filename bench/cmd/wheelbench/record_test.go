package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const readmeBefore = "# title\n\nIntro, with `" + resultsEnd + "` quoted nowhere else.\n\n## Results\n\n" +
	resultsBegin + "\n| old | table |\n|---|---|\n| 1 | 2 |\n" + resultsEnd + "\n\n## After\n\nText after.\n"

// TestRewriteReadme: -readme replaces what lies between the markers, keeps
// the markers and every byte outside them, and can do it again.
func TestRewriteReadme(t *testing.T) {
	doc := strings.Replace(readmeBefore, "`"+resultsEnd+"` quoted nowhere else", "no marker here", 1)
	path := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(path, []byte(doc), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, section := range []string{"new table\n", "newer table, no final newline"} {
		if err := rewriteReadme(path, section); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got := string(b)
		i := strings.Index(doc, resultsBegin) + len(resultsBegin)
		j := strings.Index(doc, resultsEnd)
		want := doc[:i] + "\n" + strings.TrimSuffix(section, "\n") + "\n" + doc[j:]
		if got != want {
			t.Errorf("after rewriting with %q:\n%s\nwant:\n%s", section, got, want)
		}
		if strings.Contains(got, "old | table") {
			t.Errorf("the old table is still there:\n%s", got)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after rewriting: %v, %v; want 0640", fi.Mode(), err)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".wheelbench-*")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// TestRewriteReadmeRefuses: without both markers, once each and in order,
// the command refuses and leaves the file as it was.
func TestRewriteReadmeRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"no markers":   "# title\n\n## Results\n\n| a | b |\n",
		"no end":       "# title\n" + resultsBegin + "\n| a |\n",
		"no begin":     "# title\n| a |\n" + resultsEnd + "\n",
		"two begins":   resultsBegin + "\n" + resultsBegin + "\nx\n" + resultsEnd + "\n",
		"end first":    resultsEnd + "\nx\n" + resultsBegin + "\n",
		"quoted twice": readmeBefore,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "README.md")
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := checkReadme(path); err == nil {
				t.Errorf("checkReadme: no error")
			}
			if err := rewriteReadme(path, "new table\n"); err == nil {
				t.Errorf("rewriteReadme: no error")
			}
			if b, _ := os.ReadFile(path); string(b) != doc {
				t.Errorf("file changed:\n%s", b)
			}
		})
	}
	if err := rewriteReadme(filepath.Join(t.TempDir(), "missing.md"), "x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// testRun is a run of churn and storm at the quick sizes, with go-zero
// skipped in one case, judged as the command judges it.
func testRun(t *testing.T) run {
	t.Helper()
	runProfile = Quick
	res := func(impl string, ms ...Metric) Result { return Result{Impl: impl, Metrics: ms} }
	churn := []CaseResult{
		{Case: Case{Label: "N=1M"}, Results: []Result{
			res(timingwheelSpec.Name, Metric{"ns/pair", 156, Decimal, true}, Metric{"allocs/pair", 1, Decimal, false}),
			res(runtimeSpec.Name, Metric{"ns/pair", 328, Decimal, true}, Metric{"allocs/pair", 1, Decimal, false}),
			{Impl: gozeroSpec.Name, Skipped: "too many | for it"},
		}},
	}
	storm := []CaseResult{
		{Case: Case{Label: "M=200k in [1s, 2s]"}, Results: []Result{
			res(timingwheelSpec.Name, Metric{"early", 0, Count, false}, Metric{"p99 late", 3e6, Duration, true},
				Metric{"max late", 4e6, Duration, true}, Metric{"CPU", 3e8, Duration, true}, Metric{"own p99", 1, Duration, false}),
			res(runtimeSpec.Name, Metric{"early", 0, Count, false}, Metric{"p99 late", 2.5e9, Duration, true},
				Metric{"max late", 3e9, Duration, true}, Metric{"CPU", 2e9, Duration, true}),
			res(gozeroSpec.Name, Metric{"early", 12, Count, false}, Metric{"p99 late", 2e8, Duration, true},
				Metric{"max late", 3e8, Duration, true}, Metric{"CPU", 1e9, Duration, true}),
		}},
	}
	wl := func(name string) *Workload {
		for _, w := range workloads {
			if w.Name == name {
				return w
			}
		}
		t.Fatalf("no workload %s", name)
		return nil
	}
	verdicts := append(judge(wl("churn"), churn), judge(wl("storm"), storm)...)
	return run{
		Machine: machine{Date: time.Date(2026, 11, 28, 6, 10, 0, 0, time.UTC), Commit: "abc1234", CPU: "Test CPU",
			NumCPU: 2, GOMAXPROCS: 2, Go: "go1.26.8 linux/amd64", Host: "Test Host!", Load: "0.42"},
		Command:   "go -C bench run ./cmd/wheelbench",
		Profile:   Quick,
		Elapsed:   65 * time.Second,
		Workloads: []workloadCases{{"churn", churn}, {"storm", storm}},
		Verdicts:  verdicts,
	}
}

// TestReadmeSection: the section says when, where and at which commit the
// run was made, has a row per case and figure of the README's choice with
// every implementation's figure, and carries every verdict somewhere.
func TestReadmeSection(t *testing.T) {
	r := testRun(t)
	s := readmeSection(r)
	for _, want := range []string{
		"2026-11-28 06:10 UTC", "abc1234", "Test CPU, 2 CPUs, GOMAXPROCS=2, load average 0.42 at the start", "go1.26.8 linux/amd64", "65 s",
		"| workload | case | figure | timingwheel | time.AfterFunc | go-zero | target: this run |",
		"| churn | N=1M | ns/pair | 156 | 328 | skipped¹ | ✗ ≤ 0.2 × time.AfterFunc's: 0.48×; – ≤ 0.2 × time.AfterFunc's at N=10M (missed at N=1M: 0.48×); ",
		"– ≤ 60 at N=10M (missed at N=1M: 156 = 2.60× the bound); ✓ allocs/pair ≤ 1, the Timer: Stop allocates nothing: 1.00 |",
		"| storm | M=200k in [1s, 2s] | CPU | 300ms | 2.00s | 1.00s | – ≤ 1s at M=1M (-full) |",
		"1 ✓ met, 1 ✗ missed, 6 – not shown by this run (6 of them stated at sizes only `-full` runs)",
		"| storm | M=200k in [1s, 2s] | early | 0 | 0 | 12 |",
		"| storm | M=200k in [1s, 2s] | p99 late | 3.00ms | 2.50s | 200ms | – ≤ 1ms at M=1M (missed at M=200k: ",
		`¹ go-zero: too many \| for it`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("section lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "own p99") {
		t.Errorf("a figure the README does not show is in it:\n%s", s)
	}
	// Every row has as many cells as the header.
	var cols int
	for line := range strings.Lines(s) {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|")
		if cols == 0 {
			cols = n
		} else if n != cols {
			t.Errorf("%d cells, header has %d: %s", n-1, cols-1, line)
		}
	}
	// Every verdict is in the table (the storm's four at M=1M, churn's).
	if n := strings.Count(s, markMet) + strings.Count(s, markMissed) + strings.Count(s, markNotShown); n < len(r.Verdicts) {
		t.Errorf("%d marks for %d verdicts:\n%s", n, len(r.Verdicts), s)
	}
}

// TestWriteResults: -results writes a new file per run, named by the
// date, the CPUs and the host, with the machine and the output.
func TestWriteResults(t *testing.T) {
	r := testRun(t)
	dir := filepath.Join(t.TempDir(), "results")
	var paths []string
	for range 2 {
		p, err := writeResults(dir, r, []byte("wheelbench: done in 65.0s\n\n"))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Base(p))
	}
	if paths[0] != "2026-11-28-2cpu-testhost.md" || paths[1] != "2026-11-28-2cpu-testhost-2.md" {
		t.Errorf("files %v", paths)
	}
	b, err := os.ReadFile(filepath.Join(dir, paths[0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"commit: abc1234", "Test CPU, 2 CPUs, GOMAXPROCS=2", "go1.26.8", "```text\nwheelbench: done in 65.0s\n```\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("results file lacks %q:\n%s", want, b)
		}
	}
}

// TestFiguresFile: what a child appends, its parent reads back, workload
// by workload.
func TestFiguresFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	r := testRun(t)
	for _, wl := range r.Workloads {
		if err := appendFigures(path, wl.Name, wl.Cases); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readFigures(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "churn" || got[1].Name != "storm" {
		t.Fatalf("got %+v", got)
	}
	if a, b := readmeSection(run{Workloads: got, Verdicts: r.Verdicts, Machine: r.Machine}),
		readmeSection(run{Workloads: r.Workloads, Verdicts: r.Verdicts, Machine: r.Machine}); a != b {
		t.Errorf("the table from the file differs:\n%s\nfrom the run:\n%s", a, b)
	}
	if got, err := readFigures(filepath.Join(t.TempDir(), "never")); err != nil || got != nil {
		t.Errorf("a file never written: %v, %v", got, err)
	}
}

// TestFromResultsFile: a run read back from the -results file of its
// output writes the same README section as the run itself, and the
// verdicts of targets at sizes the run lacks sit on the rows of the same
// case at a smaller size.
func TestFromResultsFile(t *testing.T) {
	r := testRun(t)
	var out bytes.Buffer
	writeHeader(&out, r.Profile, impls, r.Machine)
	for _, wl := range r.Workloads {
		i := slices.IndexFunc(workloads, func(w *Workload) bool { return w.Name == wl.Name })
		writeTable(&out, workloads[i], wl.Cases)
	}
	writeVerdicts(&out, r.Verdicts)
	fmt.Fprintf(&out, "wheelbench: done in %.1fs\n", r.Elapsed.Seconds())
	path, err := writeResults(t.TempDir(), r, out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got, err := readRunFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := readmeSection(got), readmeSection(r); a != b {
		t.Errorf("from the results file:\n%s\nfrom the run:\n%s\nthe output:\n%s", a, b, out.String())
	}
	if got.Machine.Host != r.Machine.Host || got.Machine.Load != "0.42" || got.Command != r.Command {
		t.Errorf("machine %+v, command %q", got.Machine, got.Command)
	}
}

// TestParseTable: a table as writeTable writes it reads back: figures
// under their columns whatever their widths, an empty cell left empty,
// warnings, and skipped and failed rows.
func TestParseTable(t *testing.T) {
	const label = "M=1k in [1s, 2s]"
	in := []CaseResult{
		{Case: Case{Label: label}, Results: []Result{
			{Impl: timingwheelSpec.Name, Metrics: []Metric{{"fired", 200_000, Count, false}, {"early", 0, Count, false},
				{"p99 late", 3e6, Duration, true}, {"heap growth", 45.8 * (1 << 20), Bytes, false}, {"work", 1.5, Decimal, false}}},
			{Impl: runtimeSpec.Name, Metrics: []Metric{{"fired", 12, Count, false},
				{"p99 late", 1.02e9, Duration, true}, {"heap growth", 122 * (1 << 20), Bytes, false}, {"work", 1027, Decimal, false}, {"achieved %", 99.96, Decimal, false}},
				Warnings: []string{"a doubt"}},
			{Impl: gozeroSpec.Name, Skipped: "no channel timers"},
		}},
		{Case: Case{Label: "M=2k"}, Results: []Result{{Impl: timingwheelSpec.Name, Err: errors.New("warm-up exchange: EOF")}}},
	}
	var b bytes.Buffer
	writeTable(&b, &Workload{Name: "x", Title: "a title"}, in)
	lines := strings.Split(b.String(), "\n")
	cases, end, err := parseTable(lines, 2)
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if end != 6 || len(cases) != 2 || len(cases[0].Results) != 3 || cases[0].Case.Label != label {
		t.Fatalf("end %d, cases %+v\n%s", end, cases, b.String())
	}
	for i, r := range in[0].Results[:2] {
		got := cases[0].Results[i]
		if len(got.Metrics) != len(r.Metrics) {
			t.Errorf("%s: %+v, want %+v", r.Impl, got.Metrics, r.Metrics)
			continue
		}
		for j, m := range r.Metrics {
			g := got.Metrics[j]
			if g.Name != m.Name || formatValue(g.Value, g.Kind) != formatValue(m.Value, m.Kind) {
				t.Errorf("%s %s: %v (%v), want %v", r.Impl, m.Name, g.Value, g.Kind, m.Value)
			}
		}
	}
	if cases[0].Results[2].Skipped != "no channel timers" || cases[1].Results[0].Err == nil {
		t.Errorf("skipped %q, failed %v", cases[0].Results[2].Skipped, cases[1].Results[0].Err)
	}
}
