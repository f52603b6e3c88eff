package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/trace"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// What the soak watches besides its promises, to tell where lateness comes
// from: the wheel's own figures (Stats) every soakWatchEvery, and, with
// -soak-trace, an execution trace of the seconds before a late interval.

var (
	soakTraceDir  = flag.String("soak-trace", "", "soak: keep a flight recorder of the execution trace and write its last seconds to this directory when callbacks run late (see -soak-trace-late)")
	soakTraceLate = flag.Duration("soak-trace-late", 50*time.Millisecond, "soak: with -soak-trace, a callback this late makes a trace; each later trace needs one twice as late as the last (at most -soak-traces of them)")
	soakTraces    = flag.Int("soak-traces", 3, "soak: with -soak-trace, the most traces written")
)

// soakWatchEvery is how often the watcher reads the wheel's Stats.
const soakWatchEvery = 10 * time.Millisecond

// A soakWatch samples the wheel's own figures between the soak's samples:
// the most callbacks waiting for a worker, the most helper goroutines, the
// driver's largest lag, each since the soak's sampler last took them.
type soakWatch struct {
	backlog, helpers, lag atomic.Int64 // the max since last taken

	traces []string // written, by the watcher
}

// run samples st until stop is set; c feeds the trace trigger.
func (w *soakWatch) run(st *timingwheel.SystemTimer, c *soakChecker, stop *atomic.Bool, progress io.Writer) {
	var fr *trace.FlightRecorder
	if *soakTraceDir != "" {
		fr = trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 10 * time.Second, MaxBytes: 512 << 20})
		if err := fr.Start(); err != nil {
			fmt.Fprintf(progress, "soak: no flight recorder: %v\n", err)
			fr = nil
		} else {
			defer fr.Stop()
		}
	}
	trigger := int64(*soakTraceLate)
	t := time.NewTicker(soakWatchEvery)
	defer t.Stop()
	for !stop.Load() {
		<-t.C
		s := st.Stats()
		soakMax(&w.backlog, int64(s.Backlog))
		soakMax(&w.helpers, int64(s.Helpers))
		soakMax(&w.lag, int64(s.Lag))
		late := c.watchLate.Swap(0)
		if fr != nil && late > trigger && len(w.traces) < *soakTraces {
			// The trace covers the seconds before this: wait a
			// moment so that it holds the spike's end too, and raise
			// the trigger, so that the traces catch the worst spikes.
			time.Sleep(time.Second)
			trigger = 2 * late
			name := filepath.Join(*soakTraceDir, fmt.Sprintf("soak-%s.trace", time.Now().UTC().Format("150405")))
			if err := writeTrace(fr, name); err != nil {
				fmt.Fprintf(progress, "soak: trace: %v\n", err)
				continue
			}
			w.traces = append(w.traces, name)
			fmt.Fprintf(progress, "soak: a callback %s late: wrote the last seconds' execution trace to %s\n", formatNanos(float64(late)), name)
		}
	}
}

func writeTrace(fr *trace.FlightRecorder, name string) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return createFile(name, fr)
}

// take returns the maxima since the last take and starts afresh.
func (w *soakWatch) take() (backlog, helpers int, lag time.Duration) {
	return int(w.backlog.Swap(0)), int(w.helpers.Swap(0)), time.Duration(w.lag.Swap(0))
}
