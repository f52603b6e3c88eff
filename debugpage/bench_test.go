package debugpage

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// benchTimer returns a SystemTimer holding n timers an hour or more out,
// on two levels, that the benchmark stops when it ends.
func benchTimer(b *testing.B, n int) *timingwheel.SystemTimer {
	b.Helper()
	st, err := timingwheel.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Stop() })
	for i := range n {
		if _, err := st.AfterFunc(time.Hour+time.Duration(i)*time.Millisecond, func() {}); err != nil {
			b.Fatal(err)
		}
	}
	return st
}

// BenchmarkChurn arms and stops timers on all processors, on a
// SystemTimer holding 100k more, with no sampler (nobody looking) and with
// the page's sampler at the default interval and at 100 times its rate:
// what an open page costs the hot path. Compare the three with benchstat.
func BenchmarkChurn(b *testing.B) {
	for _, iv := range []time.Duration{0, time.Second, 10 * time.Millisecond} {
		name := "sampler=off"
		if iv > 0 {
			name = fmt.Sprintf("sampler=%v", iv)
		}
		b.Run(name, func(b *testing.B) {
			st := benchTimer(b, 100_000)
			if iv > 0 {
				h, err := New(WithInterval(iv))
				if err != nil {
					b.Fatal(err)
				}
				h.AddTimer("timers", st)
				get(h, "/debug/timingwheel/json") // starts the sampler
				b.Cleanup(h.Close)
			}
			f := func() {}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					t, err := st.AfterFunc(time.Minute, f)
					if err != nil {
						b.Fatal(err)
					}
					t.Stop()
				}
			})
		})
	}
}

// BenchmarkSample is one sample of a SystemTimer holding n timers: the
// sampler's CPU per interval.
func BenchmarkSample(b *testing.B) {
	for _, n := range []int{0, 1_000_000} {
		b.Run(fmt.Sprint("pending=", n), func(b *testing.B) {
			h, err := New()
			if err != nil {
				b.Fatal(err)
			}
			h.AddTimer("timers", benchTimer(b, n))
			h.seen = time.Now().Add(time.Hour) // so that no sample finds it idle
			gc := newGCCounter()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				h.takeSample(gc)
			}
		})
	}
}

// BenchmarkPage is one request of the page, or of its JSON, of a
// SystemTimer holding n timers, with a full history: what each refresh of
// an open page costs.
func BenchmarkPage(b *testing.B) {
	for _, c := range []struct {
		n      int
		target string
	}{{0, "/debug/timingwheel/"}, {1_000_000, "/debug/timingwheel/"}, {1_000_000, "/debug/timingwheel/json"}} {
		name := fmt.Sprintf("pending=%d/page=html", c.n)
		if c.target != "/debug/timingwheel/" {
			name = fmt.Sprintf("pending=%d/page=json", c.n)
		}
		n := c.n
		b.Run(name, func(b *testing.B) {
			h, err := New()
			if err != nil {
				b.Fatal(err)
			}
			h.AddTimer("timers", benchTimer(b, n))
			h.seen = time.Now().Add(time.Hour)
			gc := newGCCounter()
			for range samples + 1 {
				h.takeSample(gc)
			}
			h.running = true // as if it ran: the requests start nothing
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if w := get(h, c.target); w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
