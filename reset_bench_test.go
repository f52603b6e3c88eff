package timingwheel_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// Timers pushed back over and over, seldom firing: idle timeouts moved on
// every read, sessions extended on every request, heartbeats. The
// workloads "rearm" and "reuse" of the benchmark spec (bench/README.md),
// each against time.Timer in the same run.

// resetSizes are the pending sizes of BenchmarkReset. The largest takes a
// few seconds and over a gigabyte to set up per implementation.
var resetSizes = []int{1_000, 1_000_000, 10_000_000}

// BenchmarkReset times pushing a pending timer back: n timers pending ~30s
// out, one Reset(30s) per op, round robin over all of them.
func BenchmarkReset(b *testing.B) {
	for _, n := range shortSizes(resetSizes) {
		b.Run(fmt.Sprintf("impl=wheel/pending=%d", n), func(b *testing.B) {
			_, timers := wheelPending(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			rr := roundRobin{n: n}
			for b.Loop() {
				timers[rr.next()].Reset(30 * time.Second)
			}
		})
		b.Run(fmt.Sprintf("impl=runtime/pending=%d", n), func(b *testing.B) {
			benchRuntimeReset(b, runtimePending(b, n))
		})
	}
}

// BenchmarkResetParallel is BenchmarkReset from GOMAXPROCS goroutines, each
// on timers of its own.
func BenchmarkResetParallel(b *testing.B) {
	for _, n := range resetSizes[:2] {
		b.Run(fmt.Sprintf("impl=wheel/pending=%d", n), func(b *testing.B) {
			_, timers := wheelPending(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			parallelRoundRobin(b, n, func(i int) { timers[i].Reset(30 * time.Second) })
		})
		b.Run(fmt.Sprintf("impl=runtime/pending=%d", n), func(b *testing.B) {
			timers := runtimePending(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			parallelRoundRobin(b, n, func(i int) { timers[i].Reset(30 * time.Second) })
		})
	}
}

// session is a caller's struct with its timer in it.
type session struct {
	timeout timingwheel.Timer
}

// BenchmarkReuse times a per-request timer that lives in the caller's
// struct: Reset(30s) when a request starts, Stop when it ends, with 1M
// other timers pending.
func BenchmarkReuse(b *testing.B) {
	const n = 1_000_000
	b.Run("impl=wheel", func(b *testing.B) {
		st, _ := wheelPending(b, n)
		s := &session{}
		st.Bind(&s.timeout, noop)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			s.timeout.Reset(30 * time.Second)
			s.timeout.Stop()
		}
	})
	b.Run("impl=runtime", func(b *testing.B) {
		runtimePending(b, n)
		t := time.AfterFunc(time.Hour, noop)
		t.Stop()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			t.Reset(30 * time.Second)
			t.Stop()
		}
	})
}

// wheelPending is a SystemTimer with n timers pending ~30s out, stopped
// when the benchmark's run ends.
func wheelPending(b *testing.B, n int) (*timingwheel.SystemTimer, []*timingwheel.Timer) {
	st, err := timingwheel.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Stop() })
	timers := make([]*timingwheel.Timer, n)
	for i := range timers {
		if timers[i], err = st.AfterFunc(30*time.Second, noop); err != nil {
			b.Fatal(err)
		}
	}
	st.Len() // places what is still on the incoming stacks
	runtime.GC()
	return st, timers
}

// runtimePending is n time.AfterFunc timers pending ~30s out, stopped when
// the benchmark's run ends.
func runtimePending(b *testing.B, n int) []*time.Timer {
	timers := make([]*time.Timer, n)
	for i := range timers {
		timers[i] = time.AfterFunc(30*time.Second, noop)
	}
	b.Cleanup(func() { stopAll(timers) })
	runtime.GC()
	return timers
}

func stopAll(timers []*time.Timer) {
	for _, t := range timers {
		t.Stop()
	}
}

// roundRobin goes round the indexes [0, n) of a benchmark's timers, one
// per op. Its next inlines: the timed loop does what it did with the index
// kept by hand.
type roundRobin struct{ i, n int }

func (r *roundRobin) next() int {
	i := r.i
	if r.i++; r.i == r.n {
		r.i = 0
	}
	return i
}

// benchRuntimeReset times Reset(30s) of the given time.Timers, one per op,
// round robin (the runtime side of BenchmarkReset and
// BenchmarkChanTimerReset: AfterFunc or channel timers, the same method).
func benchRuntimeReset(b *testing.B, timers []*time.Timer) {
	b.ReportAllocs()
	b.ResetTimer()
	rr := roundRobin{n: len(timers)}
	for b.Loop() {
		timers[rr.next()].Reset(30 * time.Second)
	}
}

// parallelRoundRobin calls f from b.RunParallel's goroutines, each going
// round its own contiguous share of [0, n).
func parallelRoundRobin(b *testing.B, n int, f func(i int)) {
	var next atomic.Int64
	shares := int64(runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		g := (next.Add(1) - 1) % shares
		lo, hi := int(g)*n/int(shares), int(g+1)*n/int(shares)
		i := lo
		for pb.Next() {
			f(i)
			if i++; i == hi {
				i = lo
			}
		}
	})
}

// TestResetAllocs pins the paths of a timer pushed back and reused: none
// allocates, whether the timer was made by AfterFunc or bound in the
// caller's struct.
func TestResetAllocs(t *testing.T) {
	st, err := timingwheel.New()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	tm, err := st.AfterFunc(time.Hour, noop)
	if err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(1000, func() { tm.Reset(time.Hour) }); a != 0 {
		t.Errorf("Reset of a pending timer allocates %v times per call, want 0", a)
	}
	s := &session{}
	if a := testing.AllocsPerRun(1000, func() {
		st.Bind(&s.timeout, noop)
		s.timeout.Reset(time.Hour)
		s.timeout.Stop()
		s.timeout = timingwheel.Timer{}
	}); a != 0 {
		t.Errorf("Bind+Reset+Stop allocates %v times, want 0", a)
	}
	st.Bind(&s.timeout, noop)
	if a := testing.AllocsPerRun(1000, func() {
		s.timeout.Reset(30 * time.Second)
		s.timeout.Stop()
	}); a != 0 {
		t.Errorf("Reset+Stop of a bound timer allocates %v times per pair, want 0", a)
	}
	if a := testing.AllocsPerRun(1000, func() {
		s.timeout.Reset(0) // runs it at once, on the pool
	}); a != 0 {
		t.Errorf("Reset(0) allocates %v times per call, want 0", a)
	}
}
