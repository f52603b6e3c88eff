// Package twprom exports the Stats of a timingwheel.SystemTimer or a
// purgatory.Purgatory to Prometheus, as collectors to register:
//
//	import twprom "github.com/go-timingwheel/timingwheel/contrib/prometheus"
//
//	prometheus.MustRegister(
//		twprom.NewTimerCollector(st),
//		twprom.NewPurgatoryCollector(p, twprom.WithNamespace("fetch")),
//	)
//
// It lives in a module of its own, so that the timingwheel module does not
// require client_golang; and its package name is not prometheus, so that it
// does not collide with client_golang's in the importing file.
//
// Each scrape takes one snapshot (SystemTimer.Stats, Purgatory.Stats) and
// reports its totals as counters (…_total), its current figures as gauges,
// and the lateness as a Prometheus histogram in seconds, named as the
// Prometheus naming practices say. The names, for the default namespaces:
//
//	timingwheel_timers_pending                gauge      Stats.Pending
//	timingwheel_timers_armed_total            counter    Stats.Armed
//	timingwheel_timers_fired_total            counter    Stats.Fired
//	timingwheel_timers_stopped_total          counter    Stats.Stopped
//	timingwheel_timers_postponed_total        counter    Stats.Postponed
//	timingwheel_timers_moved_total            counter    Stats.Moved
//	timingwheel_timers_migrated_total         counter    Stats.Migrated
//	timingwheel_timers_rejected_total         counter    Stats.Rejected
//	timingwheel_timers_cascaded_total         counter    Stats.Cascaded
//	timingwheel_callback_panics_total         counter    Stats.Panics
//	timingwheel_callback_lateness_seconds     histogram  Stats.Lateness
//	timingwheel_executor_backlog              gauge      Stats.Backlog
//	timingwheel_executor_workers              gauge      Stats.Workers
//	timingwheel_executor_helpers              gauge      Stats.Helpers
//	timingwheel_driver_lag_seconds            gauge      Stats.Lag
//	timingwheel_wheel_levels                  gauge      Stats.Levels
//
// Stats.Tick, the SystemTimer's configuration rather than a measurement,
// is not exported.
//
//	purgatory_delayed_operations              gauge      Stats.Delayed (Kafka's NumDelayedOperations)
//	purgatory_watched_entries                 gauge      Stats.Watched (Kafka's PurgatorySize)
//	purgatory_operations_completed_total      counter    Stats.Completed
//	purgatory_operations_expired_total        counter    Stats.Expired
//	purgatory_purged_entries_total            counter    Stats.Purged
//	purgatory_expiry_lateness_seconds         histogram  Stats.Lateness
//
// To export several timers or purgatories to one registry, give each a
// namespace ([WithNamespace]), or give all of them constant labels of the
// same names with different values ([WithConstLabels]); otherwise their
// metrics collide and Register returns an error.
//
// # The lateness buckets
//
// A timingwheel.Histogram has 218 buckets, eight per doubling. Prometheus
// stores a series per bucket, and 220 series per histogram (with _sum and
// _count) are more than a dashboard needs: the collectors export every
// fourth bound, two per doubling (2^k ns and 1.5×2^k ns, from 1.024µs to
// 2^37ns, about 2m17s), 55 bounds and +Inf. A quantile that
// histogram_quantile reads from them lies within its bucket, whose bounds
// are at most 1.5 apart; the full resolution is in the Stats, and in the
// JSON that expvar serves. The Histogram keeps no sum, which a Prometheus
// histogram must have: _sum is estimated, each duration counted at the
// middle of its bucket (within 6.25% of the true sum for durations from
// 1.024µs to 2m17s).
package twprom

import (
	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/purgatory"
	"github.com/prometheus/client_golang/prometheus"
)

// An Option configures a collector.
type Option interface {
	apply(*config)
}

type config struct {
	namespace string
	labels    prometheus.Labels
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithNamespace sets the first part of every metric name, "timingwheel"
// for a SystemTimer and "purgatory" for a Purgatory by default:
// WithNamespace("fetch") names the purgatory's gauge of delayed operations
// fetch_delayed_operations. An empty namespace leaves the names without
// one.
func WithNamespace(ns string) Option {
	return optionFunc(func(c *config) { c.namespace = ns })
}

// WithConstLabels adds labels with fixed values to every metric, such as
// {"timer": "sessions"}, to tell apart several timers under one namespace.
func WithConstLabels(labels prometheus.Labels) Option {
	return optionFunc(func(c *config) { c.labels = labels })
}

// NewTimerCollector returns a collector of st's Stats. It panics if st is
// nil.
func NewTimerCollector(st *timingwheel.SystemTimer, opts ...Option) prometheus.Collector {
	if st == nil {
		panic("twprom: NewTimerCollector(nil)")
	}
	return newCollector(st.Stats, "timingwheel", opts, timerMetrics, "callback_lateness_seconds",
		"How late timer callbacks started: start minus the deadline.",
		func(s *timingwheel.Stats) *timingwheel.Histogram { return &s.Lateness })
}

// NewPurgatoryCollector returns a collector of p's Stats. It panics if p
// is nil.
func NewPurgatoryCollector[K comparable](p *purgatory.Purgatory[K], opts ...Option) prometheus.Collector {
	if p == nil {
		panic("twprom: NewPurgatoryCollector(nil)")
	}
	return newCollector(p.Stats, "purgatory", opts, purgatoryMetrics, "expiry_lateness_seconds",
		"How late operations expired: expiry minus the operation's deadline.",
		func(s *purgatory.Stats) *timingwheel.Histogram { return &s.Lateness })
}

const counter, gauge = prometheus.CounterValue, prometheus.GaugeValue

// timerMetrics are the counters and gauges of a SystemTimer, in the order
// of the package doc.
var timerMetrics = []metricDef[timingwheel.Stats]{
	{gauge, "timers_pending", "Timers pending.",
		func(s *timingwheel.Stats) float64 { return float64(s.Pending) }},
	{counter, "timers_armed_total", "Armings of timers that entered the wheel.",
		func(s *timingwheel.Stats) float64 { return float64(s.Armed) }},
	{counter, "timers_fired_total", "Timers that came due and ran, or were handed to the executor.",
		func(s *timingwheel.Stats) float64 { return float64(s.Fired) }},
	{counter, "timers_stopped_total", "Timers stopped before they fired.",
		func(s *timingwheel.Stats) float64 { return float64(s.Stopped) }},
	{counter, "timers_postponed_total", "Timers pushed back by Reset that the driver placed again.",
		func(s *timingwheel.Stats) float64 { return float64(s.Postponed) }},
	{counter, "timers_moved_total", "Resets that moved a pending timer to an earlier deadline.",
		func(s *timingwheel.Stats) float64 { return float64(s.Moved) }},
	{counter, "timers_migrated_total", "Timers that a Reset re-arming them moved to the shard of the processor it ran on.",
		func(s *timingwheel.Stats) float64 { return float64(s.Migrated) }},
	{counter, "timers_rejected_total", "Armings refused because WithMaxPending's bound was reached.",
		func(s *timingwheel.Stats) float64 { return float64(s.Rejected) }},
	{counter, "timers_cascaded_total", "Timers moved from an expired bucket of a higher wheel level to a lower one.",
		func(s *timingwheel.Stats) float64 { return float64(s.Cascaded) }},
	{counter, "callback_panics_total", "Timer callbacks that panicked.",
		func(s *timingwheel.Stats) float64 { return float64(s.Panics) }},
	{gauge, "executor_backlog", "Callbacks handed to the executor and not started yet.",
		func(s *timingwheel.Stats) float64 { return float64(s.Backlog) }},
	{gauge, "executor_workers", "Workers of the executor (WithWorkers).",
		func(s *timingwheel.Stats) float64 { return float64(s.Workers) }},
	{gauge, "executor_helpers", "Goroutines running callbacks beyond the workers, because callbacks blocked or ran long.",
		func(s *timingwheel.Stats) float64 { return float64(s.Helpers) }},
	{gauge, "driver_lag_seconds", "How far the clock was past the last level-0 bucket the driver expired, when it did.",
		func(s *timingwheel.Stats) float64 { return s.Lag.Seconds() }},
	{gauge, "wheel_levels", "Wheel levels in use.",
		func(s *timingwheel.Stats) float64 { return float64(s.Levels) }},
}

// purgatoryMetrics are the counters and gauges of a Purgatory.
var purgatoryMetrics = []metricDef[purgatory.Stats]{
	{gauge, "delayed_operations", "Operations whose timeout is armed (Kafka's NumDelayedOperations).",
		func(s *purgatory.Stats) float64 { return float64(s.Delayed) }},
	{gauge, "watched_entries", "Watch-list entries over all keys, stale ones included (Kafka's PurgatorySize).",
		func(s *purgatory.Stats) float64 { return float64(s.Watched) }},
	{counter, "operations_completed_total", "Operations completed after being watched, whichever way.",
		func(s *purgatory.Stats) float64 { return float64(s.Completed) }},
	{counter, "operations_expired_total", "Operations completed by their timeout.",
		func(s *purgatory.Stats) float64 { return float64(s.Expired) }},
	{counter, "purged_entries_total", "Stale watch-list entries removed by purges.",
		func(s *purgatory.Stats) float64 { return float64(s.Purged) }},
}

// A metricDef is a counter or gauge of snapshots of type S: its name
// after the namespace, its help, and how to read it from a snapshot.
type metricDef[S any] struct {
	kind       prometheus.ValueType
	name, help string
	value      func(*S) float64
}

// A collector collects the metrics of one snapshot type S.
type collector[S any] struct {
	stats    func() S
	metrics  []metric[S]
	lateness *prometheus.Desc
	hist     func(*S) *timingwheel.Histogram
}

// A metric is a counter or gauge, and how to read it from a snapshot.
type metric[S any] struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(*S) float64
}

// newCollector returns a collector of the snapshots stats takes, with the
// metrics of defs and a lateness histogram, read by hist, named as latName
// and latHelp say: each name after the namespace that opts leave.
func newCollector[S any](stats func() S, namespace string, opts []Option, defs []metricDef[S],
	latName, latHelp string, hist func(*S) *timingwheel.Histogram) *collector[S] {
	cfg := config{namespace: namespace}
	for _, o := range opts {
		if o == nil {
			panic("twprom: nil Option")
		}
		o.apply(&cfg)
	}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(cfg.namespace, "", name), help, nil, cfg.labels)
	}
	c := &collector[S]{stats: stats, lateness: desc(latName, latHelp), hist: hist}
	for _, d := range defs {
		c.metrics = append(c.metrics, metric[S]{desc(d.name, d.help), d.kind, d.value})
	}
	return c
}

// Describe sends the descriptions of every metric c collects.
func (c *collector[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
	ch <- c.lateness
}

// Collect takes one snapshot and sends its metrics.
func (c *collector[S]) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(&s))
	}
	count, sum, buckets := histogram(c.hist(&s))
	ch <- prometheus.MustNewConstHistogram(c.lateness, count, sum, buckets)
}

// exported reports whether bucket i's bound is exported: every fourth one,
// two per doubling (see the package doc).
func exported(i int) bool { return i%4 == 0 && i < timingwheel.NumBuckets-1 }

// histogram returns h as a Prometheus histogram: its count, its estimated
// sum in seconds, and the cumulative counts at the exported bounds, in
// seconds. A duration is counted in the first exported bucket whose bound
// is at or above the bound of its own bucket, so it is never counted below
// its value.
func histogram(h *timingwheel.Histogram) (count uint64, sum float64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, timingwheel.NumBuckets/4+1)
	lower := 0.0 // of bucket i, in seconds
	for i, n := range h.Counts {
		count += n
		upper := timingwheel.BucketBound(i).Seconds()
		if i == timingwheel.NumBuckets-1 {
			sum += float64(n) * lower // no bound: count at the lowest value
		} else {
			sum += float64(n) * (lower + upper) / 2
		}
		lower = upper
		if exported(i) {
			buckets[upper] = count
		}
	}
	return count, sum, buckets
}
