package timingwheel_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// The precision and storm workloads of bench/README.md as benchmarks, so
// that scripts/abguard can run them beside the others for two commits.
// They use the package's exported API alone: the guard builds them into an
// older commit's test binary too.

// BenchmarkPrecision arms one timer at a time on an otherwise idle timer
// and waits for it: a callback (AfterFunc), a channel timer (NewTimer) and
// a context (WithTimeout), at 1, 5 and 20ms, for this package's
// SystemTimer and for the time and context packages in the same run. Each
// op is one timer; it reports the lateness past the deadline (p50, p99 and
// max, in ms, of the callback's start, the channel's receive or Done's
// close) and how many fired early. Run it with -benchtime Nx for N timers
// per case.
func BenchmarkPrecision(b *testing.B) {
	for _, d := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		for _, kind := range []string{"afterfunc", "chan", "context"} {
			for _, impl := range []string{"wheel", "runtime"} {
				b.Run(fmt.Sprintf("d=%v/kind=%s/impl=%s", d, kind, impl), func(b *testing.B) {
					st := wheelFor(b, impl)
					wait := precisionWait(st, kind)
					late := make([]time.Duration, 0, b.N)
					for b.Loop() {
						start := time.Now()
						late = append(late, wait(d).Sub(start)-d)
					}
					reportLateness(b, late)
				})
			}
		}
	}
}

// wheelFor returns a SystemTimer, stopped when b ends, for impl "wheel",
// and nil, the runtime's timers, for impl "runtime".
func wheelFor(b *testing.B, impl string) *timingwheel.SystemTimer {
	if impl != "wheel" {
		return nil
	}
	st, err := timingwheel.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Stop() })
	return st
}

// precisionWait returns a function that arms a timer of the kind for d, on
// st or on the runtime's if st is nil, waits for it, and returns when it
// saw it fire.
func precisionWait(st *timingwheel.SystemTimer, kind string) func(time.Duration) time.Time {
	fired := make(chan time.Time, 1)
	f := func() { fired <- time.Now() }
	switch {
	case kind == "afterfunc" && st != nil:
		return func(d time.Duration) time.Time { _, _ = st.AfterFunc(d, f); return <-fired }
	case kind == "afterfunc":
		return func(d time.Duration) time.Time { time.AfterFunc(d, f); return <-fired }
	case kind == "chan" && st != nil:
		return func(d time.Duration) time.Time {
			t, _ := st.NewTimer(d)
			<-t.C
			return time.Now()
		}
	case kind == "chan":
		return func(d time.Duration) time.Time {
			<-time.NewTimer(d).C
			return time.Now()
		}
	}
	// "context": the wheel's and the context package's WithTimeout are
	// measured by the same wait.
	withTimeout := context.WithTimeout
	if st != nil {
		withTimeout = st.WithTimeout
	}
	return func(d time.Duration) time.Time {
		ctx, cancel := withTimeout(context.Background(), d)
		<-ctx.Done()
		now := time.Now()
		cancel()
		return now
	}
}

// reportLateness reports the percentiles of late, in ms, and the count of
// negative ones (early).
func reportLateness(b *testing.B, late []time.Duration) {
	if len(late) == 0 {
		return
	}
	early := 0
	for _, l := range late {
		if l < 0 {
			early++
		}
	}
	slices.Sort(late)
	at := func(q float64) float64 { return float64(late[int(q*float64(len(late)-1))]) / 1e6 }
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(at(1), "max-ms")
	b.ReportMetric(float64(early), "early")
}

// BenchmarkStorm is the storm workload: M timers due uniformly in [1s, 2s]
// after their AfterFunc call, armed back to back, each callback recording
// how late it started. Each op is one storm; it reports the lateness (p50,
// p99, max in ms), the early count and the CPU time the process used from
// the first AfterFunc to the last callback, in seconds. Run it with
// -benchtime 1x.
func BenchmarkStorm(b *testing.B) {
	m := 1_000_000
	if testing.Short() {
		m = 20_000 // CI's run-once check: that it runs, not what it measures
	}
	for _, impl := range []string{"wheel", "runtime"} {
		b.Run("impl="+impl, func(b *testing.B) {
			st := wheelFor(b, impl)
			late := make([]time.Duration, m)
			var cpu float64
			for b.Loop() {
				rng := rand.New(rand.NewPCG(1, 2))
				var left atomic.Int64
				left.Store(int64(m))
				done := make(chan struct{})
				runtime.GC()
				c0 := cpuSeconds()
				for i := range late {
					d := time.Second + time.Duration(rng.Int64N(int64(time.Second)))
					deadline := time.Now().Add(d) // read before the call: never early by the clock
					f := func() {
						late[i] = time.Since(deadline)
						if left.Add(-1) == 0 {
							close(done)
						}
					}
					if st != nil {
						_, _ = st.AfterFunc(d, f)
					} else {
						time.AfterFunc(d, f)
					}
				}
				<-done
				cpu += cpuSeconds() - c0
			}
			reportLateness(b, slices.Clone(late))
			b.ReportMetric(cpu/float64(b.N), "cpu-s")
		})
	}
}
