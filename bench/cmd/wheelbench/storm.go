package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

var (
	stormM = SizesParam("storm-m", "storm: timers due in the window",
		[]int{2000}, []int{200_000}, []int{1_000_000})
	stormFrom = DurationParam("storm-from", "storm: the window's start, from each timer's AfterFunc call",
		20*time.Millisecond, time.Second, time.Second)
	stormTo = DurationParam("storm-to", "storm: the window's end",
		40*time.Millisecond, 2*time.Second, 2*time.Second)
)

// stormSlack is how long after the window the storm waits for its last
// callback before it reports a failure.
const stormSlack = time.Minute

func init() {
	Register(&Workload{
		Name:  "storm",
		Order: 30,
		Title: "M timers due uniformly in [from, to] after their AfterFunc call; each callback records time.Since(deadline)",
		Notes: []string{
			"late: callback start − deadline, on the monotonic clock. The deadline is read just before the AfterFunc call, " +
				"so reading the clock later never makes an implementation look early. early: callbacks run before their deadline.",
			"CPU: process user+system time from the first AfterFunc to the last callback. " +
				"schedule: wall time of the M AfterFunc calls (for go-zero, and its Flush).",
			"target (M=1M): 0 early; p99 lateness ≤ 1 ms; max ≤ 3 ms; CPU ≤ 1.0 s.",
		},

		Cases: func(p Profile) []Case {
			from, to := stormFrom.Get(p), stormTo.Get(p)
			return countCases(stormM.Get(p), func(m int) string { return fmt.Sprintf("M=%s in [%v,%v]", formatCount(m), from, to) },
				func(e *Env, m int) error { return runStorm(e, m, from, to) })
		},
		Charts: []Chart{CDFChart{
			Sample:   "lateness",
			Title:    "storm %s: how late callbacks ran (early ones drawn at 1µs)",
			XLabel:   "lateness: callback start − deadline",
			Floor:    1e3,
			Negative: "early",
		}},
	})
}

// stormState is shared by the callbacks of a storm, so that each one's
// closure holds only it and an index.
type stormState struct {
	base     time.Time
	m        int64
	deadline []int64 // ns since base; written before the timer is set
	late     []int64 // ns; late[i] is written by callback i only
	fired    atomic.Int64
	done     chan struct{} // closed by the last callback
}

func (st *stormState) fire(i int) {
	st.late[i] = int64(time.Since(st.base)) - st.deadline[i]
	if st.fired.Add(1) == st.m {
		close(st.done)
	}
}

func runStorm(e *Env, m int, from, to time.Duration) error {
	if err := e.Fits(m); err != nil {
		return err
	}
	if to < from {
		return fmt.Errorf("storm window [%v, %v] is empty", from, to)
	}
	st := &stormState{
		m:        int64(m),
		deadline: make([]int64, m),
		late:     make([]int64, m),
		done:     make(chan struct{}),
	}
	handles := make([]Handle, m) // to stop the stragglers if some never fire
	rng := rand.New(rand.NewPCG(3, uint64(m)))
	impl := e.Impl

	e.Phase("schedule", m)
	st.base = time.Now()
	u := readUsage()
	for i := range m {
		if i&stepMask == 0 {
			e.Step(i)
		}
		d := from + time.Duration(rng.Int64N(int64(to-from)+1))
		st.deadline[i] = int64(time.Since(st.base) + d)
		handles[i] = impl.AfterFunc(d, func() { st.fire(i) })
	}
	impl.Flush()
	schedule := time.Since(u.wall)

	e.PhaseFunc("firing", m, st.fired.Load)
	wait := time.NewTimer(to + stormSlack)
	defer wait.Stop()
	select {
	case <-st.done:
	case <-wait.C:
		e.Close(handles) // stop the stragglers
		return fmt.Errorf("%d of %d callbacks ran within %v after the window", st.fired.Load(), m, stormSlack)
	}
	s := u.since()
	var own *ownLateness
	if r, ok := impl.(LatenessReporter); ok {
		h, tick := r.Lateness()
		own = &ownLateness{h, tick}
	}
	e.Close(nil)

	// Every callback has run (done is closed after the last write), so late
	// is ours to sort.
	late := st.late
	slices.Sort(late)
	e.Add(Metric{Name: "fired", Value: float64(m), Kind: Count})
	e.Add(Metric{Name: "early", Value: float64(countBelow(late, 0)), Kind: Count})
	e.Add(Metric{Name: "p50 late", Value: float64(percentile(late, 50)), Kind: Duration})
	e.Add(Metric{Name: "p99 late", Value: float64(percentile(late, 99)), Kind: Duration, Ratio: true})
	e.Add(Metric{Name: "max late", Value: float64(late[m-1]), Kind: Duration, Ratio: true})
	e.Add(Metric{Name: "CPU", Value: float64(s.cpu), Kind: Duration, Ratio: true})
	e.Add(Metric{Name: "schedule", Value: float64(schedule), Kind: Duration})
	samples := make([]float64, m)
	for i, l := range late {
		samples[i] = float64(l)
	}
	e.AddSamples("lateness", samples)
	if own != nil {
		e.Add(Metric{Name: "own p50", Value: float64(own.h.Quantile(0.5)), Kind: Duration})
		e.Add(Metric{Name: "own p99", Value: float64(own.h.Quantile(0.99)), Kind: Duration})
		e.Add(Metric{Name: "own max", Value: float64(own.h.Quantile(1)), Kind: Duration})
		off, worst := own.disagreement(late)
		e.Add(Metric{Name: "own outside", Value: float64(off), Kind: Count})
		if off > 0 {
			e.Warn("the wheel's own lateness histogram and the storm's measurement disagree by more than a tick for %d of %d callbacks, at a bound of %v", off, m, worst)
		}
	}
	return nil
}

// ownLateness is an implementation's own measurement of its storm's
// lateness (see LatenessReporter).
type ownLateness struct {
	h    timingwheel.Histogram
	tick time.Duration
}

// ownSlack is how much later than the implementation's own clock read the
// storm's callback may read the clock: the code between the two, or the
// goroutine losing its processor in between.
const ownSlack = 100 * time.Microsecond

// disagreement compares the histogram with the storm's sorted lateness, at
// every bound b of the histogram. Each callback's own lateness (from its
// due time, the deadline rounded up to the tick, read before the callback
// runs) is at most the storm's (from the deadline, read inside the
// callback), and at least the storm's less a tick and ownSlack: so at most
// as many callbacks are later than b by the histogram as by the storm, and
// at least as many as are later than b + tick + ownSlack by the storm. It
// returns by how many callbacks the worst bound misses that, and the bound.
func (o *ownLateness) disagreement(sorted []int64) (off int, at time.Duration) {
	var cum uint64 // own count at or below the bound
	for i := range timingwheel.NumBuckets - 1 {
		cum += o.h.Counts[i]
		b := timingwheel.BucketBound(i)
		lo := countAtMost(sorted, int64(b))                 // the storm's at or below b
		hi := countAtMost(sorted, int64(b+o.tick+ownSlack)) // ... at or below b + tick + slack
		miss := 0
		if int(cum) < lo {
			miss = lo - int(cum)
		} else if int(cum) > hi {
			miss = int(cum) - hi
		}
		if miss > off {
			off, at = miss, b
		}
	}
	return off, at
}

// countAtMost returns how many of the sorted values are at most x.
func countAtMost(sorted []int64, x int64) int {
	i, _ := slices.BinarySearch(sorted, x+1)
	return i
}
