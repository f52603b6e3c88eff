package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"time"
)

// An Env is what a Case's Run gets: the implementation under test, the
// progress display, and the result to fill in.
type Env struct {
	Impl    Impl
	Spec    *ImplSpec
	Profile Profile

	progress *Progress
	res      *Result
	closed   bool
}

// A Result is the outcome of one case against one implementation.
type Result struct {
	Impl    string
	Metrics []Metric
	// Samples are raw measurements kept for charts, by name; a chart may
	// sort them.
	Samples  map[string][]float64
	Skipped  string   // why the implementation was not run, if it was not
	Err      error    // why the run failed, if it did
	Warnings []string // doubts about the figures, printed after the row
}

// A Metric is one figure of a Result.
type Metric struct {
	Name  string  // column header, with its unit: "ns/pair", "p99 late"
	Value float64 // in the unit of Kind
	Kind  Kind
	// Ratio adds a column with this library's Value in the same case
	// divided by Value: for figures where lower is better.
	Ratio bool
}

// A Kind says how a Metric's value is written.
type Kind int

const (
	Count    Kind = iota // an integer count
	Decimal              // a number, 1 to 3 significant decimals
	Duration             // nanoseconds, written with a unit: 1.2ms, 3.40s
	Bytes                // bytes, written with a binary unit: 1.5 MiB
)

// Add records a metric.
func (e *Env) Add(m Metric) { e.res.Metrics = append(e.res.Metrics, m) }

// Warn records a doubt about the figures, shown after the row.
func (e *Env) Warn(format string, args ...any) {
	e.res.Warnings = append(e.res.Warnings, fmt.Sprintf(format, args...))
}

// AddSamples keeps raw measurements for charts.
func (e *Env) AddSamples(name string, s []float64) {
	if e.res.Samples == nil {
		e.res.Samples = make(map[string][]float64)
	}
	e.res.Samples[name] = s
}

// Phase starts a phase of the progress display: name, and how many steps
// it takes (0 for a phase without steps, which redraws nothing while it
// lasts, so that it costs no CPU).
func (e *Env) Phase(name string, total int) { e.progress.phase(name, total, nil) }

// PhaseFunc is Phase, with the steps done read from done.
func (e *Env) PhaseFunc(name string, total int, done func() int64) {
	e.progress.phase(name, total, done)
}

// Step reports steps done in the current phase. It is an atomic store:
// call it every few thousand steps in a timed loop, not every step.
func (e *Env) Step(done int) { e.progress.done.Store(int64(done)) }

// stepMask: hot loops call Step when i&stepMask == 0.
const stepMask = 1<<14 - 1

// ArmSpread fills handles with timers running noop, due from plus a
// uniform share of a minute out, and Flushes. The deadlines come from seed
// and the count, so that every implementation gets the same ones.
func (e *Env) ArmSpread(handles []Handle, seed uint64, from time.Duration) {
	rng := rand.New(rand.NewPCG(seed, uint64(len(handles))))
	impl := e.Impl
	e.Phase("setup", len(handles))
	for i := range handles {
		if i&stepMask == 0 {
			e.Step(i)
		}
		handles[i] = impl.AfterFunc(from+time.Duration(rng.Int64N(int64(time.Minute))), noop)
	}
	impl.Flush()
}

// Close closes the implementation; pending are the handles of timers that
// may still be pending.
func (e *Env) Close(pending []Handle) {
	if !e.closed {
		e.closed = true
		e.Impl.Close(pending)
	}
}

// Fits returns a SkipError if the implementation is not to hold n pending
// timers at once.
func (e *Env) Fits(n int) error {
	if e.Spec.MaxPending != nil && n > e.Spec.MaxPending() {
		return &SkipError{Reason: e.Spec.SkipWhy}
	}
	return nil
}

// A SkipError returned by a Case's Run says the implementation was not run,
// and why; the table shows the reason instead of figures.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return "skipped: " + e.Reason }

// CheckPending returns an error if the implementation can count its pending
// timers and does not count want.
func (e *Env) CheckPending(want int) error {
	if got := e.Impl.Pending(); got >= 0 && got != want {
		return fmt.Errorf("%d timers pending, want %d", got, want)
	}
	return nil
}

// runCase runs c against the implementation of spec, on a clean heap. If
// it is still running after timeout, the process prints every goroutine's
// stack and exits: a hung implementation must not hang the yardstick.
func runCase(c Case, spec *ImplSpec, prof Profile, pr *Progress, timeout time.Duration) Result {
	watchdog := time.AfterFunc(timeout, func() {
		pr.clear()
		fmt.Fprintf(os.Stderr, "wheelbench: %s · %s still running after %v (-timeout); goroutines:\n\n", c.Label, spec.Name, timeout)
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		os.Exit(3)
	})
	defer watchdog.Stop()
	if c.GOMAXPROCS > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.GOMAXPROCS))
	}
	cleanHeap()
	res := Result{Impl: spec.Name}
	e := &Env{Impl: spec.New(), Spec: spec, Profile: prof, progress: pr, res: &res}
	err := c.Run(e)
	e.Close(nil)
	pr.phase("", 0, nil)
	if skip := (*SkipError)(nil); errors.As(err, &skip) {
		res.Skipped = skip.Reason
		res.Metrics = nil
	} else if err != nil {
		res.Err = err
	}
	return res
}

// cleanHeap collects all garbage and returns the memory to the OS, so that
// an implementation does not pay for the garbage of the one before.
func cleanHeap() {
	runtime.GC()
	debug.FreeOSMemory()
}
