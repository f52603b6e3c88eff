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
	b.Run("impl=wheel", func(b *testing.B) {
		st, _ := wheelPending(b, chanPending)
		defer st.Stop()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			t, _ := st.NewTimer(30 * time.Second)
			t.Stop()
		}
	})
	b.Run("impl=runtime", func(b *testing.B) {
		defer stopAll(runtimePending(chanPending))
		b.ReportAllocs()
		b.ResetTimer()
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
		defer st.Stop()
		timers := make([]*timingwheel.ChanTimer, n)
		for i := range timers {
			timers[i], _ = st.NewTimer(30 * time.Second)
		}
		b.ReportAllocs()
		b.ResetTimer()
		i := 0
		for b.Loop() {
			timers[i].Reset(30 * time.Second)
			if i++; i == n {
				i = 0
			}
		}
	})
	b.Run("impl=runtime", func(b *testing.B) {
		timers := make([]*time.Timer, n)
		for i := range timers {
			timers[i] = time.NewTimer(30 * time.Second)
		}
		defer stopAll(timers)
		b.ReportAllocs()
		b.ResetTimer()
		i := 0
		for b.Loop() {
			timers[i].Reset(30 * time.Second)
			if i++; i == n {
				i = 0
			}
		}
	})
}

// BenchmarkChanTimerReuse is Reset(30s)+Stop of one channel timer per op
// (reuse).
func BenchmarkChanTimerReuse(b *testing.B) {
	b.Run("impl=wheel", func(b *testing.B) {
		st, _ := wheelPending(b, chanPending)
		defer st.Stop()
		t, _ := st.NewTimer(time.Hour)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			t.Reset(30 * time.Second)
			t.Stop()
		}
	})
	b.Run("impl=runtime", func(b *testing.B) {
		defer stopAll(runtimePending(chanPending))
		t := time.NewTimer(time.Hour)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			t.Reset(30 * time.Second)
			t.Stop()
		}
	})
}

func BenchmarkNewTickerStop(b *testing.B) {
	b.Run("impl=wheel", func(b *testing.B) {
		st, _ := wheelPending(b, chanPending)
		defer st.Stop()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			t, _ := st.NewTicker(time.Second)
			t.Stop()
		}
	})
	b.Run("impl=runtime", func(b *testing.B) {
		defer stopAll(runtimePending(chanPending))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			time.NewTicker(time.Second).Stop()
		}
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
				defer st.Stop()
				t, _ := st.NewTimer(time.Hour)
				reset, c = t.Reset, t.C
			} else {
				defer stopAll(runtimePending(chanPending))
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
