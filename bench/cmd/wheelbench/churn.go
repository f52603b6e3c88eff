package main

import (
	"fmt"
	"runtime"
	"time"
)

var (
	churnN = SizesParam("churn-n", "churn: timers pending 1-2 min out while the pairs run",
		[]int{1000}, []int{100_000, 1_000_000}, []int{1_000_000, 10_000_000})
	churnPairs = CountParam("pairs", "churn: AfterFunc(30s)+Stop pairs timed in each case",
		2000, 500_000, 5_000_000)
)

func init() {
	Register(&Workload{
		Name:  "churn",
		Order: 10,
		Title: "N timers pending 1-2 min out (uniform), then pairs of AfterFunc(30s) + Stop, timed",
		Notes: []string{
			"ns/pair, CPU ns/pair: wall and process CPU time of the pair loop ÷ pairs; go-zero's include a Flush of its goroutine.",
			"allocs/pair, B/pair: MemStats.Mallocs and TotalAlloc over the loop ÷ pairs. setup: wall time per pending timer.",
			"target: ≤ 60 ns/pair at N=10M; ≤ 0.2 × time.AfterFunc at N=1M and 10M; Stop allocates nothing.",
		},

		Cases: func(p Profile) []Case {
			pairs := churnPairs.Get(p)
			return sizeCases(churnN.Get(p), func(e *Env, n int) error { return runChurn(e, n, pairs) })
		},
		Charts: []Chart{SizeChart{
			Metric: "ns/pair",
			Title:  "churn: one AfterFunc(30s) + Stop, with N timers pending",
			XLabel: "N timers pending",
			YLabel: "ns per pair (wall)",
		}},
	})
}

func runChurn(e *Env, n, pairs int) error {
	if err := e.Fits(n); err != nil {
		return err
	}
	handles := make([]Handle, n)
	defer e.Close(handles) // on every path: Close is idempotent
	setup := readUsage()
	e.ArmSpread(handles, 1, time.Minute)
	setupSpan := setup.since()
	if err := e.CheckPending(n); err != nil {
		return err
	}
	// The setup's garbage is collected now, not during the timed loop.
	runtime.GC()

	impl := e.Impl
	e.Phase("pairs", pairs)
	failed := 0
	u := readUsage()
	for i := range pairs {
		if i&stepMask == 0 {
			e.Step(i)
		}
		h := impl.AfterFunc(30*time.Second, noop)
		if !impl.Stop(h) {
			failed++
		}
	}
	impl.Flush()
	s := u.since()
	if failed > 0 {
		return fmt.Errorf("%d of %d Stop calls found their timer gone", failed, pairs)
	}
	if err := e.CheckPending(n); err != nil {
		return err
	}
	if setupSpan.wall+s.wall > time.Minute {
		e.Warn("setup and pairs took %v: the first pending timers were due during the pairs", (setupSpan.wall + s.wall).Round(time.Second))
	}
	p := float64(pairs)
	e.addPerOp(s, "pair", p)
	e.Add(Metric{Name: "B/pair", Value: float64(s.bytes) / p, Kind: Decimal})
	e.Add(Metric{Name: "setup", Value: float64(setupSpan.wall) / float64(n), Kind: Duration})
	return nil
}
