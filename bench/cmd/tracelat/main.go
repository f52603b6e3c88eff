// Command tracelat reads a Go execution trace (go tool trace's input, such
// as the soak's -soak-trace files) and prints, for each kind of goroutine,
// how long its goroutines waited to run once runnable (the scheduling
// latency), how long they ran, and how long they spent assisting the GC:
// what tells a timer's lateness that comes from its own goroutines waiting
// for a processor from lateness that comes from its own work.
//
//	go -C bench run ./cmd/tracelat /tmp/soak/traces/soak-174345.trace
//
// A goroutine's kind is read from the stacks the trace records for it: the
// first of the patterns below that a stack of it contains.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// kinds names the goroutines by a function on their stacks, first match
// wins.
var kinds = []struct{ name, fn string }{
	{"wheel driver", "timingwheel.(*shard).drive"},
	{"wheel worker", "internal/executor.(*Pool[...]).loop"},
	{"wheel watch", "internal/executor.(*Pool[...]).see"},
	{"soak probe", "main.(*soakProbe).run"},
	{"soak churner", "main.(*soakChurner)"},
	{"soak sampler", "main.(*soakWatch).run"},
	{"GC worker", "runtime.gcBgMarkWorker"},
}

type stats struct {
	goroutines map[trace.GoID]bool
	waits      []time.Duration // runnable → running
	running    time.Duration
	assist     time.Duration
	longest    []stretch                // the longest times running without a stop, longest first
	blocked    map[string]time.Duration // by the reason it stopped running
	runnable   time.Duration
}

// A stretch is a time a goroutine ran without stopping, and how it
// stopped.
type stretch struct {
	d     time.Duration
	end   trace.Time
	stack string // where it stopped: its innermost frames
}

// topStretches is how many of a kind's longest stretches -top prints.
var topStretches = flag.Int("top", 0, "print each kind's longest runs without a stop, this many, with where they stopped")

func (s *stats) addStretch(st stretch) {
	if *topStretches == 0 {
		return
	}
	i, _ := slices.BinarySearchFunc(s.longest, st, func(a, b stretch) int { return -cmpDur(a.d, b.d) })
	s.longest = slices.Insert(s.longest, i, st)
	if len(s.longest) > *topStretches {
		s.longest = s.longest[:*topStretches]
	}
}

func cmpDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// frames formats the innermost frames of a stack.
func frames(st trace.Stack, n int) string {
	var b strings.Builder
	for f := range st.Frames() {
		if n == 0 {
			break
		}
		n--
		if b.Len() > 0 {
			b.WriteString(" < ")
		}
		fn := f.Func
		if i := strings.LastIndex(fn, "/"); i >= 0 {
			fn = fn[i+1:]
		}
		b.WriteString(fn)
	}
	return b.String()
}

func main() {
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: tracelat TRACE\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	if err := run(f, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tracelat:", err)
		os.Exit(1)
	}
}

func run(r io.Reader, w io.Writer) error {
	tr, err := trace.NewReader(r)
	if err != nil {
		return err
	}
	kind := map[trace.GoID]string{}
	since := map[trace.GoID]trace.Time{} // runnable since, or running since
	blockedBy := map[trace.GoID]string{} // why it stopped running, while waiting
	blockedAt := map[trace.GoID]trace.Time{}
	assistFrom := map[trace.GoID]trace.Time{}
	byKind := map[string]*stats{}
	get := func(g trace.GoID) *stats {
		k := kind[g]
		if k == "" {
			k = "other"
		}
		s := byKind[k]
		if s == nil {
			s = &stats{goroutines: map[trace.GoID]bool{}}
			byKind[k] = s
		}
		s.goroutines[g] = true
		return s
	}
	classify := func(g trace.GoID, st trace.Stack) {
		if kind[g] != "" || st == trace.NoStack {
			return
		}
		for f := range st.Frames() {
			for _, k := range kinds {
				if strings.Contains(f.Func, k.fn) {
					kind[g] = k.name
					return
				}
			}
		}
	}
	var first, last trace.Time
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if first == 0 {
			first = ev.Time()
		}
		last = ev.Time()
		classify(ev.Goroutine(), ev.Stack())
		switch ev.Kind() {
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			g := st.Resource.Goroutine()
			classify(g, st.Stack)
			from, to := st.Goroutine()
			if from == trace.GoWaiting {
				if t, ok := blockedAt[g]; ok {
					s := get(g)
					if s.blocked == nil {
						s.blocked = map[string]time.Duration{}
					}
					s.blocked[blockedBy[g]] += ev.Time().Sub(t)
					delete(blockedAt, g)
				}
			}
			if to == trace.GoWaiting {
				blockedBy[g], blockedAt[g] = st.Reason, ev.Time()
			}
			switch {
			case to == trace.GoRunnable:
				since[g] = ev.Time()
			case to == trace.GoRunning:
				if from == trace.GoRunnable {
					if t, ok := since[g]; ok {
						s := get(g)
						s.waits = append(s.waits, ev.Time().Sub(t))
						s.runnable += ev.Time().Sub(t)
					}
				}
				since[g] = ev.Time()
			case from == trace.GoRunning:
				if t, ok := since[g]; ok {
					s := get(g)
					s.running += ev.Time().Sub(t)
					s.addStretch(stretch{ev.Time().Sub(t), ev.Time(), st.Reason + ": " + frames(st.Stack, 4)})
				}
				delete(since, g)
			}
		case trace.EventRangeBegin, trace.EventRangeEnd:
			rg := ev.Range()
			if rg.Name != "GC mark assist" || rg.Scope.Kind != trace.ResourceGoroutine {
				continue
			}
			g := rg.Scope.Goroutine()
			if ev.Kind() == trace.EventRangeBegin {
				assistFrom[g] = ev.Time()
			} else if t, ok := assistFrom[g]; ok {
				get(g).assist += ev.Time().Sub(t)
				delete(assistFrom, g)
			}
		}
	}
	span := last.Sub(first)
	fmt.Fprintf(w, "trace of %v; scheduling latency is runnable → running, per kind of goroutine\n\n", span.Round(time.Millisecond))
	fmt.Fprintf(w, "  %-14s %10s %9s %9s %9s %9s %9s %10s %10s\n", "kind", "goroutines", "waits", "p50", "p99", "p99.9", "max", "running", "GC assist")
	names := make([]string, 0, len(byKind))
	for k := range byKind {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		s := byKind[k]
		slices.Sort(s.waits)
		q := func(p float64) string {
			if len(s.waits) == 0 {
				return "-"
			}
			return s.waits[min(len(s.waits)-1, int(p*float64(len(s.waits))))].Round(time.Microsecond).String()
		}
		fmt.Fprintf(w, "  %-14s %10d %9d %9s %9s %9s %9s %10v %10v\n", k, len(s.goroutines), len(s.waits),
			q(0.5), q(0.99), q(0.999), q(1), s.running.Round(time.Millisecond), s.assist.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "\ntime not running, by why (runnable: waiting for a processor)\n")
	for _, k := range names {
		s := byKind[k]
		parts := []string{"runnable " + s.runnable.Round(time.Millisecond).String()}
		reasons := make([]string, 0, len(s.blocked))
		for r := range s.blocked {
			reasons = append(reasons, r)
		}
		slices.SortFunc(reasons, func(a, b string) int { return -cmpDur(s.blocked[a], s.blocked[b]) })
		for _, r := range reasons {
			parts = append(parts, fmt.Sprintf("%s %v", r, s.blocked[r].Round(time.Millisecond)))
		}
		fmt.Fprintf(w, "  %-14s %s\n", k, strings.Join(parts, ", "))
	}
	if *topStretches > 0 {
		fmt.Fprintf(w, "\nlongest runs without a stop (ending at, from the trace's start)\n")
		for _, k := range names {
			for _, st := range byKind[k].longest {
				fmt.Fprintf(w, "  %-14s %9v at %8v  %s\n", k, st.d.Round(time.Microsecond), st.end.Sub(first).Round(time.Millisecond), st.stack)
			}
		}
	}
	return nil
}
