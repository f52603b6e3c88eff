package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// The soak mode: not a workload but a long run of this library alone,
// which holds many timers pending while it churns AfterFunc, Stop and Reset
// calls, and checks the library's promises as it goes: every callback runs
// exactly once unless Stop returned true, never before its deadline, and
// not much after it; the heap and the goroutines stay flat; SystemTimer.Stop
// hands back exactly the timers that are pending, and no callback runs
// after it. See soak_check.go for the checker, soak_churn.go for the churn.
//
//	go -C bench run ./cmd/wheelbench -soak 60s

var (
	soakFor            = flag.Duration("soak", 0, "run the soak mode for this long instead of the workloads: this library alone, its guarantees checked as it runs (see bench/README.md)")
	soakPending        = soakCountFlag("soak-pending", 10_000_000, "soak: timers held pending, minutes to hours out")
	soakRate           = soakCountFlag("soak-rate", 1_000_000, "soak: churn calls (AfterFunc, Stop, Reset) a second, over all churners")
	soakPendingMin     = flag.Duration("soak-pending-min", 30*time.Second, "soak: shortest delay of the pending timers, drawn log-uniformly up to -soak-pending-max")
	soakPendingMax     = flag.Duration("soak-pending-max", 3*time.Hour, "soak: longest delay of the pending timers")
	soakLate           = flag.Duration("soak-late", 100*time.Millisecond, "soak: a callback that starts more than a tick plus this after its deadline, or a timer not run by then, is a violation")
	soakEvery          = flag.Duration("soak-every", 5*time.Second, "soak: interval of the samples: the live heap, the goroutines, a sweep for overdue timers, a progress line")
	soakGC             = flag.Bool("soak-gc", false, "soak: force a GC, with the churn paused, before every sample, not only before the baseline and the last (costly: seconds of marking with 10M timers)")
	soakWarmup         = flag.Duration("soak-warmup", 10*time.Second, "soak: the heap and goroutine baseline is the first sample this long into the churn")
	soakHeapTolerance  = flag.Float64("soak-heap-tolerance", 0.10, "soak: fail if the live heap at the end differs from the baseline by more than this fraction of it (plus 8 MiB)")
	soakGoroutineSlack = flag.Int("soak-goroutine-slack", 8, "soak: fail if the goroutines at the end (the fewest of the last three samples) differ from the baseline by more than this")
	soakChurners       = flag.Int("soak-churners", 2, "soak: goroutines making the churn calls")
	soakWorkers        = flag.Int("soak-workers", 0, "soak: timingwheel.WithWorkers for the SystemTimer (0: the default)")
)

// soakTick is the SystemTimer's tick: New's default, made explicit because
// the lateness bound adds it.
const soakTick = time.Millisecond

// soakHeapFloor is added to the heap tolerance, so that the noise of a small
// heap does not fail a short run.
const soakHeapFloor = 8 << 20

// soakQuiet is how long the soak watches, once SystemTimer.Stop returned,
// for callbacks that start, before it counts the goroutines left.
const soakQuiet = 100 * time.Millisecond

// soakChurnSeconds sizes the churn slots: the calls of this many seconds,
// so that a churn slot is reused seconds after its timer ran or stopped.
// About a tenth of them hold a timer at any time. A slot keeps its last
// timer reachable until it is reused, so the heap grows until the churn has
// gone round them once, in about twice this time: well within the warm-up.
const soakChurnSeconds = 2

// A soakConfig is what the soak flags say.
type soakConfig struct {
	duration     time.Duration
	pending      int
	rate         int
	pendingMin   time.Duration
	pendingMax   time.Duration
	late         time.Duration
	every        time.Duration
	warmup       time.Duration
	heapTol      float64
	slack        int
	churners     int
	gcEach       bool          // runtime.GC before every sample
	timeout      time.Duration // the watchdog: dump goroutines and exit
	cpuProfiling bool          // for the header only
}

func soakConfigFromFlags() (soakConfig, error) {
	cfg := soakConfig{
		duration:   *soakFor,
		pending:    int(*soakPending),
		rate:       int(*soakRate),
		pendingMin: *soakPendingMin,
		pendingMax: *soakPendingMax,
		late:       *soakLate,
		every:      *soakEvery,
		warmup:     *soakWarmup,
		heapTol:    *soakHeapTolerance,
		slack:      *soakGoroutineSlack,
		churners:   *soakChurners,
		gcEach:     *soakGC,
	}
	cfg.timeout = cfg.duration + 10*time.Minute
	cfg.cpuProfiling = *cpuProfile != ""
	return cfg, cfg.validate()
}

func (cfg *soakConfig) validate() error {
	switch {
	case cfg.duration <= 0:
		return errors.New("-soak must be positive")
	case cfg.churners < 1:
		return errors.New("-soak-churners must be at least 1")
	case cfg.pending < cfg.churners:
		return errors.New("-soak-pending must be at least -soak-churners")
	case cfg.pendingMin <= 0 || cfg.pendingMax < cfg.pendingMin:
		return errors.New("-soak-pending-min must be positive and at most -soak-pending-max")
	case cfg.late < 0 || cfg.every <= 0 || cfg.warmup < 0 || cfg.heapTol < 0 || cfg.slack < 0:
		return errors.New("-soak-late, -soak-every, -soak-warmup, -soak-heap-tolerance and -soak-goroutine-slack must not be negative (-soak-every positive)")
	case uint64(cfg.pending)+uint64(cfg.churnSlots()) >= math.MaxUint32:
		return errors.New("-soak-pending or -soak-rate too large: slot ids are uint32")
	}
	return nil
}

// churnSlots is how many slots the churn cycles through.
func (cfg *soakConfig) churnSlots() int {
	return max(cfg.rate*soakChurnSeconds, 4096*cfg.churners)
}

// soakMain runs the soak as the flags say, prints its summary on stdout and
// returns the exit status: 0 if every check passed, 1 if not.
func soakMain() int {
	cfg, err := soakConfigFromFlags()
	if err != nil {
		fail("%v", err)
	}
	var progress io.Writer = os.Stderr
	if *quietFlag {
		progress = io.Discard
	}
	res := runSoak(cfg, progress)
	out := bufio.NewWriter(os.Stdout)
	res.write(out)
	out.Flush()
	if !res.ok() {
		return 1
	}
	return 0
}

// A soakSample is what the soak reads every -soak-every.
type soakSample struct {
	at         time.Duration // since the churn started
	calls      int64         // AfterFunc, Stop and Reset calls so far
	runs       int64         // callbacks run so far
	heap       uint64        // live heap, as the last GC found it
	total      uint64        // memory mapped by the runtime
	gcs        uint64        // GC cycles so far
	goroutines int
	pending    int   // timers pending by the checker
	wheelLen   int   // SystemTimer.Len
	maxLate    int64 // ns, over the interval before the sample
	probeLate  int64 // the probe's, likewise
	violations int64
	gc         time.Duration // how long the sample's runtime.GC took, if it made one

	// Over the interval before the sample: the wheel's own figures (see
	// soakWatch), its own lateness, and the runtime's.
	backlog, helpers int
	lag              time.Duration
	ownP99, ownMax   time.Duration
	rt               soakRuntime // since the sample before
}

// A soakResult is the outcome of a soak.
type soakResult struct {
	// The wheel's own figures: its lateness histogram at the end, and the
	// maxima of the samples.
	own                    timingwheel.Histogram
	maxBacklog, maxHelpers int
	maxLag                 time.Duration
	traces                 []string

	cfg     soakConfig
	date    time.Time
	setup   time.Duration
	elapsed time.Duration // of the churn
	paused  time.Duration // of it, with the churn paused for a GC
	cpu     time.Duration // process CPU time over the churn
	samples []soakSample

	rt soakRuntime // runtime metrics over the churn

	afterFuncs, stops, stopsTrue, resets, resetsTrue, full int64
	churnCalls                                             int64 // calls during the churn, not the setup
	runs                                                   int64
	late                                                   []int64 // histogram; see lateBucket
	maxLate                                                int64
	probe                                                  []int64 // the probe's histogram
	probeMax                                               int64

	base            int // index in samples of the baseline, or -1
	heapOK, gorOK   bool
	stopTook        time.Duration
	returned        int // timers SystemTimer.Stop returned
	believed        int // timers pending by the checker
	matched         int
	gorBefore       int // goroutines before New
	gorAfter        int // goroutines after Stop
	runsAfterStop   int64
	violations      [numSoakViolations]int64
	examples        [numSoakViolations][]string
	failures        []string // flatness and leaks: not per timer
	totalViolations int64
	lenBeforeStop   int // SystemTimer.Len just before Stop
}

func (r *soakResult) ok() bool { return r.totalViolations == 0 && len(r.failures) == 0 }

// runSoak runs the soak of cfg, with a progress line every cfg.every on
// progress, and returns its result.
func runSoak(cfg soakConfig, progress io.Writer) *soakResult {
	res := &soakResult{cfg: cfg, date: time.Now(), base: -1}
	watchdog := time.AfterFunc(cfg.timeout, func() {
		fmt.Fprintf(os.Stderr, "wheelbench: soak still running after %v; goroutines:\n\n", cfg.timeout)
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		os.Exit(3)
	})
	defer watchdog.Stop()

	nChurn := cfg.churnSlots()
	c := newSoakChecker(cfg.pending+nChurn, soakTick, cfg.late)
	soakCurrent = c // before any timer can fire
	cleanHeap()
	res.gorBefore = runtime.NumGoroutine()
	opts := []timingwheel.Option{timingwheel.WithTick(soakTick)}
	if *soakWorkers > 0 {
		opts = append(opts, timingwheel.WithWorkers(*soakWorkers))
	}
	st, err := timingwheel.New(append(opts, timingwheel.WithPanicHandler(func(v any) {
		c.note(vAPI, "a callback panicked: %v", v)
	}))...)
	if err != nil {
		res.failures = append(res.failures, "timingwheel.New: "+err.Error())
		return res
	}
	pending := newSoakRange(cfg.pendingMin, cfg.pendingMax)
	churners := make([]*soakChurner, cfg.churners)
	for k := range churners {
		g := uint32(cfg.churners)
		pLo, pHi := uint32(k)*uint32(cfg.pending)/g, uint32(k+1)*uint32(cfg.pending)/g
		cLo := uint32(cfg.pending) + uint32(k)*uint32(nChurn)/g
		cHi := uint32(cfg.pending) + uint32(k+1)*uint32(nChurn)/g
		churners[k] = newSoakChurner(c, st, uint64(k), [2]uint32{pLo, pHi}, [2]uint32{cLo, cHi}, pending)
	}

	fmt.Fprintf(progress, "soak: arming %s pending timers, %v..%v out, with %d goroutines\n",
		formatCount(cfg.pending), cfg.pendingMin, cfg.pendingMax, cfg.churners)
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, ch := range churners {
		wg.Go(ch.setup)
	}
	wg.Wait()
	res.setup = time.Since(t0)
	setupCalls := res.sumCounts(churners)

	var stop atomic.Bool
	var pause atomic.Pointer[soakPause]
	perSec := float64(cfg.rate) / float64(cfg.churners)
	start := time.Now()
	cpu0 := processCPU()
	rt0 := readSoakRuntime()
	var churn sync.WaitGroup
	for _, ch := range churners {
		churn.Go(func() { ch.run(&stop, &pause, perSec) })
	}
	var probe soakProbe
	churn.Go(func() { probe.run(&stop) })
	var watch soakWatch
	churn.Go(func() { watch.run(st, c, &stop, progress) })
	prevOwn := st.Stats().Lateness
	prevRT := rt0
	c.intervalLate.Store(0)
	fmt.Fprintf(progress, "soak: armed in %.1fs; churning %s calls/s for %v\n", res.setup.Seconds(), formatCount(cfg.rate), cfg.duration)
	fmt.Fprintln(progress, soakSeriesHeader)
	var prev soakSample
	for k := 1; ; k++ {
		at := min(time.Duration(k)*cfg.every, cfg.duration)
		time.Sleep(time.Until(start.Add(at))) // the pace of the samples
		last := at == cfg.duration
		base := res.base < 0 && at >= cfg.warmup
		s := soakSample{goroutines: runtime.NumGoroutine()} // before the churners park or exit
		// Collect garbage for the baseline and the last sample, which
		// the heap check compares, with the churn paused or over; the
		// others show the heap as the last GC found it.
		var resume func()
		switch gc := cfg.gcEach || base || last; {
		case last:
			stop.Store(true)
			churn.Wait()
			res.elapsed = time.Since(start)
			res.cpu = processCPU() - cpu0
			res.rt = readSoakRuntime().since(rt0)
		case gc:
			p := &soakPause{resume: make(chan struct{})}
			p.parked.Add(len(churners))
			pause.Store(p)
			p.parked.Wait()
			paused := time.Now()
			resume = func() {
				pause.Store(nil)
				close(p.resume)
				res.paused += time.Since(paused)
			}
		}
		if cfg.gcEach || base || last {
			gcStart := time.Now()
			runtime.GC()
			s.gc = time.Since(gcStart)
		}
		s.at = time.Since(start)
		rt := readSoakRuntime()
		s.heap, s.total, s.gcs = rt.heap, rt.total, rt.gcs
		s.pending = c.sweep(c.now())
		s.wheelLen = st.Len()
		s.calls = res.sumCounts(churners) - setupCalls
		s.runs = c.runs()
		s.maxLate = c.intervalLate.Swap(0)
		s.probeLate = probe.interval.Swap(0)
		s.backlog, s.helpers, s.lag = watch.take()
		own := st.Stats().Lateness
		d := own
		for i := range d.Counts {
			d.Counts[i] -= prevOwn.Counts[i]
		}
		s.ownP99, s.ownMax, prevOwn = d.Quantile(0.99), d.Quantile(1), own
		s.rt, prevRT = rt.since(prevRT), rt
		s.violations = c.violations()
		if resume != nil {
			resume()
		}
		if base {
			res.base = len(res.samples)
		}
		res.samples = append(res.samples, s)
		fmt.Fprintln(progress, s.line(prev))
		prev = s
		if last {
			break
		}
	}
	res.churnCalls = res.sumCounts(churners) - setupCalls
	for _, ch := range churners {
		res.afterFuncs += ch.n.afterFuncs.Load()
		res.stops += ch.n.stops.Load()
		res.stopsTrue += ch.n.stopsTrue.Load()
		res.resets += ch.n.resets.Load()
		res.resetsTrue += ch.n.resetsTrue.Load()
		res.full += ch.n.full.Load()
	}

	// The end: SystemTimer.Stop must return exactly the timers pending,
	// and no callback may start after it.
	fmt.Fprintf(progress, "soak: churn stopped; SystemTimer.Stop\n")
	res.lenBeforeStop = st.Len()
	res.own = st.Stats().Lateness
	stopAt := c.now()
	left := st.Stop()
	c.closed.Store(true)
	res.stopTook = time.Duration(c.now() - stopAt)
	runsAtStop := c.runs()
	res.returned = len(left)
	res.believed, res.matched = c.reconcile(left, stopAt)
	left = nil
	if n := st.Len(); n != 0 {
		c.note(vAPI, "SystemTimer.Len is %d after Stop", n)
	}
	if _, err := st.AfterFunc(time.Second, noop); !errors.Is(err, timingwheel.ErrStopped) {
		c.note(vAPI, "AfterFunc after Stop returned %v, not ErrStopped", err)
	}
	// Watch for callbacks, and for the SystemTimer's goroutines to be gone.
	deadline := time.Now().Add(soakQuiet)
	for res.gorAfter = runtime.NumGoroutine(); time.Now().Before(deadline); res.gorAfter = runtime.NumGoroutine() {
		time.Sleep(time.Millisecond)
	}
	if res.runsAfterStop = c.runs() - runsAtStop; res.runsAfterStop != 0 {
		c.note(vAfterStop, "%d callbacks ran in the %v after SystemTimer.Stop returned", res.runsAfterStop, soakQuiet)
	}
	if res.gorAfter > res.gorBefore {
		res.failures = append(res.failures, fmt.Sprintf("goroutines: %d after SystemTimer.Stop, %d before New", res.gorAfter, res.gorBefore))
	}

	res.late = c.lateHistogram()
	for _, s := range res.samples {
		res.maxBacklog, res.maxHelpers, res.maxLag = max(res.maxBacklog, s.backlog), max(res.maxHelpers, s.helpers), max(res.maxLag, s.lag)
	}
	res.traces = watch.traces
	res.maxLate = c.maxLate.Load()
	res.probe = probe.histogram()
	res.probeMax = probe.max.Load()
	res.runs = runsAtStop
	c.mu.Lock()
	for k := range res.violations {
		res.violations[k] = c.counts[k].Load()
		res.totalViolations += res.violations[k]
		res.examples[k] = append([]string(nil), c.examples[k]...)
	}
	c.mu.Unlock()
	res.checkFlat()
	return res
}

// sumCounts returns the calls the churners have made so far.
func (r *soakResult) sumCounts(churners []*soakChurner) int64 {
	var n int64
	for _, ch := range churners {
		n += ch.n.calls()
	}
	return n
}

// checkFlat checks that the live heap at the end is within the tolerance of
// the baseline, and the goroutines within the slack of it. For goroutines
// the end is the fewest of the last three samples: the executor starts a
// helper goroutine whenever work waits behind busy workers, so a starved CPU
// makes bursts of them; a leak raises every later sample.
func (r *soakResult) checkFlat() {
	r.heapOK, r.gorOK = true, true
	if r.base < 0 {
		r.failures = append(r.failures, fmt.Sprintf("no sample after the warm-up (%v): heap and goroutines not checked", r.cfg.warmup))
		r.heapOK, r.gorOK = false, false
		return
	}
	b, end := r.samples[r.base], r.samples[len(r.samples)-1]
	if d := math.Abs(float64(end.heap) - float64(b.heap)); d > r.cfg.heapTol*float64(b.heap)+soakHeapFloor {
		r.heapOK = false
		r.failures = append(r.failures, fmt.Sprintf("live heap: %s at the end, %s at the baseline (%+.1f%%)",
			formatBytes(float64(end.heap)), formatBytes(float64(b.heap)), 100*(float64(end.heap)/float64(b.heap)-1)))
	}
	if g := r.endGoroutines(); g-b.goroutines > r.cfg.slack || b.goroutines-g > r.cfg.slack {
		r.gorOK = false
		r.failures = append(r.failures, fmt.Sprintf("goroutines: %d at the end (the fewest of the last samples), %d at the baseline", g, b.goroutines))
	}
}

// endGoroutines returns the fewest goroutines of the last three samples
// from the baseline on.
func (r *soakResult) endGoroutines() int {
	tail := r.samples[max(r.base, len(r.samples)-3):]
	g := tail[0].goroutines
	for _, s := range tail {
		g = min(g, s.goroutines)
	}
	return g
}

// explained returns how many violations were counted in intervals in which
// the probe, a runtime timer, was itself later than the bound.
func (r *soakResult) explained() int64 {
	var n int64
	var prev soakSample
	for _, s := range r.samples {
		if s.probeLate > int64(soakTick+r.cfg.late) {
			n += s.violations - prev.violations
		}
		prev = s
	}
	return n
}

const soakSeriesHeader = "   elapsed    calls/s   fired/s     pending  wheel Len   live heap   rt total  GCs  gorout.  max late  probe max  viol.  forced GC" +
	"  own p99  own max  backlog  helpers  drv lag  GC CPU  assist  sched p99"

// line writes a sample as a row of the series; prev is the one before.
func (s soakSample) line(prev soakSample) string {
	dt := (s.at - prev.at).Seconds()
	gc := ""
	if s.gc > 0 {
		gc = formatNanos(float64(s.gc))
	}
	return fmt.Sprintf("  %8s  %9s  %8s  %10s  %9s  %10s  %9s  %3d  %7d  %8s  %9s  %5d  %9s  %7s  %7s  %7s  %7d  %7s  %6s  %6s  %9s",
		fmt.Sprintf("%.1fs", s.at.Seconds()),
		soakSI(float64(s.calls-prev.calls)/dt), soakSI(float64(s.runs-prev.runs)/dt),
		groupDigits(int64(s.pending)), soakSI(float64(s.wheelLen)),
		formatBytes(float64(s.heap)), formatBytes(float64(s.total)), s.gcs, s.goroutines,
		formatNanos(float64(s.maxLate)), formatNanos(float64(s.probeLate)), s.violations, gc,
		formatNanos(float64(s.ownP99)), formatNanos(float64(s.ownMax)), soakSI(float64(s.backlog)), s.helpers,
		formatNanos(float64(s.lag)), fmt.Sprintf("%.0f%%", 100*s.rt.gcCPU/dt), fmt.Sprintf("%.0f%%", 100*s.rt.assistCPU/dt),
		formatNanos(s.rt.schedP99*1e9))
}

// soakSI writes a count or rate with a k or M suffix.
func soakSI(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// write prints the summary.
func (r *soakResult) write(w io.Writer) {
	cfg := r.cfg
	fmt.Fprintf(w, "wheelbench soak: github.com/go-timingwheel/timingwheel alone, its promises checked as it runs\n\n")
	fmt.Fprintf(w, "  date      %s\n", r.date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "  cpu       %s, %d CPUs, GOMAXPROCS=%d\n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "  go        %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	workers := "default"
	if *soakWorkers > 0 {
		workers = fmt.Sprint(*soakWorkers)
	}
	fmt.Fprintf(w, "  timer     timingwheel.New(WithTick(%v), WithPanicHandler(a violation)), workers %s, other options default; GOGC=%s GOMEMLIMIT=%s\n",
		soakTick, workers, cmpOr(os.Getenv("GOGC"), "default"), cmpOr(os.Getenv("GOMEMLIMIT"), "default"))
	fmt.Fprintf(w, "  pending   %s timers, delays log-uniform in [%v, %v], armed in %.1fs; refilled as they fire, %d%% of steps replace one\n",
		formatCount(cfg.pending), cfg.pendingMin, cfg.pendingMax, r.setup.Seconds(), soakMixReplace)
	fmt.Fprintf(w, "  churn     target %s calls/s (AfterFunc, Stop, Reset) for %v by %d goroutines, over %s slots;\n",
		formatCount(cfg.rate), cfg.duration, cfg.churners, formatCount(cfg.churnSlots()))
	fmt.Fprintf(w, "            steps: %d%% AfterFunc+Stop at once, %d%% Stop later, %d%% fire, %d%% Reset chains, %d%% replace a pending one\n",
		soakMixQuick, soakMixStopLater, soakMixFire, soakMixReset, soakMixReplace)
	fmt.Fprintf(w, "  bounds    late: tick %v + %v; heap: end within %.0f%% (+%s) of the first sample from %v; goroutines: within ±%d of it\n",
		soakTick, cfg.late, 100*cfg.heapTol, formatBytes(soakHeapFloor), cfg.warmup, cfg.slack)
	if cfg.cpuProfiling {
		fmt.Fprintf(w, "  note      CPU profiling (-cpuprofile) was on\n")
	}

	fmt.Fprintf(w, "\nseries: rates and max lateness over the interval before each sample; live heap as the last GC found it:\n")
	fmt.Fprintf(w, "a forced one, with the churn paused or over, where its time is shown; probe: a runtime timer's lateness\n%s\n", soakSeriesHeader)
	var prev soakSample
	for i, s := range r.samples {
		mark := ""
		if i == r.base {
			mark = "  ← baseline"
		}
		fmt.Fprintf(w, "%s%s\n", s.line(prev), mark)
		prev = s
	}

	fmt.Fprintln(w)
	secs := (r.elapsed - r.paused).Seconds()
	fmt.Fprintf(w, "  calls      %s in %.1fs of churn (%.1fs more paused for forced GCs): %s/s (target %s/s)\n",
		groupDigits(r.churnCalls), secs, r.paused.Seconds(), soakSI(float64(r.churnCalls)/secs), soakSI(float64(cfg.rate)))
	fmt.Fprintf(w, "             all calls, setup included: AfterFunc %s, Stop %s (true %s), Reset %s (true %s)\n",
		groupDigits(r.afterFuncs), groupDigits(r.stops), groupDigits(r.stopsTrue), groupDigits(r.resets), groupDigits(r.resetsTrue))
	if r.full > 0 {
		fmt.Fprintf(w, "             %s steps skipped: no free churn slot\n", groupDigits(r.full))
	}
	fmt.Fprintf(w, "  CPU        %.1fs user+system over the churn: %.2f cores of %d; by the runtime's estimate, GC %.1fs, idle %.1fs\n",
		r.cpu.Seconds(), r.cpu.Seconds()/r.elapsed.Seconds(), runtime.NumCPU(), r.rt.gcCPU, r.rt.idleCPU)
	fmt.Fprintf(w, "  runtime    %d GC cycles (assists %.1fs); GC pauses max ≤ %s; scheduling latency (runnable → running) p99 ≤ %s, max ≤ %s; %s goroutines started\n",
		r.rt.gcs, r.rt.assistCPU, formatNanos(r.rt.pauseMax*1e9), formatNanos(r.rt.schedP99*1e9), formatNanos(r.rt.schedMax*1e9), groupDigits(int64(r.rt.created)))
	fmt.Fprintf(w, "  wheel      its own lateness (Stats: callback start − due tick): %s; at most %s callbacks waiting, %d helpers, driver lag %s\n",
		r.own.String(), soakSI(float64(r.maxBacklog)), r.maxHelpers, formatNanos(float64(r.maxLag)))
	for _, name := range r.traces {
		fmt.Fprintf(w, "  trace      %s: go tool trace %s\n", name, name)
	}
	fmt.Fprintf(w, "  callbacks  %s run; lateness (callback start − deadline) p50 ≤ %s, p99 ≤ %s, p99.9 ≤ %s, p99.99 ≤ %s, max %s\n",
		groupDigits(r.runs), formatNanos(float64(latePercentile(r.late, 50))), formatNanos(float64(latePercentile(r.late, 99))),
		formatNanos(float64(latePercentile(r.late, 99.9))), formatNanos(float64(latePercentile(r.late, 99.99))), formatNanos(float64(r.maxLate)))
	fmt.Fprintf(w, "  probe      a runtime timer, 1ms at a time, under the same load: lateness p50 ≤ %s, p99 ≤ %s, p99.9 ≤ %s, max %s\n",
		formatNanos(float64(latePercentile(r.probe, 50))), formatNanos(float64(latePercentile(r.probe, 99))),
		formatNanos(float64(latePercentile(r.probe, 99.9))), formatNanos(float64(r.probeMax)))
	if r.base >= 0 {
		b, end := r.samples[r.base], r.samples[len(r.samples)-1]
		var hmin, hmax uint64 = math.MaxUint64, 0
		gmin, gmax := math.MaxInt, 0
		for _, s := range r.samples[r.base:] {
			hmin, hmax = min(hmin, s.heap), max(hmax, s.heap)
			gmin, gmax = min(gmin, s.goroutines), max(gmax, s.goroutines)
		}
		fmt.Fprintf(w, "  heap       %s at the baseline (%v), %s at the end (%+.1f%%), %s..%s in between: %s\n",
			formatBytes(float64(b.heap)), b.at.Round(time.Second), formatBytes(float64(end.heap)),
			100*(float64(end.heap)/float64(b.heap)-1), formatBytes(float64(hmin)), formatBytes(float64(hmax)), okString(r.heapOK))
		fmt.Fprintf(w, "  goroutines %d at the baseline, %d at the end (the fewest of the last samples), %d..%d from the baseline on: %s\n",
			b.goroutines, r.endGoroutines(), gmin, gmax, okString(r.gorOK))
	}
	fmt.Fprintf(w, "  Stop       took %s; returned %s timers; the checker held %s pending (Len said %s just before); %s matched\n",
		formatNanos(float64(r.stopTook)), groupDigits(int64(r.returned)), groupDigits(int64(r.believed)),
		groupDigits(int64(r.lenBeforeStop)), groupDigits(int64(r.matched)))
	fmt.Fprintf(w, "             after it: %d callbacks in %v; goroutines %d, %d before New\n", r.runsAfterStop, soakQuiet, r.gorAfter, r.gorBefore)

	fmt.Fprintln(w)
	if r.totalViolations == 0 {
		fmt.Fprintf(w, "violations: none\n")
	} else {
		fmt.Fprintf(w, "violations: %s, of which %s in intervals where the probe was itself more than %v late\n",
			groupDigits(r.totalViolations), groupDigits(r.explained()), soakTick+cfg.late)
		for k, n := range r.violations {
			if n == 0 {
				continue
			}
			fmt.Fprintf(w, "  %-30s %s\n", soakViolationNames[k], groupDigits(n))
			for _, e := range r.examples[k] {
				fmt.Fprintf(w, "      %s\n", e)
			}
		}
	}
	for _, f := range r.failures {
		fmt.Fprintf(w, "FAILED: %s\n", f)
	}
	if r.ok() {
		fmt.Fprintf(w, "PASS\n")
	} else {
		fmt.Fprintf(w, "FAIL\n")
	}
}

func okString(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAILED"
}

// soakCountFlag declares a flag holding one count, written like "10M".
func soakCountFlag(name string, value int, usage string) *soakCount {
	c := soakCount(value)
	flag.Var(&c, name, usage)
	return &c
}

// soakCount is a count flag.Value: parseCount's syntax.
type soakCount int

func (c *soakCount) String() string {
	if c == nil {
		return "0"
	}
	return formatCount(int(*c))
}

func (c *soakCount) Set(s string) error {
	n, err := parseCount(s)
	if err != nil {
		return err
	}
	*c = soakCount(n)
	return nil
}

// soakRuntime is what runtime/metrics says, read at one time or, from
// since, over a span.
type soakRuntime struct {
	heap, total, gcs, created uint64
	gcCPU, idleCPU, assistCPU float64 // seconds
	sched, pauses             *metrics.Float64Histogram
	// Over a span only: from the histograms.
	schedP99, schedMax, pauseMax float64 // seconds
}

var soakMetrics = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/gc/cycles/total:gc-cycles",
	"/sched/goroutines-created:goroutines",
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/idle:cpu-seconds",
	"/sched/latencies:seconds",
	"/sched/pauses/total/gc:seconds",
	"/cpu/classes/gc/mark/assist:cpu-seconds",
}

func readSoakRuntime() soakRuntime {
	ms := make([]metrics.Sample, len(soakMetrics))
	for i, n := range soakMetrics {
		ms[i].Name = n
	}
	metrics.Read(ms)
	u := func(i int) uint64 {
		if ms[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return ms[i].Value.Uint64()
	}
	f := func(i int) float64 {
		if ms[i].Value.Kind() != metrics.KindFloat64 {
			return 0
		}
		return ms[i].Value.Float64()
	}
	h := func(i int) *metrics.Float64Histogram {
		if ms[i].Value.Kind() != metrics.KindFloat64Histogram {
			return &metrics.Float64Histogram{}
		}
		return ms[i].Value.Float64Histogram()
	}
	return soakRuntime{
		heap: u(0), total: u(1), gcs: u(2), created: u(3),
		gcCPU: f(4), idleCPU: f(5), assistCPU: f(8),
		sched: h(6), pauses: h(7),
	}
}

// since returns the counters from r0 to r.
func (r soakRuntime) since(r0 soakRuntime) soakRuntime {
	d := soakRuntime{
		heap: r.heap, total: r.total,
		gcs: r.gcs - r0.gcs, created: r.created - r0.created,
		gcCPU: r.gcCPU - r0.gcCPU, idleCPU: r.idleCPU - r0.idleCPU, assistCPU: r.assistCPU - r0.assistCPU,
	}
	sched := histDiff(r.sched, r0.sched)
	d.schedP99, d.schedMax = histQuantile(sched, 0.99), histQuantile(sched, 1)
	d.pauseMax = histQuantile(histDiff(r.pauses, r0.pauses), 1)
	return d
}

// histDiff returns h − h0: the counts added since h0, in h's buckets.
func histDiff(h, h0 *metrics.Float64Histogram) *metrics.Float64Histogram {
	d := &metrics.Float64Histogram{Buckets: h.Buckets, Counts: slices.Clone(h.Counts)}
	if len(h0.Counts) == len(h.Counts) {
		for i := range d.Counts {
			d.Counts[i] -= h0.Counts[i]
		}
	}
	return d
}

// histQuantile returns an upper bound of the q-quantile of h: the upper
// boundary of the bucket that holds it (the lower one for the last, open
// bucket); 0 if h is empty.
func histQuantile(h *metrics.Float64Histogram, q float64) float64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(n))), 1)
	for i, c := range h.Counts {
		if c >= rank {
			if math.IsInf(h.Buckets[i+1], 1) {
				return h.Buckets[i]
			}
			return h.Buckets[i+1]
		}
		rank -= c
	}
	return 0
}

// cmpOr returns s, or def if s is empty.
func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
