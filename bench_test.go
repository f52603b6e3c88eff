package timingwheel_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// The pending sizes of BenchmarkAfterFuncStop. The largest takes a few
// seconds and about a gigabyte to set up per implementation.
var pendingSizes = []int{1_000, 100_000, 1_000_000, 10_000_000}

// shortSizes is sizes without those above a million under -short (CI's
// run-once check of the benchmarks: that they run, not what they measure).
func shortSizes(sizes []int) []int {
	if !testing.Short() {
		return sizes
	}
	return slices.DeleteFunc(slices.Clone(sizes), func(n int) bool { return n > 1_000_000 })
}

func noop() {}

// BenchmarkAfterFuncStop times an AfterFunc(30s) + Stop pair with n timers
// pending 1–2 minutes out (the churn workload in bench/README.md), for this
// package and, in the same run, for time.AfterFunc.
func BenchmarkAfterFuncStop(b *testing.B) {
	for _, n := range shortSizes(pendingSizes) {
		b.Run(fmt.Sprintf("impl=wheel/pending=%d", n), func(b *testing.B) {
			st, err := timingwheel.New()
			if err != nil {
				b.Fatal(err)
			}
			defer st.Stop()
			rng := rand.New(rand.NewPCG(1, 2))
			for range n {
				if _, err := st.AfterFunc(churnDelay(rng), noop); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t, _ := st.AfterFunc(30*time.Second, noop)
				t.Stop()
			}
		})
		b.Run(fmt.Sprintf("impl=runtime/pending=%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			pending := make([]*time.Timer, n)
			for i := range pending {
				pending[i] = time.AfterFunc(churnDelay(rng), noop)
			}
			defer func() {
				for _, t := range pending {
					t.Stop()
				}
			}()
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t := time.AfterFunc(30*time.Second, noop)
				t.Stop()
			}
		})
	}
}

// floorTimer has the size and the pointer words of a Timer (48 bytes:
// next, prev, f, sh; at; state, kind, depth).
type floorTimer struct {
	ptrs  [4]*int
	at    int64
	state int64
}

var (
	floorSink *floorTimer
	floorAt   int
)

// BenchmarkFloor times what an AfterFunc+Stop pair cannot do without: one
// 48-byte heap allocation (and its share of the GC) and one monotonic clock
// read, apart and together. With a Timer allocated per call, "both" is the
// floor under BenchmarkAfterFuncStop's ns/op.
func BenchmarkFloor(b *testing.B) {
	epoch := time.Now()
	b.Run("op=alloc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			floorSink = &floorTimer{ptrs: [4]*int{2: &floorAt}, state: 1}
		}
	})
	b.Run("op=clock", func(b *testing.B) {
		var at int
		for b.Loop() {
			at += int(time.Since(epoch))
		}
		floorAt = at
	})
	b.Run("op=both", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			floorSink = &floorTimer{ptrs: [4]*int{2: &floorAt}, at: int64(time.Since(epoch)), state: 1}
		}
	})
}

func churnDelay(rng *rand.Rand) time.Duration {
	return time.Minute + time.Duration(rng.Int64N(int64(time.Minute)))
}

// TestAllocs pins the hot paths: Stop allocates nothing, AfterFunc only the
// Timer.
func TestAllocs(t *testing.T) {
	st, err := timingwheel.New()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	const runs = 1000
	timers := make([]*timingwheel.Timer, 0, runs+1)
	for range runs + 1 {
		tm, err := st.AfterFunc(time.Hour, noop)
		if err != nil {
			t.Fatal(err)
		}
		timers = append(timers, tm)
	}
	i := 0
	if a := testing.AllocsPerRun(runs, func() {
		timers[i].Stop()
		i++
	}); a != 0 {
		t.Errorf("Timer.Stop allocates %v times per call, want 0", a)
	}
	if a := testing.AllocsPerRun(runs, func() {
		if _, err := st.AfterFunc(time.Hour, noop); err != nil {
			t.Fatal(err)
		}
	}); a > 1 {
		t.Errorf("AfterFunc allocates %v times per call, want at most 1", a)
	}
	if a := testing.AllocsPerRun(runs, func() {
		tm, _ := st.AfterFunc(30*time.Second, noop)
		tm.Stop()
	}); a > 1 {
		t.Errorf("AfterFunc+Stop allocates %v times per pair, want at most 1", a)
	}
}

// BenchmarkWithTimeoutCancel times a request-timeout context made and
// canceled under a cancelable parent (as a server's request context is),
// with n other such contexts pending: SystemTimer.WithTimeout against
// context.WithTimeout, in the same run.
func BenchmarkWithTimeoutCancel(b *testing.B) {
	for _, n := range []int{0, 10_000} {
		parent, cancelParent := context.WithCancel(context.Background())
		defer cancelParent()
		b.Run(fmt.Sprintf("impl=wheel/pending=%d", n), func(b *testing.B) {
			st, _ := wheelPending(b, 0) // stopped after the contexts are canceled
			withTimeoutSetup(b, n, parent, st.WithTimeout)
			for b.Loop() {
				ctx, cancel := st.WithTimeout(parent, 30*time.Second)
				_ = ctx.Done() // makes the Done channel, as a handler's select does
				cancel()
			}
		})
		b.Run(fmt.Sprintf("impl=runtime/pending=%d", n), func(b *testing.B) {
			withTimeoutSetup(b, n, parent, context.WithTimeout)
			for b.Loop() {
				ctx, cancel := context.WithTimeout(parent, 30*time.Second)
				_ = ctx.Done()
				cancel()
			}
		})
	}
}

// withTimeoutSetup is what each impl of BenchmarkWithTimeoutCancel sets up
// with its own withTimeout: n contexts pending a minute out under parent,
// canceled when the run ends, and its allocations reported.
func withTimeoutSetup(b *testing.B, n int, parent context.Context, withTimeout func(context.Context, time.Duration) (context.Context, context.CancelFunc)) {
	cancels := make([]context.CancelFunc, n)
	for i := range cancels {
		_, cancels[i] = withTimeout(parent, time.Minute)
	}
	b.Cleanup(func() {
		for _, cancel := range cancels {
			cancel()
		}
	})
	b.ReportAllocs()
}
