package main

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

var (
	selectLoopG = SizesParam("selectloop-g", "selectloop: goroutines, each in a select loop with a timeout per iteration",
		[]int{50}, []int{1000}, []int{10_000})
	selectLoopMsgs = CountParam("selectloop-msgs", "selectloop: messages sent in each case, over all the goroutines (one iteration each)",
		5000, 1_000_000, 10_000_000)
	selectLoopTimeout = DurationParam("selectloop-timeout", "selectloop: the timeout of each iteration, which the message always beats",
		30*time.Second, 30*time.Second, 30*time.Second)
)

// errNoChanTimers skips an implementation without channel timers.
var errNoChanTimers = &SkipError{Reason: "no channel timers"}

func init() {
	Register(&Workload{
		Name:  "selectloop",
		Order: 27,
		Title: "G goroutines, each looping: Reset its one channel timer to the timeout, then select on a channel of its own and the timer; messages always win",
		Notes: []string{
			"Each goroutine makes one channel timer (timingwheel: SystemTimer.NewTimer; time.AfterFunc row: time.NewTimer) " +
				"on its own goroutine before its loop, and Resets it every iteration: t.Reset(timeout); select { case <-msgs: case <-t.C: }. " +
				"GOMAXPROCS driver goroutines, each over a share of the goroutines, send them their messages round robin over unbuffered channels.",
			"ns/iter, CPU ns/iter: wall and process CPU time from the first message to the last goroutine's end ÷ iterations " +
				"(the channel hand-off and the scheduler, the same in both rows, are most of it); allocs/iter: MemStats.Mallocs ÷ iterations.",
			"timeouts: iterations the timer won; the run fails unless it is 0 and every Reset found its timer pending.",
			"target: ≤ time.NewTimer's ns/iter and allocs/iter.",
		},
		Cases: func(p Profile) []Case {
			msgs, timeout := selectLoopMsgs.Get(p), selectLoopTimeout.Get(p)
			return countCases(selectLoopG.Get(p), func(g int) string { return "G=" + formatCount(g) },
				func(e *Env, g int) error { return runSelectLoop(e, g, max(1, msgs/g), timeout) })
		},
	})
}

// runSelectLoop runs g goroutines, each for rounds iterations of the loop.
func runSelectLoop(e *Env, g, rounds int, timeout time.Duration) error {
	m, ok := e.Impl.(ChanTimerMaker)
	if !ok {
		return errNoChanTimers
	}
	defer e.Close(nil) // every timer is stopped by its goroutine

	msgs := make([]chan int, g)
	for i := range msgs {
		msgs[i] = make(chan int)
	}
	var timeouts, notPending atomic.Int64
	var ready, done sync.WaitGroup
	e.Phase("start", 0)
	for i := range g {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			// Made on the goroutine that uses it, as a server's connection
			// goroutine would: the wheel places it on a shard of this P.
			t, c := m.NewChanTimer(timeout)
			ready.Done()
			in := msgs[i]
			var to, np int64
			// A timeout is an iteration more: the loop takes every
			// message, so that no driver is left blocked on a send.
			for n := 0; n < rounds; {
				if !t.Reset(timeout) {
					np++
				}
				select {
				case <-in:
					n++
				case <-c:
					to++
				}
			}
			t.Stop()
			timeouts.Add(to)
			notPending.Add(np)
		}()
	}
	ready.Wait()
	runtime.GC() // the goroutines' stacks and timers are made: not the loop's garbage

	drivers := min(runtime.GOMAXPROCS(0), g)
	total := g * rounds
	e.Phase("iterations", total)
	var driving sync.WaitGroup
	u := readUsage()
	for d := range drivers {
		lo, hi := d*g/drivers, (d+1)*g/drivers
		driving.Add(1)
		go func() {
			defer driving.Done()
			for r := range rounds {
				if d == 0 {
					e.Step(r * g)
				}
				for _, ch := range msgs[lo:hi] {
					ch <- r
				}
			}
		}()
	}
	done.Wait()
	s := u.since()
	driving.Wait()
	if to, np := timeouts.Load(), notPending.Load(); to > 0 || np > 0 {
		return fmt.Errorf("%d timeouts fired, %d Resets found their timer not pending: the messages should always win (timeout %v)", to, np, timeout)
	}
	it := float64(total)
	e.addPerOp(s, "iter", it)
	e.Add(Metric{Name: "B/iter", Value: float64(s.bytes) / it, Kind: Decimal})
	e.Add(Metric{Name: "GCs", Value: float64(s.gcs), Kind: Count})
	e.Add(Metric{Name: "timeouts", Value: 0, Kind: Count})
	return nil
}
