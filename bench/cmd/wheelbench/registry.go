package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Workload is one benchmark: those of the "Workloads and targets" section
// of bench/README.md, and tools such as tick. Each lives in its own file
// and registers itself from an init function:
//
//	func init() { Register(&Workload{Name: "churn", ...}) }
//
// The harness runs every case of a workload against every implementation,
// in the order of impls, with the heap cleaned between runs, and prints one
// table per workload.
type Workload struct {
	Name  string // the name -workloads selects it by
	Order int    // tables come out in increasing Order (churn 10, memory 20, ...)
	Title string // one line: what the workload does
	// Notes are printed under the table: targets, how it is measured.
	Notes []string
	// Cases returns the cases to run for a profile. It reads the
	// workload's parameters (see Param) with Get(p).
	Cases func(p Profile) []Case
	// Charts are drawn with -charts DIR.
	Charts []Chart
	// OnRequest keeps the workload out of a run without -workloads: one
	// that is not part of the comparison, such as tick, which measures
	// options only this library has. The tests run it like any other.
	OnRequest bool
	// QuickOnRequest keeps the workload out of a quick run without
	// -workloads, while -full runs it: one of the comparison whose quick
	// run does not fit in the quick run's time (quickDuration), such as
	// parallel.
	QuickOnRequest bool
}

// A Case is one size of a workload, run against each implementation.
type Case struct {
	Label string  // first column of the table, e.g. "N=1M"
	X     float64 // the size, for charts that plot a metric across cases
	// Run runs the case against e.Impl and records metrics with e.Add.
	// It must leave nothing running: it calls e.Close with every handle
	// that may still be pending (the harness closes the implementation
	// itself if Run does not).
	Run func(e *Env) error
	// GOMAXPROCS, when positive, is the GOMAXPROCS the case runs at: the
	// harness sets it before it makes the implementation (this library
	// sizes its shards and workers by GOMAXPROCS in New, as a server that
	// sets GOMAXPROCS at startup would have them), and restores it after.
	GOMAXPROCS int
}

var workloads []*Workload

// Register adds a workload. It panics on a duplicate name, from init.
func Register(w *Workload) {
	if w.Name == "" || w.Cases == nil {
		panic("wheelbench: Register: a workload needs a Name and Cases")
	}
	for _, o := range workloads {
		if o.Name == w.Name {
			panic("wheelbench: Register: duplicate workload " + w.Name)
		}
	}
	workloads = append(workloads, w)
	slices.SortStableFunc(workloads, func(a, b *Workload) int { return cmp.Compare(a.Order, b.Order) })
}

// A Profile selects the default size of every parameter: Tiny for the
// tests, Quick for a plain run, Full for -full (the sizes of the targets in
// bench/README.md, "Workloads and targets").
type Profile int

const (
	Tiny Profile = iota
	Quick
	Full
)

func (p Profile) String() string {
	return [...]string{"tiny", "quick", "full"}[p]
}

// A Param is a workload parameter: a command-line flag whose default
// depends on the profile. A flag given on the command line wins over every
// profile.
type Param[T any] struct {
	defaults [3]T // by Profile
	value    T
	set      bool
	parse    func(string) (T, error)
	format   func(T) string
}

// Get returns the value given on the command line, or else the default of p.
func (x *Param[T]) Get(p Profile) T {
	if x.set {
		return x.value
	}
	return x.defaults[p]
}

// String implements flag.Value; it shows the quick default.
func (x *Param[T]) String() string {
	if x == nil || x.format == nil {
		return ""
	}
	return x.format(x.Get(Quick))
}

// given reports whether the command line gave the parameter: a run whose
// sizes are not those of its profile.
func (x *Param[T]) given() bool { return x.set }

// Set implements flag.Value.
func (x *Param[T]) Set(s string) error {
	v, err := x.parse(s)
	if err != nil {
		return err
	}
	x.value, x.set = v, true
	return nil
}

func newParam[T any](name, usage string, tiny, quick, full T, parse func(string) (T, error), format func(T) string) *Param[T] {
	x := &Param[T]{defaults: [3]T{tiny, quick, full}, parse: parse, format: format}
	flag.Var(x, name, fmt.Sprintf("%s (-full: %s)", usage, format(full)))
	return x
}

// SizesParam declares a flag holding a list of counts, written like
// "100k,1M" or "1000000,10000000".
func SizesParam(name, usage string, tiny, quick, full []int) *Param[[]int] {
	return newParam(name, usage, tiny, quick, full, parseCounts, formatCounts)
}

// CountParam declares a flag holding one count, written like "500k".
func CountParam(name, usage string, tiny, quick, full int) *Param[int] {
	return newParam(name, usage, tiny, quick, full, parseCount, formatCount)
}

// DurationParam declares a flag holding a duration, written like "3s".
func DurationParam(name, usage string, tiny, quick, full time.Duration) *Param[time.Duration] {
	parse := func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err == nil && d <= 0 {
			err = errors.New("must be positive")
		}
		return d, err
	}
	return newParam(name, usage, tiny, quick, full, parse, time.Duration.String)
}

// parseCount parses a positive count, with an optional k, M or G suffix
// (powers of ten) and optional underscores: "200k", "1M", "1_000_000".
func parseCount(s string) (int, error) {
	orig := s
	s = strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	mul := 1
	switch {
	case strings.HasSuffix(s, "k"):
		mul, s = 1e3, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mul, s = 1e6, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mul, s = 1e9, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("bad count %q", orig)
	}
	if n <= 0 || n > (1<<40)/mul {
		return 0, fmt.Errorf("count %q out of range", orig)
	}
	return n * mul, nil
}

func parseCounts(s string) ([]int, error) {
	var ns []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := parseCount(f)
		if err != nil {
			return nil, err
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// sizeCases returns a case for each count n of ns, labelled N=n and
// charted at n, that runs run(e, n).
func sizeCases(ns []int, run func(e *Env, n int) error) []Case {
	return countCases(ns, func(n int) string { return "N=" + formatCount(n) }, run)
}

// countCases returns a case per count in ns, labelled label(n), at n on
// the charts.
func countCases(ns []int, label func(n int) string, run func(e *Env, n int) error) []Case {
	cases := make([]Case, 0, len(ns))
	for _, n := range ns {
		cases = append(cases, Case{
			Label: label(n),
			X:     float64(n),
			Run:   func(e *Env) error { return run(e, n) },
		})
	}
	return cases
}

// configCase returns the case of cfg, labelled by it, at x on the charts.
func configCase[C interface{ label() string }](cfg C, x int, run func(*Env, C) error) Case {
	return Case{Label: cfg.label(), X: float64(x), Run: func(e *Env) error { return run(e, cfg) }}
}

// formatCount writes n the way parseCount reads it: 1M, 200k, 1500.
func formatCount(n int) string {
	switch {
	case n >= 1e6 && n%1e6 == 0:
		return strconv.Itoa(n/1e6) + "M"
	case n >= 1e3 && n%1e3 == 0:
		return strconv.Itoa(n/1e3) + "k"
	}
	return strconv.Itoa(n)
}

func formatCounts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = formatCount(n)
	}
	return strings.Join(s, ",")
}
