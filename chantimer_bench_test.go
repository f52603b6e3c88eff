package timingwheel_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// The channel timers against time.NewTimer and time.NewTicker in the same
// run, with 1M other timers pending (as the churn, rearm and reuse
// workloads have): making and stopping one, pushing one back (Reset of a
// pending timer, and Reset+Stop of a reused one), and the select loop with
// a per-iteration timeout, the most common timer code in Go servers.

const chanPending = 1_000_000

func BenchmarkNewTimerStop(b *testing.B) {
	benchImpls(b, func(b *testing.B, st *timingwheel.SystemTimer) {
		for b.Loop() {
			t, _ := st.NewTimer(30 * time.Second)
			t.Stop()
		}
	}, func(b *testing.B) {
		for b.Loop() {
			time.NewTimer(30 * time.Second).Stop()
		}
	})
}

// BenchmarkChanTimerReset pushes back one of n pending channel timers per
// op, round robin (rearm).
func BenchmarkChanTimerReset(b *testing.B) {
	const n = chanPending
	b.Run("impl=wheel", func(b *testing.B) {
		st, _ := wheelPending(b, 1)
		timers := make([]*timingwheel.ChanTimer, n)
		for i := range timers {
			timers[i], _ = st.NewTimer(30 * time.Second)
		}
		b.ReportAllocs()
		b.ResetTimer()
		rr := roundRobin{n: n}
		for b.Loop() {
			timers[rr.next()].Reset(30 * time.Second)
		}
	})
	b.Run("impl=runtime", func(b *testing.B) {
		timers := make([]*time.Timer, n)
		for i := range timers {
			timers[i] = time.NewTimer(30 * time.Second)
		}
		defer stopAll(timers)
		benchRuntimeReset(b, timers)
	})
}

// BenchmarkChanTimerReuse is Reset(30s)+Stop of one channel timer per op
// (reuse).
func BenchmarkChanTimerReuse(b *testing.B) {
	benchImpls(b, func(b *testing.B, st *timingwheel.SystemTimer) {
		t, _ := st.NewTimer(time.Hour)
		for b.Loop() {
			t.Reset(30 * time.Second)
			t.Stop()
		}
	}, func(b *testing.B) {
		t := time.NewTimer(time.Hour)
		for b.Loop() {
			t.Reset(30 * time.Second)
			t.Stop()
		}
	})
}

func BenchmarkNewTickerStop(b *testing.B) {
	benchImpls(b, func(b *testing.B, st *timingwheel.SystemTimer) {
		for b.Loop() {
			t, _ := st.NewTicker(time.Second)
			t.Stop()
		}
	}, func(b *testing.B) {
		for b.Loop() {
			time.NewTicker(time.Second).Stop()
		}
	})
}

// benchImpls runs wheelLoop and runtimeLoop as the sub-benchmarks
// impl=wheel and impl=runtime, each with chanPending AfterFunc timers of
// its kind pending and its allocations reported. Each holds its own timed
// loop; what it sets up before the loop is not timed (b.Loop's first call
// resets the timer).
func benchImpls(b *testing.B, wheelLoop func(b *testing.B, st *timingwheel.SystemTimer), runtimeLoop func(b *testing.B)) {
	b.Run("impl=wheel", func(b *testing.B) {
		st, _ := wheelPending(b, chanPending)
		b.ReportAllocs()
		b.ResetTimer()
		wheelLoop(b, st)
	})
	b.Run("impl=runtime", func(b *testing.B) {
		runtimePending(b, chanPending)
		b.ReportAllocs()
		b.ResetTimer()
		runtimeLoop(b)
	})
}

// BenchmarkSelectLoop is a loop that waits for a message or a timeout,
// with one timer made before the loop and Reset each iteration, as a
// connection's read loop does: the message is always there first.
func BenchmarkSelectLoop(b *testing.B) {
	for _, impl := range []string{"wheel", "runtime"} {
		b.Run(fmt.Sprintf("impl=%s", impl), func(b *testing.B) {
			var reset func(time.Duration) bool
			var c <-chan time.Time
			if impl == "wheel" {
				st, _ := wheelPending(b, chanPending)
				t, _ := st.NewTimer(time.Hour)
				reset, c = t.Reset, t.C
			} else {
				runtimePending(b, chanPending)
				t := time.NewTimer(time.Hour)
				reset, c = t.Reset, t.C
			}
			msgs := make(chan int, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				msgs <- 1
				reset(30 * time.Second)
				select {
				case <-msgs:
				case <-c:
					b.Fatal("timed out")
				}
			}
		})
	}
}
