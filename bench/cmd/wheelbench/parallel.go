package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// parallelCPUs is the CPUs this process may use: the GOMAXPROCS it
// started with (the CPUs of its affinity mask, or its container's CPU
// limit), at most NumCPU. A case with more goroutines than that is
// oversubscribed: its goroutines take turns on the CPUs, and its figures
// say nothing about scaling.
var parallelCPUs = min(runtime.NumCPU(), runtime.GOMAXPROCS(0))

var (
	parallelK = SizesParam("parallel-k", "parallel: goroutines of each case, with GOMAXPROCS set to match; beyond the CPUs, a case is oversubscribed",
		[]int{1, 2}, parallelQuickK(parallelCPUs), parallelFullK(parallelCPUs))
	parallelOps = CountParam("parallel-ops", "parallel: operations timed in each case, over all its goroutines",
		4000, 1_000_000, 5_000_000)
	parallelOwn = CountParam("parallel-own", "parallel: pending timers of each goroutine of the rearm cases, pushed back round robin",
		100, 100_000, 100_000)
	parallelWhat = newParam("parallel-cases", "parallel: the operations measured, comma-separated",
		parallelOpNames(), parallelOpNames(), parallelOpNames(), parseParallelOps, func(s []string) string { return strings.Join(s, ",") })
)

// parallelQuickK is the quick run's goroutine counts: 1, 2 and every CPU,
// none beyond the CPUs.
func parallelQuickK(cpus int) []int {
	return sortedUnique([]int{1, min(2, cpus), cpus})
}

// parallelFullK is -full's: 1, 2, 4, 8 and 16 (the issue's), and every CPU.
func parallelFullK(cpus int) []int {
	return sortedUnique([]int{1, 2, 4, 8, 16, cpus})
}

func sortedUnique(ks []int) []int {
	slices.Sort(ks)
	return slices.Compact(ks)
}

// A parallelOp is what each goroutine of a parallel case repeats.
type parallelOp struct {
	name string
	what string // for the notes
	// prepare runs on each goroutine before the clock starts, so that
	// what it makes is made on that goroutine's processor (the wheel
	// places a timer on a shard of the P that makes or binds it). It
	// returns the operation, which reports false on an outcome that must
	// not happen, and the handles of the timers it keeps pending; or a
	// *SkipError if the implementation cannot do the operation. f is the
	// function of timers that must not fire.
	prepare func(e *Env, own int, f func()) (op func() bool, keep []Handle, err error)
}

var parallelOpList = []parallelOp{
	{"churn", "AfterFunc(30s) + Stop", func(e *Env, _ int, _ func()) (func() bool, []Handle, error) {
		impl := e.Impl
		return func() bool { return impl.Stop(impl.AfterFunc(30*time.Second, noop)) }, nil, nil
	}},
	{"rearm", "Reset(30s) of the goroutine's own pending timers (-parallel-own of them), round robin", func(e *Env, own int, f func()) (func() bool, []Handle, error) {
		r, ok := e.Impl.(Resetter)
		if !ok {
			return nil, nil, errNoReset
		}
		hs := make([]Handle, own)
		for i := range hs {
			hs[i] = e.Impl.AfterFunc(30*time.Second, f)
		}
		i := 0
		return func() bool {
			ok := r.Reset(hs[i], 30*time.Second)
			if i++; i == len(hs) {
				i = 0
			}
			return ok
		}, hs, nil
	}},
	{"reuse", "Reset(30s) + Stop of one timer made once (timingwheel: Bind in a struct; time.AfterFunc: made and stopped)", func(e *Env, _ int, f func()) (func() bool, []Handle, error) {
		r, ok := e.Impl.(Resetter)
		if !ok {
			return nil, nil, errNoReset
		}
		impl, h := e.Impl, r.Unarmed(f)
		return func() bool {
			r.Reset(h, 30*time.Second)
			return impl.Stop(h)
		}, []Handle{h}, nil
	}},
	{"withtimeout", "WithTimeout(30s) + cancel on context.Background (time.AfterFunc row: context.WithTimeout)", func(e *Env, _ int, _ func()) (func() bool, []Handle, error) {
		tc, ok := e.Impl.(TimeoutContexter)
		if !ok {
			return nil, nil, &SkipError{Reason: "no context API"}
		}
		parent := context.Background()
		return func() bool {
			_, cancel := tc.WithTimeout(parent, 30*time.Second)
			cancel()
			return true
		}, nil, nil
	}},
	{"newtimer", "NewTimer(30s) + Stop (time.AfterFunc row: time.NewTimer)", func(e *Env, _ int, _ func()) (func() bool, []Handle, error) {
		m, ok := e.Impl.(ChanTimerMaker)
		if !ok {
			return nil, nil, errNoChanTimers
		}
		return func() bool {
			t, _ := m.NewChanTimer(30 * time.Second)
			return t.Stop()
		}, nil, nil
	}},
}

func parallelOpNames() []string {
	var s []string
	for _, op := range parallelOpList {
		s = append(s, op.name)
	}
	return s
}

func parseParallelOps(s string) ([]string, error) {
	var names []string
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(parallelOpNames(), name) {
			return nil, fmt.Errorf("unknown operation %q (have %s)", name, strings.Join(parallelOpNames(), ","))
		}
		names = append(names, name)
	}
	return names, nil
}

// parallelLabel is the label of the case of op at k goroutines.
func parallelLabel(k int, op string) string {
	l := fmt.Sprintf("k=%d %s", k, op)
	if k > parallelCPUs {
		l += fmt.Sprintf(" (> %d CPUs)", parallelCPUs)
	}
	return l
}

// parallelOpOf returns the operation of a parallel case's label.
func parallelOpOf(label string) string {
	f := strings.Fields(label)
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

func init() {
	var notes []string
	for _, op := range parallelOpList {
		notes = append(notes, op.name+": "+op.what+".")
	}
	notes = append(notes,
		"Each of k goroutines (GOMAXPROCS = k, set before the implementation is made) makes its own timers on its own goroutine "+
			"and repeats the operation on them, -parallel-ops ÷ k times, nothing else pending. "+
			"ns/op: wall time from the start of all the goroutines to the end of the last ÷ all their operations "+
			"(with perfect scaling it halves as k doubles); CPU ns/op: process CPU time ÷ operations; allocs/op: MemStats.Mallocs ÷ operations.",
		"CPUs used: CPU time ÷ wall time; below k, the goroutines did not get k CPUs of their own (other processes, "+
			"or a goroutine waiting), and work and eff % say as much about the machine as about the timers. "+
			"work: ns/op at k=1 ÷ ns/op at k, the work k goroutines do in the time one does it; eff %: work ÷ k.",
		fmt.Sprintf("Rows marked (> %d CPUs) run more goroutines than this machine has CPUs: they take turns, "+
			"so those rows are not scaling figures and have no work or eff %%.", parallelCPUs),
		"target: churn, rearm and reuse at k=2 do ≥ 1.7 × the work of k=1, and at k=16 on 16 CPUs ≥ 12 ×; "+
			"churn at k = the CPUs ≤ 0.5 × time.AfterFunc's ns/op; "+
			"rearm and reuse there no worse against the runtime than at k=1.",
	)
	var charts []Chart
	for _, op := range parallelOpList {
		charts = append(charts, SizeChart{
			Metric: "ns/op",
			Title:  "parallel: " + op.name + ", ns per operation against goroutines (= GOMAXPROCS)",
			XLabel: "goroutines k (GOMAXPROCS)",
			YLabel: "ns per operation (wall ÷ all operations)",
			Match:  func(label string) bool { return parallelOpOf(label) == op.name },
			File:   op.name,
			XTicks: powersOfTwo{},
		})
	}
	Register(&Workload{
		Name:  "parallel",
		Order: 28,
		// Its quick run, 10 cases on 2 CPUs, takes 3-5 s: beyond the
		// quick run's budget (quickDuration).
		QuickOnRequest: true,
		Title:          "k goroutines (GOMAXPROCS = k) each on timers of its own: churn, rearm, reuse, WithTimeout + cancel, NewTimer + Stop; ns per operation and scaling from k=1",
		Notes:          notes,
		Cases: func(p Profile) []Case {
			ops, own := parallelOps.Get(p), parallelOwn.Get(p)
			ks := sortedUnique(slices.Clone(parallelK.Get(p)))
			// ns/op at k=1, by operation and implementation: the cases of
			// an operation run in increasing k, in one process.
			atOne := map[[2]string]float64{}
			var cases []Case
			for _, op := range parallelOpList {
				if !slices.Contains(parallelWhat.Get(p), op.name) {
					continue
				}
				for _, k := range ks {
					cases = append(cases, Case{
						Label:      parallelLabel(k, op.name),
						X:          float64(k),
						GOMAXPROCS: k,
						Run:        func(e *Env) error { return runParallel(e, op, k, ops, own, atOne) },
					})
				}
			}
			return cases
		},
		Charts: charts,
	})
}

// runParallel runs op from k goroutines, ops operations in all, and
// records ns/op at k=1 in atOne for the cases of larger k.
func runParallel(e *Env, op parallelOp, k, ops, own int, atOne map[[2]string]float64) error {
	if e.Spec.Serial != "" {
		return &SkipError{Reason: e.Spec.Serial}
	}
	if got := runtime.GOMAXPROCS(0); got != k {
		return fmt.Errorf("GOMAXPROCS is %d, want %d", got, k)
	}
	per := max(1, ops/k)
	type worker struct {
		keep   []Handle
		failed int
		err    error
	}
	ws := make([]worker, k)
	var fired failCount
	firedFunc := fired.add
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	e.Phase("setup", 0)
	for g := range ws {
		w := &ws[g]
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			var do func() bool
			do, w.keep, w.err = op.prepare(e, own, firedFunc)
			ready.Done()
			<-start
			if w.err != nil {
				return
			}
			failed := 0
			for i := range per {
				if g == 0 && i&stepMask == 0 {
					e.Step(i * k)
				}
				if !do() {
					failed++
				}
			}
			w.failed = failed
		}()
	}
	ready.Wait()
	var keep []Handle
	for _, w := range ws {
		keep = append(keep, w.keep...)
	}
	defer e.Close(keep)
	runtime.GC() // the setup's garbage is collected now, not in the loop

	e.Phase(op.name, per*k)
	u := readUsage()
	close(start)
	done.Wait()
	e.Impl.Flush()
	s := u.since()
	failed := 0
	for _, w := range ws {
		if w.err != nil {
			return w.err
		}
		failed += w.failed
	}
	if failed > 0 || fired.load() > 0 {
		return fmt.Errorf("%d operations found their timer not pending, %d timers fired", failed, fired.load())
	}
	want := 0
	if op.name == "rearm" {
		want = len(keep)
	}
	if err := e.CheckPending(want); err != nil {
		return err
	}

	n := float64(per * k)
	ns := float64(s.wall) / n
	e.addPerOp(s, "op", n)
	e.Add(Metric{Name: "CPUs used", Value: float64(s.cpu) / float64(s.wall), Kind: Decimal})
	key := [2]string{op.name, e.Spec.Name}
	if _, ok := atOne[key]; !ok && k == 1 {
		atOne[key] = ns
	}
	if one, ok := atOne[key]; ok && k <= parallelCPUs {
		work := one / ns
		e.Add(Metric{Name: "work", Value: work, Kind: Decimal})
		e.Add(Metric{Name: "eff %", Value: 100 * work / float64(k), Kind: Decimal})
	}
	return nil
}
