package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// testTimeout bounds each run, below go test's own timeout.
const testTimeout = 2 * time.Minute

// TestWorkloads runs every case of every registered workload, at the tiny
// sizes, against every implementation, and checks that each produced
// figures and a table.
func TestWorkloads(t *testing.T) {
	pr := newProgress(os.Stderr, true)
	for _, wl := range workloads {
		t.Run(wl.Name, func(t *testing.T) {
			var cases []CaseResult
			for _, c := range wl.Cases(Tiny) {
				cr := CaseResult{Case: c}
				for _, spec := range impls {
					pr.begin(wl.Name, c.Label, spec.Name)
					r := runCase(c, spec, Tiny, pr, testTimeout)
					// A workload that needs contexts skips the
					// implementations without them (see TimeoutContexter);
					// so do rearm and reuse those without Reset (see
					// Resetter); tick measures options that only this
					// library has.
					mayBeSkipped := !hasContexts(spec) || !hasReset(spec) || r.Skipped == tickSkipWhy && spec != impls[0]
					if r.Err != nil || r.Skipped != "" && !mayBeSkipped {
						t.Fatalf("%s %s: error %v, skipped %q", c.Label, spec.Name, r.Err, r.Skipped)
					}
					if r.Skipped == "" && len(r.Metrics) == 0 {
						t.Fatalf("%s %s: no metrics", c.Label, spec.Name)
					}
					cr.Results = append(cr.Results, r)
				}
				cases = append(cases, cr)
			}
			var b bytes.Buffer
			writeTable(&b, wl, cases)
			for _, spec := range impls {
				if !strings.Contains(b.String(), spec.Name) {
					t.Errorf("table lacks %s:\n%s", spec.Name, b.String())
				}
			}
			if strings.Contains(b.String(), "FAILED") {
				t.Errorf("table:\n%s", b.String())
			}
			for _, c := range wl.Charts {
				if _, err := c.Draw(t.TempDir(), "png", wl, cases); err != nil {
					t.Errorf("chart: %v", err)
				}
			}
		})
	}
}

// hasContexts reports whether the implementation of spec is a
// TimeoutContexter.
func hasContexts(spec *ImplSpec) bool {
	impl := spec.New()
	defer impl.Close(nil)
	_, ok := impl.(TimeoutContexter)
	return ok
}

// TestStormNeverEarly: this library and the runtime never run a callback
// before its deadline.
func TestStormNeverEarly(t *testing.T) {
	pr := newProgress(os.Stderr, true)
	c := Case{Label: "M=2000", Run: func(e *Env) error { return runStorm(e, 2000, time.Millisecond, 10*time.Millisecond) }}
	for _, spec := range []*ImplSpec{timingwheelSpec, runtimeSpec} {
		r := runCase(c, spec, Tiny, pr, testTimeout)
		if r.Err != nil {
			t.Fatalf("%s: %v", spec.Name, r.Err)
		}
		if fired, _ := r.metric("fired"); fired != 2000 {
			t.Errorf("%s: fired %v, want 2000", spec.Name, fired)
		}
		if early, _ := r.metric("early"); early != 0 {
			t.Errorf("%s: %v fired early", spec.Name, early)
		}
		if n := len(r.Samples["lateness"]); n != 2000 {
			t.Errorf("%s: %d lateness samples, want 2000", spec.Name, n)
		}
	}
}

// TestSkip: a case too large for an implementation's MaxPending skips it,
// and the table says why.
func TestSkip(t *testing.T) {
	spec := *runtimeSpec
	spec.MaxPending = func() int { return 10 }
	spec.SkipWhy = "too many for the test"
	c := Case{Label: "N=11", Run: func(e *Env) error { return runMemory(e, 11) }}
	r := runCase(c, &spec, Tiny, newProgress(os.Stderr, true), testTimeout)
	if r.Skipped != spec.SkipWhy || r.Err != nil || len(r.Metrics) != 0 {
		t.Fatalf("got skipped %q, err %v, metrics %v", r.Skipped, r.Err, r.Metrics)
	}
	var b bytes.Buffer
	writeTable(&b, &Workload{Name: "memory"}, []CaseResult{{Case: c, Results: []Result{r}}})
	if !strings.Contains(b.String(), "skipped: too many for the test") {
		t.Errorf("table:\n%s", b.String())
	}
}

// TestTimeoutContexter: the implementations with a context API give a
// context that expires, and one whose cancel releases it.
func TestTimeoutContexter(t *testing.T) {
	for _, spec := range impls {
		impl := spec.New()
		tc, ok := impl.(TimeoutContexter)
		if !ok {
			impl.Close(nil)
			continue
		}
		ctx, cancel := tc.WithTimeout(context.Background(), time.Millisecond)
		<-ctx.Done()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("%s: expired context's Err is %v", spec.Name, ctx.Err())
		}
		cancel()
		ctx, cancel = tc.WithTimeout(context.Background(), time.Hour)
		cancel()
		<-ctx.Done()
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Errorf("%s: canceled context's Err is %v", spec.Name, ctx.Err())
		}
		impl.Close(nil)
	}
}

func TestSizeChart(t *testing.T) {
	dir := t.TempDir()
	var cases []CaseResult
	for i, n := range []int{1000, 100_000, 10_000_000} {
		var rs []Result
		for j, spec := range impls {
			rs = append(rs, Result{Impl: spec.Name, Metrics: []Metric{{Name: "ns/pair", Value: float64(50 * (i + 1) * (j + 1))}}})
		}
		cases = append(cases, CaseResult{Case: Case{Label: "N=" + formatCount(n), X: float64(n)}, Results: rs})
	}
	files, err := SizeChart{Metric: "ns/pair", Title: "t", XLabel: "x", YLabel: "y"}.Draw(dir, "svg", &Workload{Name: "churn"}, cases)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || filepath.Base(files[0]) != "churn-ns-pair.svg" {
		t.Fatalf("files %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Size() == 0 {
		t.Fatalf("chart file: %v", err)
	}
}

func TestPercentile(t *testing.T) {
	hundred := make([]int64, 100)
	for i := range hundred {
		hundred[i] = int64(i + 1)
	}
	tests := []struct {
		name   string
		sorted []int64
		p      float64
		want   int64
	}{
		{"empty", nil, 50, 0},
		{"one", []int64{7}, 99, 7},
		{"p50 of 1..100", hundred, 50, 50},
		{"p99 of 1..100", hundred, 99, 99},
		{"p99.9 of 1..100", hundred, 99.9, 100},
		{"p100 of 1..100", hundred, 100, 100},
		{"p1 of 1..100", hundred, 1, 1},
		{"p50 of 1..3", []int64{1, 2, 3}, 50, 2},
		{"p50 of 1..4", []int64{1, 2, 3, 4}, 50, 2},
		{"negatives", []int64{-5, -1, 0, 3}, 25, -5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v, %v) = %d, want %d", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
	if got := countBelow([]int64{-3, -1, 0, 0, 2}, 0); got != 2 {
		t.Errorf("countBelow = %d, want 2", got)
	}
}

func TestCounts(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
		out  string
	}{
		{"1M", 1_000_000, "1M"},
		{"200k", 200_000, "200k"},
		{"1_000_000", 1_000_000, "1M"},
		{"1500", 1500, "1500"},
		{"10M", 10_000_000, "10M"},
		{"2G", 2_000_000_000, "2000M"},
	} {
		n, err := parseCount(tt.in)
		if err != nil || n != tt.want {
			t.Errorf("parseCount(%q) = %d, %v; want %d", tt.in, n, err, tt.want)
		}
		if s := formatCount(n); s != tt.out {
			t.Errorf("formatCount(%d) = %q, want %q", n, s, tt.out)
		}
	}
	for _, bad := range []string{"", "0", "-1", "k", "1.5M", "x", "2000G"} {
		if _, err := parseCount(bad); err == nil {
			t.Errorf("parseCount(%q) succeeded", bad)
		}
	}
	ns, err := parseCounts("100k,1M")
	if err != nil || len(ns) != 2 || ns[0] != 100_000 || ns[1] != 1_000_000 {
		t.Errorf("parseCounts = %v, %v", ns, err)
	}
}

func TestParamProfiles(t *testing.T) {
	p := &Param[int]{defaults: [3]int{1, 2, 3}, parse: parseCount, format: formatCount}
	if p.Get(Tiny) != 1 || p.Get(Quick) != 2 || p.Get(Full) != 3 {
		t.Fatalf("defaults: %d %d %d", p.Get(Tiny), p.Get(Quick), p.Get(Full))
	}
	if err := p.Set("5k"); err != nil {
		t.Fatal(err)
	}
	if p.Get(Tiny) != 5000 || p.Get(Full) != 5000 {
		t.Errorf("a flag given on the command line must win over every profile")
	}
	if err := p.Set("nope"); err == nil {
		t.Errorf("Set(nope) succeeded")
	}
}

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		k    Kind
		want string
	}{
		{1234567, Count, "1,234,567"},
		{-1234, Count, "-1,234"},
		{999, Count, "999"},
		{512, Duration, "512ns"},
		{1500, Duration, "1.50µs"},
		{6.43e6, Duration, "6.43ms"},
		{2.1e9, Duration, "2.10s"},
		{-3e6, Duration, "-3.00ms"},
		{48.1, Decimal, "48.1"},
		{3434, Decimal, "3434"},
		{1.004, Decimal, "1.00"},
		{45.9 * (1 << 20), Bytes, "45.9 MiB"},
		{100, Bytes, "100 B"},
	} {
		if got := formatValue(tt.v, tt.k); got != tt.want {
			t.Errorf("formatValue(%v, %v) = %q, want %q", tt.v, tt.k, got, tt.want)
		}
	}
}

// TestFormatJudged: a figure gets the decimals it takes for the printed
// figure to get the verdict the figure got, and no more.
func TestFormatJudged(t *testing.T) {
	atMost := func(b float64) func(float64) bool { return func(p float64) bool { return p <= b } }
	below := func(b float64) func(float64) bool { return func(p float64) bool { return p < b } }
	for _, c := range []struct {
		v     float64
		k     Kind
		met   bool
		meets func(float64) bool
		want  string
	}{
		{1.002, Decimal, false, atMost(1), "1.002"},
		{1.0004, Decimal, true, atMost(1), "1.00"}, // met as printed elsewhere: 1.00 reads as met
		{1.00001, Decimal, false, atMost(1), "1.00001"},
		{0.999, Decimal, true, below(1), "0.999"},
		{0.0499, Decimal, true, below(0.05), "0.0499"},
		{48.04, Decimal, false, atMost(48), "48.04"},
		{0.36, Decimal, false, atMost(0.2), "0.36"},
		{2.004e6, Duration, false, atMost(2e6), "2.004ms"},
		{1.5e9, Duration, false, atMost(1e9), "1.50s"},
		{1500, Count, false, atMost(1000), "1,500"},
		{1, Decimal, true, atMost(1), "1.00"},
	} {
		t.Run(fmt.Sprint(c.v, c.met), func(t *testing.T) {
			if got := formatJudged(c.v, c.k, c.met, c.meets); got != c.want {
				t.Errorf("formatJudged(%v) = %q, want %q", c.v, got, c.want)
			}
		})
	}
}

func TestRatioCell(t *testing.T) {
	base := &Result{Metrics: []Metric{{Name: "x", Value: 50}, {Name: "zero", Value: 0}}}
	for _, tt := range []struct {
		name string
		v    float64
		want string
	}{
		{"x", 50, "1.00×"},
		{"x", 175, "0.29×"}, // timingwheel's figure ÷ the row's
		{"x", 25, "2.00×"},
		{"x", 0, "—"},
		{"x", -5, "—"},
		{"zero", 3, "0.00×"},
		{"missing", 3, ""},
	} {
		if got := ratioCell(tt.v, true, base, tt.name); got != tt.want {
			t.Errorf("ratioCell(%v, %s) = %q, want %q", tt.v, tt.name, got, tt.want)
		}
	}
	if got := ratioCell(1, true, nil, "x"); got != "" {
		t.Errorf("without a base: %q", got)
	}
}

func TestSelect(t *testing.T) {
	sel, err := selectImpls("go-zero,timingwheel")
	if err != nil || len(sel) != 2 || sel[0] != timingwheelSpec || sel[1] != gozeroSpec {
		t.Errorf("selectImpls kept the order of the flag, not of impls: %v, %v", sel, err)
	}
	if _, err := selectImpls("nope"); err == nil {
		t.Errorf("selectImpls(nope) succeeded")
	}
	ws, err := selectWorkloads("storm,churn")
	if err != nil || len(ws) != 2 || ws[0].Name != "storm" {
		t.Errorf("selectWorkloads: %v, %v", ws, err)
	}
	if _, err := selectWorkloads("nope"); err == nil {
		t.Errorf("selectWorkloads(nope) succeeded")
	}
}

func TestSkipErrorIsAnError(t *testing.T) {
	var err error = &SkipError{Reason: "r"}
	var skip *SkipError
	if !errors.As(err, &skip) || err.Error() != "skipped: r" {
		t.Fatalf("SkipError: %v", err)
	}
}

// hasReset reports whether spec's implementation can re-arm its timers.
func hasReset(spec *ImplSpec) bool {
	_, ok := spec.New().(Resetter)
	return ok
}

// TestStormOwnLatenessAgrees: the wheel's own lateness histogram (Stats)
// and the storm's measurement of the same callbacks agree within a tick.
// Under synctest no time passes between the two clock reads of a callback,
// so they must agree exactly as disagreement bounds them; outside, on the
// real clock, the table reports how many callbacks they disagree on.
func TestStormOwnLatenessAgrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr := newProgress(os.Stderr, true)
		c := Case{Label: "M=3000", Run: func(e *Env) error { return runStorm(e, 3000, time.Second, 2*time.Second) }}
		r := runCase(c, timingwheelSpec, Tiny, pr, testTimeout)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		p99, _ := r.metric("own p99")
		if off, ok := r.metric("own outside"); !ok || off != 0 {
			t.Errorf("own outside = %v (reported %v), want 0", off, ok)
		}
		if p99 <= 0 || p99 > float64(2*time.Millisecond) {
			t.Errorf("own p99 = %v, want within a tick", time.Duration(p99))
		}
	})
	// And the comparison itself: a histogram that reports callbacks a
	// tick and more early, or later than the storm saw, disagrees.
	late := []int64{int64(3 * time.Millisecond), int64(5 * time.Millisecond)}
	for _, c := range []struct {
		own  []time.Duration
		want bool
	}{
		{[]time.Duration{3 * time.Millisecond, 5 * time.Millisecond}, false},
		{[]time.Duration{2500 * time.Microsecond, 4200 * time.Microsecond}, false}, // within a tick
		{[]time.Duration{time.Millisecond, 5 * time.Millisecond}, true},            // 2ms less late
		{[]time.Duration{3 * time.Millisecond, 7 * time.Millisecond}, true},        // later than seen
	} {
		var h timingwheel.Histogram
		for _, d := range c.own {
			h.Record(d)
		}
		o := &ownLateness{h: h, tick: time.Millisecond}
		if off, _ := o.disagreement(late); (off > 0) != c.want {
			t.Errorf("own %v against %v: %d callbacks off, want disagreement %v", c.own, late, off, c.want)
		}
	}
}
