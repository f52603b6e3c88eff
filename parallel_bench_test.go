package timingwheel_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// BenchmarkParallel is the parallel workload of bench/README.md: each of
// GOMAXPROCS goroutines (b.RunParallel) works on timers of its own, for
// this package (timers on the shard of the processor that arms them, the
// default, and placed by address for good, wheel-address: see doc.go,
// "Cores"; and for churn, wheel-bounded, under WithMaxPending) and for
// the runtime in the same run, with nothing else pending but what a case
// keeps. Run it at several core counts:
//
//	go test -run '^$' -bench Parallel -cpu 1,2,4,8,16
//
// ns/op is wall time per operation of all goroutines together: with
// perfect scaling it halves as -cpu doubles. scripts/scaling turns the
// output into the scaling table.
func BenchmarkParallel(b *testing.B) {
	for _, c := range parallelCases {
		impls := []string{"wheel", "wheel-address", "runtime"}
		if c.name == "churn" {
			// Under WithMaxPending every arming and stop takes the
			// shard's lock and a place of the bound (see doc.go,
			// "Bounds"): the places are kept per shard.
			impls = append(impls, "wheel-bounded")
		}
		for _, impl := range impls {
			b.Run(fmt.Sprintf("op=%s/impl=%s", c.name, impl), func(b *testing.B) {
				var st *timingwheel.SystemTimer
				if impl != "runtime" {
					var opts []timingwheel.Option
					switch impl {
					case "wheel-address": // timers placed by address
						opts = append(opts, timingwheel.WithAddressShards())
					case "wheel-bounded":
						opts = append(opts, timingwheel.WithMaxPending(1<<30))
					}
					var err error
					if st, err = timingwheel.New(opts...); err != nil {
						b.Fatal(err)
					}
					defer st.Stop()
				}
				// One operation per goroutine RunParallel starts. A case
				// whose setup is costly makes them before the clock
				// starts, here; the others on the goroutine that uses
				// it, as a server does, so that what it binds is local to
				// that goroutine's processor (see doc.go, "Cores").
				ops := make([]func(), runtime.GOMAXPROCS(0))
				if c.costly {
					for g := range ops {
						ops[g] = c.setup(b, st, g)
					}
				}
				runtime.GC()
				b.ReportAllocs()
				b.ResetTimer()
				var next atomic.Int64
				b.RunParallel(func(pb *testing.PB) {
					g := next.Add(1) - 1
					op := ops[g]
					if op == nil {
						op = c.setup(b, st, int(g))
					}
					for pb.Next() {
						op()
					}
				})
			})
		}
	}
}

// A parallelCase makes, for one goroutine, the operation it repeats; st
// is nil for the runtime.
type parallelCase struct {
	name   string
	costly bool // setup is made before the clock starts
	setup  func(b *testing.B, st *timingwheel.SystemTimer, g int) func()
}

// rearmOwn is how many pending timers each goroutine pushes back, round
// robin, in the rearm case.
const rearmOwn = 100_000

var parallelCases = []parallelCase{
	{"churn", false, func(b *testing.B, st *timingwheel.SystemTimer, _ int) func() {
		if st == nil {
			return func() { time.AfterFunc(30*time.Second, noop).Stop() }
		}
		return func() {
			t, _ := st.AfterFunc(30*time.Second, noop)
			t.Stop()
		}
	}},
	{"rearm", true, func(b *testing.B, st *timingwheel.SystemTimer, _ int) func() {
		i := 0
		if st == nil {
			timers := make([]*time.Timer, rearmOwn)
			for i := range timers {
				timers[i] = time.AfterFunc(30*time.Second, noop)
			}
			b.Cleanup(func() { stopAll(timers) })
			return func() {
				timers[i].Reset(30 * time.Second)
				if i++; i == len(timers) {
					i = 0
				}
			}
		}
		timers := make([]*timingwheel.Timer, rearmOwn)
		for i := range timers {
			timers[i], _ = st.AfterFunc(30*time.Second, noop)
		}
		return func() {
			timers[i].Reset(30 * time.Second)
			if i++; i == len(timers) {
				i = 0
			}
		}
	}},
	{"reuse", false, func(b *testing.B, st *timingwheel.SystemTimer, _ int) func() {
		if st == nil {
			t := time.AfterFunc(time.Hour, noop)
			t.Stop()
			return func() {
				t.Reset(30 * time.Second)
				t.Stop()
			}
		}
		s := &conn{}
		st.Bind(&s.timeout, noop)
		return func() {
			s.timeout.Reset(30 * time.Second)
			s.timeout.Stop()
		}
	}},
	{"withtimeout", false, func(b *testing.B, st *timingwheel.SystemTimer, _ int) func() {
		parent := context.Background()
		if st == nil {
			return func() {
				_, cancel := context.WithTimeout(parent, 30*time.Second)
				cancel()
			}
		}
		return func() {
			_, cancel := st.WithTimeout(parent, 30*time.Second)
			cancel()
		}
	}},
	{"newtimer", false, func(b *testing.B, st *timingwheel.SystemTimer, _ int) func() {
		if st == nil {
			return func() { time.NewTimer(30 * time.Second).Stop() }
		}
		return func() {
			t, _ := st.NewTimer(30 * time.Second)
			t.Stop()
		}
	}},
	{"selectloop", false, func(b *testing.B, st *timingwheel.SystemTimer, _ int) func() {
		var reset func(time.Duration) bool
		var c <-chan time.Time
		if st == nil {
			t := time.NewTimer(time.Hour)
			reset, c = t.Reset, t.C
		} else {
			t, _ := st.NewTimer(time.Hour)
			reset, c = t.Reset, t.C
		}
		msgs := make(chan int, 1)
		return func() {
			msgs <- 1
			reset(30 * time.Second)
			select {
			case <-msgs:
			case <-c:
				panic("timed out")
			}
		}
	}},
}

// conn is a server's per-connection struct with its timer in it, and the
// rest of what such a struct holds (80 bytes here, 128 in all), as
// wheelbench's boundTimer: two bare 48-byte Timers allocated back to back
// may share a cache line, and then two goroutines each resetting its own
// pay for it (see bench/README.md). The runtime's timer, which
// time.AfterFunc allocates, is over 100 bytes.
type conn struct {
	timeout timingwheel.Timer
	_       [80]byte
}
