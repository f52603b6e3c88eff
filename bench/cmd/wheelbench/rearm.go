package main

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

var (
	rearmN = SizesParam("rearm-n", "rearm: timers pending ~30 s out, pushed back round robin",
		[]int{1000}, []int{100_000, 1_000_000}, []int{1_000_000, 10_000_000})
	rearmOps = CountParam("rearm-ops", "rearm: Reset calls timed in each case, and in each parallel case",
		4000, 2_000_000, 10_000_000)
	reuseN = SizesParam("reuse-n", "reuse: timers pending ~30 s out while one timer is reused",
		[]int{1000}, []int{1_000_000}, []int{1_000_000})
	reusePairs = CountParam("reuse-pairs", "reuse: Reset(30s)+Stop pairs timed in each case",
		4000, 2_000_000, 10_000_000)
)

// errNoReset skips an implementation without a synchronous Reset.
var errNoReset = &SkipError{Reason: "no synchronous Reset (go-zero's MoveTimer and SetTimer are hand-offs to its goroutine)"}

func init() {
	Register(&Workload{
		Name:  "rearm",
		Order: 25,
		Title: "N timers pending ~30 s out; Reset(30s) one at a time, round robin, from one goroutine and from GOMAXPROCS",
		Notes: []string{
			"ns/Reset, CPU ns/Reset: wall and process CPU time of the loop ÷ Reset calls; par ns/Reset: the same from GOMAXPROCS goroutines, each going round a share of the timers of its own (wall ÷ all their calls).",
			"The timers are pushed back, never due: the run fails if one fires or a Reset finds its timer not pending.",
			"target: ≤ 0.8 × time.Timer.Reset at N=1M and 10M, from one goroutine and from GOMAXPROCS; 0 allocations.",
		},
		Cases: func(p Profile) []Case {
			ops := rearmOps.Get(p)
			return sizeCases(rearmN.Get(p), func(e *Env, n int) error { return runRearm(e, n, ops) })
		},
		Charts: []Chart{SizeChart{
			Metric: "ns/Reset",
			Title:  "rearm: one Reset(30s) of a pending timer, with N timers pending",
			XLabel: "N timers pending",
			YLabel: "ns per Reset (wall)",
		}},
	})
	Register(&Workload{
		Name:  "reuse",
		Order: 26,
		Title: "N timers pending ~30 s out; one timer kept in a struct, Reset(30s) + Stop per request",
		Notes: []string{
			"ns/pair, CPU ns/pair: wall and process CPU time of the loop ÷ pairs. The timer is made once (timingwheel: Bind in a struct; time.AfterFunc: made and stopped).",
			"target: ≤ 0.9 × time.Timer Reset+Stop with one goroutine; 0 allocations.",
		},
		Cases: func(p Profile) []Case {
			pairs := reusePairs.Get(p)
			return sizeCases(reuseN.Get(p), func(e *Env, n int) error { return runReuse(e, n, pairs) })
		},
	})
}

// setupPending checks that the implementation can Reset and that n timers
// fit, then arms n timers 30s out, which the workload never lets fire, each
// running f. The caller Closes e with the handles.
func setupPending(e *Env, n int, f func()) (Resetter, []Handle, error) {
	r, ok := e.Impl.(Resetter)
	if !ok {
		return nil, nil, errNoReset
	}
	if err := e.Fits(n); err != nil {
		return nil, nil, err
	}
	handles := make([]Handle, n)
	e.Phase("setup", n)
	for i := range handles {
		if i&stepMask == 0 {
			e.Step(i)
		}
		handles[i] = e.Impl.AfterFunc(30*time.Second, f)
	}
	e.Impl.Flush()
	runtime.GC() // the setup's garbage is collected now, not in the loop
	return r, handles, nil
}

func runRearm(e *Env, n, ops int) error {
	var fired failCount
	r, handles, err := setupPending(e, n, fired.add)
	if err != nil {
		return err
	}
	defer e.Close(handles)
	if err := e.CheckPending(n); err != nil {
		return err
	}

	e.Phase("Reset", ops)
	notPending := 0
	u := readUsage()
	for i, k := 0, 0; k < ops; k++ {
		if k&stepMask == 0 {
			e.Step(k)
		}
		if !r.Reset(handles[i], 30*time.Second) {
			notPending++
		}
		if i++; i == n {
			i = 0
		}
	}
	s := u.since()

	// The same from GOMAXPROCS goroutines, each on a share of its own.
	procs := runtime.GOMAXPROCS(0)
	e.Phase("Reset, parallel", ops)
	var wg sync.WaitGroup
	var parNotPending failCount
	pu := readUsage()
	for g := range procs {
		lo, hi := g*n/procs, (g+1)*n/procs
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, k := lo, 0; k < ops/procs; k++ {
				if g == 0 && k&stepMask == 0 {
					e.Step(k * procs)
				}
				if !r.Reset(handles[i], 30*time.Second) {
					parNotPending.add()
				}
				if i++; i == hi {
					i = lo
				}
			}
		}()
	}
	wg.Wait()
	ps := pu.since()
	if int64(notPending)+parNotPending.load() > 0 || fired.load() > 0 {
		return fmt.Errorf("%d Reset calls found their timer not pending, %d timers fired", int64(notPending)+parNotPending.load(), fired.load())
	}
	if err := e.CheckPending(n); err != nil {
		return err
	}
	o, po := float64(ops), float64(ops/procs*procs)
	e.addPerOp(s, "Reset", o)
	e.Add(Metric{Name: "par ns/Reset", Value: float64(ps.wall) / po, Kind: Decimal, Ratio: true})
	e.Add(Metric{Name: "par CPU ns/Reset", Value: float64(ps.cpu) / po, Kind: Decimal, Ratio: true})
	return nil
}

func runReuse(e *Env, n, pairs int) error {
	var fired failCount
	r, handles, err := setupPending(e, n, fired.add)
	if err != nil {
		return err
	}
	defer e.Close(handles)

	h := r.Unarmed(fired.add)
	e.Phase("Reset+Stop", pairs)
	wrong := 0
	u := readUsage()
	for k := range pairs {
		if k&stepMask == 0 {
			e.Step(k)
		}
		r.Reset(h, 30*time.Second)
		if !e.Impl.Stop(h) {
			wrong++
		}
	}
	s := u.since()
	if wrong > 0 || fired.load() > 0 {
		return fmt.Errorf("%d Stop calls found the reused timer not pending, %d timers fired", wrong, fired.load())
	}
	if err := e.CheckPending(n); err != nil {
		return err
	}
	e.addPerOp(s, "pair", float64(pairs))
	return nil
}

// failCount counts events that must not happen, from any goroutine.
type failCount struct{ n atomic.Int64 }

func (c *failCount) add()        { c.n.Add(1) }
func (c *failCount) load() int64 { return c.n.Load() }
