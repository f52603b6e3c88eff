package twprom_test

import (
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel"
	twprom "github.com/go-timingwheel/timingwheel/contrib/prometheus"
	"github.com/go-timingwheel/timingwheel/purgatory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// scraped is one scrape of a registry: the value of every counter and
// gauge, and every histogram, by name.
type scraped struct {
	values map[string]float64
	hists  map[string]*dto.Histogram
}

// scrape gathers reg, which holds one metric per name.
func scrape(t *testing.T, reg prometheus.Gatherer) scraped {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	s := scraped{map[string]float64{}, map[string]*dto.Histogram{}}
	for _, mf := range mfs {
		require.Len(t, mf.GetMetric(), 1, mf.GetName())
		m := mf.GetMetric()[0]
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			s.values[mf.GetName()] = m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			s.values[mf.GetName()] = m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			s.hists[mf.GetName()] = m.GetHistogram()
		default:
			t.Fatalf("%s: unexpected type %v", mf.GetName(), mf.GetType())
		}
	}
	return s
}

// check asserts the values of the named counters and gauges.
func (s scraped) check(t *testing.T, what string, want map[string]float64) {
	t.Helper()
	for name, v := range want {
		got, ok := s.values[name]
		if assert.True(t, ok, "%s: %s not scraped", what, name) {
			assert.Equal(t, v, got, "%s: %s", what, name)
		}
	}
}

// hist returns the named histogram, failing the test if it was not
// scraped.
func (s scraped) hist(t *testing.T, name string) *dto.Histogram {
	t.Helper()
	h := s.hists[name]
	require.NotNil(t, h, "%s not scraped", name)
	return h
}

// registry returns a pedantic registry that holds c.
func registry(c prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	return reg
}

func newTimer(t *testing.T, opts ...timingwheel.Option) *timingwheel.SystemTimer {
	t.Helper()
	st, err := timingwheel.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { st.Stop() })
	return st
}

// TestTimerCollector scrapes a registry while timers are armed, fire and
// are stopped, and checks the totals and gauges move with them.
func TestTimerCollector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newTimer(t, timingwheel.WithMaxPending(4))
		reg := registry(twprom.NewTimerCollector(st))
		s := scrape(t, reg)
		s.check(t, "new", map[string]float64{
			"timingwheel_timers_pending":     0,
			"timingwheel_timers_armed_total": 0,
			"timingwheel_timers_fired_total": 0,
			"timingwheel_wheel_levels":       1,
		})
		s.hist(t, "timingwheel_callback_lateness_seconds")

		var fired sync.WaitGroup
		fired.Add(2)
		for i := range 2 {
			_, err := st.AfterFunc(time.Duration(i+1)*time.Millisecond, fired.Done)
			require.NoError(t, err)
		}
		hour1, err := st.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		_, err = st.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		_, err = st.AfterFunc(time.Hour, func() {})
		require.ErrorIs(t, err, timingwheel.ErrTooManyPending)
		time.Sleep(time.Millisecond / 2)
		synctest.Wait()
		scrape(t, reg).check(t, "armed", map[string]float64{
			"timingwheel_timers_pending":        4,
			"timingwheel_timers_armed_total":    4,
			"timingwheel_timers_rejected_total": 1,
			"timingwheel_wheel_levels":          3, // an hour at a 1ms tick and 512 slots
		})

		require.True(t, hour1.Stop())
		fired.Wait()
		synctest.Wait()
		scrape(t, reg).check(t, "fired and stopped", map[string]float64{
			"timingwheel_timers_pending":       1,
			"timingwheel_timers_armed_total":   4,
			"timingwheel_timers_fired_total":   2,
			"timingwheel_timers_stopped_total": 1,
		})
	})
}

// TestTimerCollectorExecutor needs the executor's figures in Stats: the
// lateness of every callback, the panics, the workers and the backlog.
func TestTimerCollectorExecutor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		panicked := make(chan any, 1)
		st := newTimer(t, timingwheel.WithWorkers(3), timingwheel.WithPanicHandler(func(v any) { panicked <- v }))
		reg := registry(twprom.NewTimerCollector(st))
		scrape(t, reg).check(t, "new", map[string]float64{
			"timingwheel_executor_workers":      3,
			"timingwheel_executor_backlog":      0,
			"timingwheel_callback_panics_total": 0,
		})
		for i := range 5 {
			_, err := st.AfterFunc(time.Duration(i+1)*time.Millisecond, func() {})
			require.NoError(t, err)
		}
		_, err := st.AfterFunc(10*time.Millisecond, func() { panic("boom") })
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond)
		assert.Equal(t, "boom", <-panicked)
		synctest.Wait()
		s := scrape(t, reg)
		s.check(t, "fired", map[string]float64{
			"timingwheel_timers_fired_total":    6,
			"timingwheel_callback_panics_total": 1,
			"timingwheel_executor_backlog":      0,
			"timingwheel_executor_workers":      3,
		})
		h := s.hist(t, "timingwheel_callback_lateness_seconds")
		assert.Equal(t, uint64(6), h.GetSampleCount(), "a lateness per callback run")
		// In the bubble no time passes while goroutines run: each
		// callback starts within a tick of its deadline.
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() >= time.Millisecond.Seconds() {
				assert.Equal(t, uint64(6), b.GetCumulativeCount(), "callbacks within a tick, at %vs", b.GetUpperBound())
				break
			}
		}
	})
}

// TestPurgatoryCollector scrapes a registry while operations wait,
// complete and expire.
func TestPurgatoryCollector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := purgatory.New[string](purgatory.WithPurgeInterval(0))
		require.NoError(t, err)
		defer p.Close()
		reg := registry(twprom.NewPurgatoryCollector(p))
		scrape(t, reg).check(t, "new", map[string]float64{
			"purgatory_delayed_operations":         0,
			"purgatory_watched_entries":            0,
			"purgatory_operations_completed_total": 0,
		})

		ready := &op{Op: purgatory.Op{Timeout: time.Hour}}
		expiring := &op{Op: purgatory.Op{Timeout: 100 * time.Millisecond}}
		for _, o := range []*op{ready, expiring} {
			_, err := p.TryCompleteElseWatch(o, "orders-0", "orders-1")
			require.NoError(t, err)
		}
		scrape(t, reg).check(t, "waiting", map[string]float64{
			"purgatory_delayed_operations": 2,
			"purgatory_watched_entries":    4,
		})

		ready.ready = true
		n, err := p.CheckAndComplete("orders-0")
		require.NoError(t, err)
		require.Equal(t, 1, n)
		time.Sleep(time.Second)
		synctest.Wait()
		s := scrape(t, reg)
		s.check(t, "completed and expired", map[string]float64{
			"purgatory_delayed_operations":         0,
			"purgatory_watched_entries":            0,
			"purgatory_operations_completed_total": 2,
			"purgatory_operations_expired_total":   1,
			"purgatory_purged_entries_total":       4,
		})
		h := s.hist(t, "purgatory_expiry_lateness_seconds")
		assert.Equal(t, uint64(1), h.GetSampleCount())
		assert.Less(t, h.GetSampleSum(), 0.002, "late by more than the tick")
	})
}

// op completes when ready is set before it is tried.
type op struct {
	purgatory.Op
	ready bool
}

func (o *op) TryComplete() bool {
	if !o.ready {
		return false
	}
	return o.ForceComplete()
}
func (o *op) OnComplete()   {}
func (o *op) OnExpiration() {}

// TestLint: the metrics follow the Prometheus naming practices, as
// promlint checks them.
func TestLint(t *testing.T) {
	st := newTimer(t)
	p, err := purgatory.New[int](purgatory.WithTimer(st))
	require.NoError(t, err)
	defer p.Close()
	for _, c := range []prometheus.Collector{
		twprom.NewTimerCollector(st),
		twprom.NewPurgatoryCollector(p, twprom.WithNamespace("fetch")),
	} {
		problems, err := testutil.CollectAndLint(c)
		require.NoError(t, err)
		assert.Empty(t, problems)
	}
}

// TestNames pins the names, types and help of the metrics with a namespace
// and a constant label.
func TestNames(t *testing.T) {
	st := newTimer(t)
	c := twprom.NewTimerCollector(st, twprom.WithNamespace("sessions"), twprom.WithConstLabels(prometheus.Labels{"shard": "a"}))
	const want = `
# HELP sessions_timers_pending Timers pending.
# TYPE sessions_timers_pending gauge
sessions_timers_pending{shard="a"} 0
# HELP sessions_timers_fired_total Timers that came due and ran, or were handed to the executor.
# TYPE sessions_timers_fired_total counter
sessions_timers_fired_total{shard="a"} 0
# HELP sessions_driver_lag_seconds How far the clock was past the last level-0 bucket the driver expired, when it did.
# TYPE sessions_driver_lag_seconds gauge
sessions_driver_lag_seconds{shard="a"} 0
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"sessions_timers_pending", "sessions_timers_fired_total", "sessions_driver_lag_seconds"))
	assert.Equal(t, 16, testutil.CollectAndCount(c), "metrics of a SystemTimer")
}

// TestEveryStatsField: a collector exports a metric per field of the
// snapshot, the lateness histogram included, but for the SystemTimer's
// Tick, its configuration. A field added to Stats without a metric fails
// here.
func TestEveryStatsField(t *testing.T) {
	fields := func(v any) int { return reflect.TypeOf(v).NumField() }
	st := newTimer(t)
	assert.Equal(t, fields(timingwheel.Stats{})-1, testutil.CollectAndCount(twprom.NewTimerCollector(st)),
		"metrics of a SystemTimer: one per Stats field but Tick")
	p, err := purgatory.New[int](purgatory.WithTimer(st))
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	assert.Equal(t, fields(purgatory.Stats{}), testutil.CollectAndCount(twprom.NewPurgatoryCollector(p)),
		"metrics of a Purgatory: one per Stats field")
}

// TestSeveralTimers: timers on one registry need a namespace apiece, or
// constant labels of the same names with different values.
func TestSeveralTimers(t *testing.T) {
	a, b := newTimer(t), newTimer(t)
	reg := prometheus.NewRegistry()
	label := func(v string) twprom.Option { return twprom.WithConstLabels(prometheus.Labels{"timer": v}) }
	require.NoError(t, reg.Register(twprom.NewTimerCollector(a, label("a"))))
	assert.Error(t, reg.Register(twprom.NewTimerCollector(b, label("a"))), "the same metrics twice")
	require.NoError(t, reg.Register(twprom.NewTimerCollector(b, label("b"))))
	require.NoError(t, reg.Register(twprom.NewTimerCollector(b, twprom.WithNamespace("other"))))
	n, err := testutil.GatherAndCount(reg, "timingwheel_timers_pending", "other_timers_pending")
	require.NoError(t, err)
	assert.Equal(t, 3, n)
}

func TestNilPanics(t *testing.T) {
	assert.PanicsWithValue(t, "twprom: NewTimerCollector(nil)", func() { twprom.NewTimerCollector(nil) })
	assert.PanicsWithValue(t, "twprom: NewPurgatoryCollector(nil)", func() { twprom.NewPurgatoryCollector[int](nil) })
	assert.PanicsWithValue(t, "twprom: nil Option", func() { twprom.NewTimerCollector(newTimer(t), nil) })
}
