package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// A Target is one promise of the targets table of bench/README.md
// ("Workloads and targets"), at one size. The run ends with a line per
// target and case it applies to: met, missed, or not shown by this run's
// sizes.
type Target struct {
	Workload string
	// At says where the target is stated, for the line of a run that does
	// not have it: "N=10M". Empty for a target that holds at every size.
	At string
	// Match reports whether the case labeled label is one the target is
	// stated at. Nil: every case.
	Match func(label string) bool
	What  string // the promise: "ns/pair ≤ 0.2 × time.AfterFunc's"
	// Eval returns whether the case's results meet the target, and the
	// figure that says so. all holds every case of the workload, for a
	// target that compares cases.
	Eval func(cr CaseResult, all []CaseResult) (met bool, figure string, err error)
	// Unshown, when not nil, says why no case of the run matches, and
	// which of the reasons (notAtSize, notHere, ...) that is; it returns
	// "" to leave it to notShown.
	Unshown func(t Target, cases []CaseResult) (figure, why string)
}

// targets are the rows of bench/README.md's targets table, in its order.
// Where a row states sizes, each size is a Target of its own.
var targets = []Target{
	{Workload: "churn", At: "N=1M", Match: caseIs("N=1M"),
		What: "ns/pair ≤ 0.2 × time.AfterFunc's", Eval: relative("ns/pair", runtimeName, 0.2)},
	{Workload: "churn", At: "N=10M", Match: caseIs("N=10M"),
		What: "ns/pair ≤ 0.2 × time.AfterFunc's", Eval: relative("ns/pair", runtimeName, 0.2)},
	{Workload: "churn", At: "N=10M", Match: caseIs("N=10M"),
		What: "ns/pair ≤ 60", Eval: absolute("ns/pair", 60, Decimal)},
	{Workload: "churn",
		What: "allocs/pair ≤ 1, the Timer: Stop allocates nothing", Eval: allocs("allocs/pair", 1)},

	{Workload: "memory",
		What: "B/timer ≤ 48", Eval: absolute("B/timer", 48, Decimal)},

	{Workload: "storm", At: "M=1M", Match: caseStarts("M=1M in "),
		What: "early = 0", Eval: absolute("early", 0, Count)},
	{Workload: "storm", At: "M=1M", Match: caseStarts("M=1M in "),
		What: "p99 late ≤ 1ms", Eval: absolute("p99 late", 1e6, Duration)},
	{Workload: "storm", At: "M=1M", Match: caseStarts("M=1M in "),
		What: "max late ≤ 3ms", Eval: absolute("max late", 3e6, Duration)},
	{Workload: "storm", At: "M=1M", Match: caseStarts("M=1M in "),
		What: "CPU ≤ 1s", Eval: absolute("CPU", 1e9, Duration)},

	{Workload: "idle", At: "N=1M over 3s", Match: idleAt(1_000_000, 3*time.Second),
		What: "CPU ≤ 5ms", Eval: absolute("CPU", 5e6, Duration)},

	{Workload: "rearm", At: "N=1M", Match: caseIs("N=1M"),
		What: "ns/Reset ≤ 0.8 × time.Timer.Reset's", Eval: relative("ns/Reset", runtimeName, 0.8)},
	{Workload: "rearm", At: "N=1M", Match: caseIs("N=1M"),
		What: "par ns/Reset ≤ 0.8 × time.Timer.Reset's", Eval: relative("par ns/Reset", runtimeName, 0.8)},
	{Workload: "rearm", At: "N=10M", Match: caseIs("N=10M"),
		What: "ns/Reset ≤ 0.8 × time.Timer.Reset's", Eval: relative("ns/Reset", runtimeName, 0.8)},
	{Workload: "rearm", At: "N=10M", Match: caseIs("N=10M"),
		What: "par ns/Reset ≤ 0.8 × time.Timer.Reset's", Eval: relative("par ns/Reset", runtimeName, 0.8)},
	{Workload: "rearm",
		What: "allocs/Reset = 0", Eval: allocs("allocs/Reset", 0)},

	{Workload: "reuse",
		What: "ns/pair ≤ 0.9 × time.Timer's Reset+Stop", Eval: relative("ns/pair", runtimeName, 0.9)},
	{Workload: "reuse",
		What: "allocs/pair = 0", Eval: allocs("allocs/pair", 0)},

	{Workload: "selectloop",
		What: "ns/iter ≤ time.NewTimer's", Eval: relative("ns/iter", runtimeName, 1)},
	{Workload: "selectloop",
		What: "allocs/iter ≤ time.NewTimer's", Eval: allocsAtMostBase("allocs/iter", runtimeName)},

	parallelWork("churn", 2, 1.7),
	parallelWork("rearm", 2, 1.7),
	parallelWork("reuse", 2, 1.7),
	parallelWork("churn", 16, 12),
	parallelWork("rearm", 16, 12),
	parallelWork("reuse", 16, 12),
	{Workload: "parallel", At: fmt.Sprintf("k=%d churn (k = the CPUs)", parallelCPUs), Match: caseIs(parallelLabel(parallelCPUs, "churn")),
		What: "ns/op ≤ 0.5 × time.AfterFunc's", Eval: relative("ns/op", runtimeName, 0.5), Unshown: parallelUnshown("churn", parallelCPUs)},
	{Workload: "parallel", At: fmt.Sprintf("k=%d rearm (k = the CPUs)", parallelCPUs), Match: caseIs(parallelLabel(parallelCPUs, "rearm")),
		What: "ns/op ÷ time.Timer.Reset's ≤ that at k=1", Eval: noWorseThanAtOne("ns/op", runtimeName, "rearm"), Unshown: parallelUnshown("rearm", parallelCPUs)},
	{Workload: "parallel", At: fmt.Sprintf("k=%d reuse (k = the CPUs)", parallelCPUs), Match: caseIs(parallelLabel(parallelCPUs, "reuse")),
		What: "ns/op ÷ time.Timer's ≤ that at k=1", Eval: noWorseThanAtOne("ns/op", runtimeName, "reuse"), Unshown: parallelUnshown("reuse", parallelCPUs)},

	{Workload: "idleconns", At: "c=10k, exact", Match: idleConnsAt("c=10k,"),
		What: "CPU/msg < SetReadDeadline's", Eval: below("CPU/msg", runtimeName)},
	{Workload: "idleconns", At: "c=10k, exact", Match: idleConnsAt("c=10k,"),
		What: "late max ≤ 1 tick (1ms): cut within idle + 1 tick", Eval: absolute("late max", 1e6, Duration)},
	{Workload: "idleconns", At: "c=10k, exact", Match: idleConnsAt("c=10k,"),
		What: "late min ≥ 0: none cut early", Eval: atLeast("late min", 0, Duration)},
	{Workload: "idleconns", At: "in isolation",
		What: "per-Read deadline cost ≤ 0.3 × SetReadDeadline's"}, // no Eval: see judge

	{Workload: "purgatory", At: "N=1M R=200k/s", Match: caseStarts("N=1M R=200k/s "),
		What: "achieved ≥ 99% of the target rate", Eval: atLeast("achieved %", 99, Decimal)},

	{Workload: "http", At: "c=10k", Match: caseIs("c=10k"),
		What: "CPU/req < context.WithTimeout's", Eval: below("CPU/req", runtimeName)},
	{Workload: "http", Match: httpBaseRow,
		What: "no goroutine per derived context (the k ctx/req rows)", Eval: httpGoroutines},
}

// runtimeName is the implementation the targets are stated against.
var runtimeName = runtimeSpec.Name

func caseIs(l string) func(string) bool { return func(s string) bool { return s == l } }
func caseStarts(p string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, p) }
}

// idleAt matches idle's case of n timers, when the window is d: its label
// does not say the window.
func idleAt(n int, d time.Duration) func(string) bool {
	return func(s string) bool { return s == "N="+formatCount(n) && idleFor.Get(runProfile) == d }
}

// idleConnsAt matches idleconns' exact case at the label's prefix p.
func idleConnsAt(p string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, p) && strings.HasSuffix(s, ", exact") }
}

// httpBaseRow matches http's rows of one context per request, neither
// nested nor timing out: "c=1k".
func httpBaseRow(s string) bool { return !strings.Contains(s, ",") }

// runProfile is the profile of this run, for matches that depend on a
// parameter their label does not show.
var runProfile = Quick

// wheelResult returns this library's result and that of the implementation
// called base in cr (nil when base is ""), or an error that says why the
// case cannot be judged.
func wheelResult(cr CaseResult, base string) (w, b *Result, err error) {
	for i := range cr.Results {
		r := &cr.Results[i]
		switch r.Impl {
		case impls[0].Name:
			w = r
		case base:
			b = r
		}
	}
	switch {
	case w == nil:
		return nil, nil, fmt.Errorf("%s not in this run (-impls)", impls[0].Name)
	case !w.usable():
		return nil, nil, fmt.Errorf("%s did not run: %s", impls[0].Name, w.why())
	case base == "":
	case b == nil:
		return nil, nil, fmt.Errorf("%s not in this run (-impls)", base)
	case !b.usable():
		return nil, nil, fmt.Errorf("%s did not run: %s", base, b.why())
	}
	return w, b, nil
}

func (r *Result) why() string {
	if r.Err != nil {
		return r.Err.Error()
	}
	return r.Skipped
}

// relative: this library's figure ≤ bound × base's.
func relative(metric, base string, bound float64) func(CaseResult, []CaseResult) (bool, string, error) {
	return func(cr CaseResult, _ []CaseResult) (bool, string, error) {
		q, err := ratioTo(cr, metric, base)
		if err != nil {
			return false, "", err
		}
		met := q <= bound
		return met, formatJudged(q, Decimal, met, func(p float64) bool { return p <= bound }) + "×", nil
	}
}

// below: this library's figure < base's.
func below(metric, base string) func(CaseResult, []CaseResult) (bool, string, error) {
	return func(cr CaseResult, _ []CaseResult) (bool, string, error) {
		q, err := ratioTo(cr, metric, base)
		if err != nil {
			return false, "", err
		}
		met := q < 1
		return met, formatJudged(q, Decimal, met, func(p float64) bool { return p < 1 }) + "×", nil
	}
}

// ratioTo returns this library's figure ÷ base's.
func ratioTo(cr CaseResult, metric, base string) (float64, error) {
	w, b, err := wheelResult(cr, base)
	if err != nil {
		return 0, err
	}
	x, ok1 := w.metric(metric)
	y, ok2 := b.metric(metric)
	if !ok1 || !ok2 || y <= 0 || x < 0 {
		return 0, fmt.Errorf("no %s to compare", metric)
	}
	return x / y, nil
}

// absolute: this library's figure ≤ bound.
func absolute(metric string, bound float64, k Kind) func(CaseResult, []CaseResult) (bool, string, error) {
	return func(cr CaseResult, _ []CaseResult) (bool, string, error) {
		v, err := wheelFigure(cr, metric)
		if err != nil {
			return false, "", err
		}
		// A figure that prints as the bound meets it: the live heap
		// moves by a few bytes per million timers between runs.
		met := v <= bound || formatValue(v, k) == formatValue(bound, k)
		fig := formatValue(v, k)
		if bound > 0 {
			fig += " = " + formatJudged(v/bound, Decimal, met, func(p float64) bool { return p <= 1 }) + "× the bound"
		}
		return met, fig, nil
	}
}

// allocs: this library's allocations per operation ≤ bound, as printed
// (two decimals): over millions of operations, an allocation the runtime
// or the harness made meanwhile is not the operation's.
func allocs(metric string, bound float64) func(CaseResult, []CaseResult) (bool, string, error) {
	return func(cr CaseResult, _ []CaseResult) (bool, string, error) {
		v, err := wheelFigure(cr, metric)
		if err != nil {
			return false, "", err
		}
		fig := strconv.FormatFloat(v, 'f', 2, 64)
		met, _ := strconv.ParseFloat(fig, 64)
		return met <= bound, fig, nil
	}
}

// atLeast: this library's figure ≥ bound.
func atLeast(metric string, bound float64, k Kind) func(CaseResult, []CaseResult) (bool, string, error) {
	return func(cr CaseResult, _ []CaseResult) (bool, string, error) {
		v, err := wheelFigure(cr, metric)
		if err != nil {
			return false, "", err
		}
		met := v >= bound
		return met, formatJudged(v, k, met, func(p float64) bool { return p >= bound }), nil
	}
}

func wheelFigure(cr CaseResult, metric string) (float64, error) {
	w, _, err := wheelResult(cr, "")
	if err != nil {
		return 0, err
	}
	v, ok := w.metric(metric)
	if !ok {
		return 0, fmt.Errorf("no %s", metric)
	}
	return v, nil
}

// httpGoroutines: in each "k ctx/req" row of the base row's c, this
// library's goroutines per request exceed the base row's by less than one
// per 20 derived contexts. One goroutine per derived context would add
// k-1 per request.
func httpGoroutines(base CaseResult, all []CaseResult) (bool, string, error) {
	g0, err := wheelFigure(base, "goroutines/req")
	if err != nil {
		return false, "", err
	}
	worst, rows := 0.0, 0
	for _, cr := range all {
		k, ok := httpCtxsOf(cr.Case.Label)
		if cr.Case.X != base.Case.X || !ok || k < 2 {
			continue
		}
		g, err := wheelFigure(cr, "goroutines/req")
		if err != nil {
			return false, "", fmt.Errorf("%s: %v", cr.Case.Label, err)
		}
		worst = max(worst, (g-g0)/float64(k-1))
		rows++
	}
	if rows == 0 {
		return false, "", fmt.Errorf("no ctx/req rows")
	}
	met := worst < 0.05
	fig := formatJudged(worst, Decimal, met, func(p float64) bool { return p < 0.05 })
	return met, fig + " goroutines per derived context, at most", nil
}

// httpCtxsOf returns k of a label "c=1k, k ctx/req ...".
func httpCtxsOf(label string) (int, bool) {
	_, rest, ok := strings.Cut(label, ", ")
	if !ok {
		return 0, false
	}
	n, rest, ok := strings.Cut(rest, " ")
	if !ok || !strings.HasPrefix(rest, "ctx/req") {
		return 0, false
	}
	k, err := strconv.Atoi(n)
	return k, err == nil
}

// allocsAtMostBase: this library's allocations per operation ≤ base's,
// both as printed (two decimals).
func allocsAtMostBase(metric, base string) func(CaseResult, []CaseResult) (bool, string, error) {
	return func(cr CaseResult, _ []CaseResult) (bool, string, error) {
		w, b, err := wheelResult(cr, base)
		if err != nil {
			return false, "", err
		}
		x, ok1 := w.metric(metric)
		y, ok2 := b.metric(metric)
		if !ok1 || !ok2 {
			return false, "", fmt.Errorf("no %s to compare", metric)
		}
		xs, ys := strconv.FormatFloat(x, 'f', 2, 64), strconv.FormatFloat(y, 'f', 2, 64)
		xr, _ := strconv.ParseFloat(xs, 64)
		yr, _ := strconv.ParseFloat(ys, 64)
		return xr <= yr, fmt.Sprintf("%s (%s: %s)", xs, base, ys), nil
	}
}

// parallelWork is the target of the parallel workload's op at k
// goroutines: at least bound × the work of one goroutine. It is shown
// only where k goroutines do not outnumber the CPUs.
func parallelWork(op string, k int, bound float64) Target {
	at := fmt.Sprintf("k=%d %s", k, op)
	if k > 2 {
		at += fmt.Sprintf(" on %d CPUs", k)
	}
	return Target{Workload: "parallel", At: at, Match: caseIs(parallelLabel(k, op)),
		What:    fmt.Sprintf("work ≥ %s × k=1's", formatDecimal(bound)),
		Eval:    atLeast("work", bound, Decimal),
		Unshown: parallelUnshown(op, k)}
}

// parallelUnshown says why a parallel target at op and k is not shown:
// the run left op out, or k goroutines outnumber this machine's CPUs.
func parallelUnshown(op string, k int) func(Target, []CaseResult) (string, string) {
	return func(t Target, cases []CaseResult) (string, string) {
		if !slices.ContainsFunc(cases, func(cr CaseResult) bool { return parallelOpOf(cr.Case.Label) == op }) {
			return "-parallel-cases left " + op + " out", notRun
		}
		if k > parallelCPUs {
			return fmt.Sprintf("needs %d CPUs, this machine has %d", k, parallelCPUs), notHere
		}
		return "", ""
	}
}

// noWorseThanAtOne: this library's figure ÷ base's at this case's k is at
// most the same quotient at k=1, in the parallel workload's op.
func noWorseThanAtOne(metric, base, op string) func(CaseResult, []CaseResult) (bool, string, error) {
	return func(cr CaseResult, all []CaseResult) (bool, string, error) {
		q, err := ratioTo(cr, metric, base)
		if err != nil {
			return false, "", err
		}
		i := slices.IndexFunc(all, func(c CaseResult) bool { return c.Case.Label == parallelLabel(1, op) })
		if i < 0 {
			return false, "", fmt.Errorf("no k=1 %s case in this run (-parallel-k)", op)
		}
		q1, err := ratioTo(all[i], metric, base)
		if err != nil {
			return false, "", fmt.Errorf("k=1: %v", err)
		}
		// Both with the decimals it takes for the printed pair to compare
		// as the figures do.
		met := q <= q1
		var qs, q1s string
		for extra := 0; extra <= maxExtra; extra++ {
			var p, p1 float64
			qs, p = formatShown(q, Decimal, extra)
			q1s, p1 = formatShown(q1, Decimal, extra)
			if (p <= p1) == met {
				break
			}
		}
		return met, fmt.Sprintf("%s× here, %s× at k=1", qs, q1s), nil
	}
}

// A Verdict is the outcome of one target in one case, or the reason the
// run cannot show it.
type Verdict struct {
	Workload string
	Case     string // the case's label, or the target's At when not shown
	What     string
	Mark     string // "✓" met, "✗" missed, "–" not shown
	Figure   string // the figure, or why the target is not shown
	// NotShown says why a target is not shown: notAtSize, elsewhere,
	// notRun. Empty when it is.
	NotShown string
}

// Why a Verdict is not shown.
const (
	notAtSize = "size"      // this run lacks the size the target is stated at
	elsewhere = "elsewhere" // wheelbench does not measure it
	notRun    = "run"       // an implementation was not run, or failed
	notHere   = "machine"   // stated for more CPUs than this machine has
)

const (
	markMet      = "✓"
	markMissed   = "✗"
	markNotShown = "–"
)

// judge returns the verdicts of wl's targets on the cases of one run. A
// target stated at a size this run lacks gets one line that says which
// sizes ran and which run has it.
func judge(wl *Workload, cases []CaseResult) []Verdict {
	var vs []Verdict
	for _, t := range targets {
		if t.Workload != wl.Name {
			continue
		}
		if t.Eval == nil {
			vs = append(vs, Verdict{wl.Name, t.At, t.What, markNotShown,
				"not measured by wheelbench: go test -run '^$' -bench Deadline ./idleconn", elsewhere})
			continue
		}
		n := 0
		for _, cr := range cases {
			if t.Match != nil && !t.Match(cr.Case.Label) {
				continue
			}
			n++
			v := Verdict{Workload: wl.Name, Case: cr.Case.Label, What: t.What}
			met, fig, err := t.Eval(cr, cases)
			switch {
			case err != nil:
				v.Mark, v.Figure, v.NotShown = markNotShown, err.Error(), notRun
			case met:
				v.Mark, v.Figure = markMet, fig
			default:
				v.Mark, v.Figure = markMissed, fig
			}
			vs = append(vs, v)
		}
		if n == 0 {
			fig, why := "", ""
			if t.Unshown != nil {
				fig, why = t.Unshown(t, cases)
			}
			if fig == "" {
				fig, why = notShown(t, cases)+missedSmaller(t, cases), notAtSize
			}
			vs = append(vs, Verdict{wl.Name, t.At, t.What, markNotShown, fig, why})
		}
	}
	return vs
}

// notShown says which sizes ran (the first word of each case's label),
// and that -full runs the one t is stated at.
func notShown(t Target, cases []CaseResult) string {
	var ran []string
	for _, cr := range cases {
		size, _, _ := strings.Cut(cr.Case.Label, " ")
		size = strings.TrimSuffix(size, ",")
		if !slices.Contains(ran, size) {
			ran = append(ran, size)
		}
	}
	if runProfile != Full {
		return "the quick sizes are " + strings.Join(ran, ", ") + "; -full runs " + t.At
	}
	return "this run's sizes are " + strings.Join(ran, ", ")
}

// missedSmaller returns, for a target t stated at a size this run lacks,
// the figure of the largest size of the run at which the same case misses
// t, or "". A target missed at the quick size is the likelier missed at
// its own, and a bare "–" would hide that. The same case at another size
// is the case's label with the size (its first word) replaced by t's.
func missedSmaller(t Target, cases []CaseResult) string {
	size, _, _ := strings.Cut(t.At, " ")
	size = strings.TrimSuffix(size, ",")
	if t.Match == nil || t.Eval == nil || size == "" {
		return ""
	}
	out := ""
	for _, cr := range cases {
		l := cr.Case.Label
		i := strings.IndexAny(l, " ,")
		if i < 0 {
			i = len(l)
		}
		if l[:i] == size || !t.Match(size+l[i:]) {
			continue
		}
		met, fig, err := t.Eval(cr, cases)
		if err != nil || met {
			out = "" // the largest size decides
			continue
		}
		out = "; missed at " + l[:i] + ": " + fig
	}
	return out
}

// missed returns how many of vs are missed targets.
func missed(vs []Verdict) int {
	n := 0
	for _, v := range vs {
		if v.Mark == markMissed {
			n++
		}
	}
	return n
}

// writeVerdicts writes the summary that ends a run: a line per verdict,
// and a count of each kind.
func writeVerdicts(w io.Writer, vs []Verdict) {
	if len(vs) == 0 {
		return
	}
	fmt.Fprintf(w, "targets (bench/README.md, \"Workloads and targets\"): %s met, %s missed, %s not shown by this run;\n",
		markMet, markMissed, markNotShown)
	fmt.Fprintf(w, "a target not shown at its size says so when this run misses it at a smaller one\n\n")
	wWl, wCase, wWhat := 0, 0, 0
	for _, v := range vs {
		wWl = max(wWl, utf8.RuneCountInString(v.Workload))
		wCase = max(wCase, utf8.RuneCountInString(v.Case))
		wWhat = max(wWhat, utf8.RuneCountInString(v.What))
	}
	count := map[string]int{}
	for _, v := range vs {
		count[v.Mark]++
		count[v.NotShown]++
		line := fmt.Sprintf("  %s %s  %s  %s  %s", v.Mark, pad(v.Workload, wWl), pad(v.Case, wCase), pad(v.What, wWhat), v.Figure)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	fmt.Fprintf(w, "\n  %d met, %d missed, %d not shown", count[markMet], count[markMissed], count[markNotShown])
	var why []string
	if n := count[notAtSize]; n > 0 {
		if runProfile != Full {
			why = append(why, fmt.Sprintf("%d stated at sizes the quick run does not reach (-full runs them)", n))
		} else {
			why = append(why, fmt.Sprintf("%d stated at sizes this run does not have", n))
		}
	}
	if n := count[notHere]; n > 0 {
		why = append(why, fmt.Sprintf("%d stated for more CPUs than this machine has", n))
	}
	if n := count[elsewhere]; n > 0 {
		why = append(why, fmt.Sprintf("%d measured by another command", n))
	}
	if n := count[notRun]; n > 0 {
		why = append(why, fmt.Sprintf("%d without the implementations' figures", n))
	}
	if len(why) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(why, ", "))
	}
	fmt.Fprintf(w, "\n\n")
}

func pad(s string, n int) string {
	return s + strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s)))
}

// appendVerdicts appends vs to the file at path, one JSON object a line:
// how a child process hands its verdicts to its parent.
func appendVerdicts(path string, vs []Verdict) error { return appendJSONLines(path, vs) }

// readVerdicts reads what appendVerdicts wrote.
func readVerdicts(path string) ([]Verdict, error) { return readJSONLines[Verdict](path) }

// failedWorkload returns the verdicts of a workload whose process failed
// before it judged its targets.
func failedWorkload(wl *Workload) []Verdict {
	var vs []Verdict
	for _, t := range targets {
		if t.Workload == wl.Name {
			vs = append(vs, Verdict{wl.Name, t.At, t.What, markNotShown, "the workload failed: see above", notRun})
		}
	}
	return vs
}
