package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// The tick workload measures what the tick and the wheel size of this
// library cost and buy, for the choice docs/operations.md describes ("The
// tick and the wheel size"). Each case is one configuration; it runs a
// storm (runStorm) and an idle window (runIdle), each on a SystemTimer of
// its own made with that configuration.
var (
	tickTicks = durationsParam("tick-ticks", "tick: the ticks to measure, at wheel size 512",
		[]time.Duration{100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond},
		[]time.Duration{100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond},
		[]time.Duration{100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond})
	tickSizes = SizesParam("tick-wheel-sizes", "tick: further cases, these wheel sizes at a 1ms tick",
		[]int{64, 4096}, []int{64, 4096}, []int{64, 4096})
	tickM = CountParam("tick-m", "tick: timers in each case's storm",
		200, 100_000, 1_000_000)
	tickFrom = DurationParam("tick-from", "tick: the storm window's start, from each timer's AfterFunc call",
		10*time.Millisecond, time.Second, time.Second)
	tickTo = DurationParam("tick-to", "tick: the storm window's end",
		30*time.Millisecond, 2*time.Second, 2*time.Second)
	tickIdleN = CountParam("tick-idle-n", "tick: timers pending an hour out during each case's idle window",
		1000, 100_000, 1_000_000)
	tickIdleFor = DurationParam("tick-idle-for", "tick: each case's idle window",
		50*time.Millisecond, time.Second, 3*time.Second)
)

// defaultWheelSize is New's default, the wheel size of the tick cases.
const defaultWheelSize = 512

// tickSkipWhy is why the tick workload runs only this library.
const tickSkipWhy = "the tick and the wheel size are options of timingwheel alone"

func init() {
	Register(&Workload{
		Name:      "tick",
		Order:     90,
		OnRequest: true,
		Title:     "this library at several ticks and wheel sizes: a storm of timers due uniformly in [from, to], then an idle window",
		Notes: []string{
			"storm: M timers due uniformly in [from, to] after their AfterFunc call, on a SystemTimer made with the case's " +
				"WithTick and WithWheelSize; late and early as in the storm workload (a callback runs at most one tick late, " +
				"plus the time the runtime takes to wake the driver and a worker). " +
				"storm CPU: process user+system time from the first AfterFunc to the last callback, the benchmark's own callbacks included.",
			"idle CPU: process user+system time over a window in which nothing is due, with N timers pending an hour out, " +
				"on a second SystemTimer of the same configuration.",
			"Only timingwheel runs: " + tickSkipWhy + ". docs/operations.md says what to choose.",
		},
		Cases: func(p Profile) []Case {
			m, from, to := tickM.Get(p), tickFrom.Get(p), tickTo.Get(p)
			n, window := tickIdleN.Get(p), tickIdleFor.Get(p)
			type config struct {
				tick time.Duration
				size int
			}
			var configs []config
			for _, tick := range tickTicks.Get(p) {
				configs = append(configs, config{tick, defaultWheelSize})
			}
			for _, size := range tickSizes.Get(p) {
				if size != defaultWheelSize || !slices.Contains(tickTicks.Get(p), time.Millisecond) {
					configs = append(configs, config{time.Millisecond, size})
				}
			}
			var cases []Case
			for _, c := range configs {
				cases = append(cases, Case{
					Label: fmt.Sprintf("tick=%v wheel=%d", c.tick, c.size),
					X:     float64(c.tick),
					Run: func(e *Env) error {
						return runTick(e, []timingwheel.Option{timingwheel.WithTick(c.tick), timingwheel.WithWheelSize(c.size)},
							m, from, to, n, window)
					},
				})
			}
			return cases
		},
		Charts: []Chart{CDFChart{
			Sample: "lateness",
			Title:  "%s: how late the storm's callbacks ran (early ones drawn at 1µs)",
			XLabel: "lateness: callback start − deadline",
			Floor:  1e3, Negative: "early",
		}},
	})
}

// runTick runs a storm of m timers due in [from, to] and then an idle window
// with n timers pending, each on a SystemTimer made with opts.
func runTick(e *Env, opts []timingwheel.Option, m int, from, to time.Duration, n int, window time.Duration) error {
	if e.Spec.Name != timingwheelSpec.Name {
		return &SkipError{Reason: tickSkipWhy}
	}
	// The harness made the SystemTimer of e.Impl with New's defaults: stop
	// it, so that only the configuration under test runs.
	e.Close(nil)

	storm, err := e.sub(opts, func(sub *Env) error { return runStorm(sub, m, from, to) })
	if err != nil {
		return fmt.Errorf("storm: %w", err)
	}
	idle, err := e.sub(opts, func(sub *Env) error { return runIdle(sub, n, window) })
	if err != nil {
		return fmt.Errorf("idle: %w", err)
	}
	for _, c := range []struct {
		from *Result
		name string
		as   string
	}{
		{storm, "early", "early"},
		{storm, "p50 late", "p50 late"},
		{storm, "p99 late", "p99 late"},
		{storm, "max late", "max late"},
		{storm, "CPU", "storm CPU"},
		{idle, "CPU", "idle CPU"},
	} {
		i := slices.IndexFunc(c.from.Metrics, func(m Metric) bool { return m.Name == c.name })
		if i < 0 {
			return fmt.Errorf("no %q figure", c.name)
		}
		mt := c.from.Metrics[i]
		mt.Name, mt.Ratio = c.as, false // the only implementation: no ratios
		e.Add(mt)
	}
	e.AddSamples("lateness", storm.Samples["lateness"])
	e.res.Warnings = append(e.res.Warnings, storm.Warnings...)
	e.res.Warnings = append(e.res.Warnings, idle.Warnings...)
	return nil
}

// sub runs run against a SystemTimer of its own made with opts, through an
// Env of its own that shares e's progress display, and returns the figures
// it recorded. The SystemTimer is stopped when sub returns.
func (e *Env) sub(opts []timingwheel.Option, run func(*Env) error) (*Result, error) {
	cleanHeap()
	st, err := timingwheel.New(opts...)
	if err != nil {
		return nil, err
	}
	res := &Result{Impl: e.Spec.Name}
	sub := &Env{Impl: &wheelImpl{st: st}, Spec: e.Spec, Profile: e.Profile, progress: e.progress, res: res}
	defer sub.Close(nil)
	if err := run(sub); err != nil {
		if skip := (*SkipError)(nil); errors.As(err, &skip) {
			return nil, fmt.Errorf("unexpectedly skipped: %s", skip.Reason)
		}
		return nil, err
	}
	return res, nil
}

// durationsParam declares a flag holding a list of positive durations,
// written like "100us,1ms".
func durationsParam(name, usage string, tiny, quick, full []time.Duration) *Param[[]time.Duration] {
	parse := func(s string) ([]time.Duration, error) {
		var ds []time.Duration
		for f := range strings.SplitSeq(s, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil {
				return nil, err
			}
			if d <= 0 {
				return nil, fmt.Errorf("duration %q must be positive", f)
			}
			ds = append(ds, d)
		}
		return ds, nil
	}
	format := func(ds []time.Duration) string {
		s := make([]string, len(ds))
		for i, d := range ds {
			s[i] = d.String()
		}
		return strings.Join(s, ",")
	}
	return newParam(name, usage, tiny, quick, full, parse, format)
}
