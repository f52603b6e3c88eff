package timingwheel

import (
	"testing"
	"time"
)

// BenchmarkFire times the fire path per timer: the driver expiring a
// level-0 bucket of 4096 timers, marking them fired and handing them to the
// executor, and the executor running them (on the benchmark's goroutine:
// the manual harness). Arming them is not timed.
func BenchmarkFire(b *testing.B) {
	fc := newFakeClock()
	st := newManual(b, fc)
	defer st.Stop()
	ran := 0
	f := func() { ran++ }
	const batch = 4096
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		b.StopTimer()
		for range batch {
			if _, err := st.AfterFunc(time.Millisecond, f); err != nil {
				b.Fatal(err)
			}
		}
		fc.Add(time.Millisecond)
		b.StartTimer()
		st.step()
	}
	b.StopTimer()
	if ran < b.N {
		b.Fatalf("%d callbacks ran, want at least %d", ran, b.N)
	}
}
