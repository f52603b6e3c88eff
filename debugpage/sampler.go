package debugpage

import (
	"runtime/metrics"
	"slices"
	"strconv"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/purgatory"
)

// A ring holds the last samples taken, up to its capacity.
type ring[T any] struct {
	buf  []T
	next int // where the next sample goes, once buf is full
}

func (r *ring[T]) add(v T) {
	if len(r.buf) < samples {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.next] = v
	r.next = (r.next + 1) % samples
}

// all returns the samples, oldest first, in a new slice: empty, not nil,
// when there are none.
func (r *ring[T]) all() []T {
	return append(append(make([]T, 0, len(r.buf)), r.buf[r.next:]...), r.buf[:r.next]...)
}

// The types below are the JSON's, whose schema the package doc lists:
// lowerCamelCase names, durations as seconds in names that end in
// Seconds, every field always present, lists never null.

// seconds is a duration that JSON shows as a number of seconds, as
// Prometheus does.
type seconds time.Duration

func (s seconds) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(s).Seconds(), 'g', -1, 64), nil
}

// A timerPoint is what the sampler keeps of a SystemTimer per interval.
type timerPoint struct {
	T time.Time `json:"time"`
	// N callbacks started in the interval, with these quantiles of their
	// lateness, each the upper bound of a Histogram bucket (at most 12.5%
	// above the true value); all 0 when N is.
	N    uint64  `json:"callbacks"`
	P50  seconds `json:"p50Seconds"`
	P99  seconds `json:"p99Seconds"`
	P999 seconds `json:"p999Seconds"`
	Max  seconds `json:"maxSeconds"`
	// The gauges at the end of the interval.
	Backlog int     `json:"backlog"`
	Helpers int     `json:"helpers"`
	Workers int     `json:"workers"`
	Lag     seconds `json:"lagSeconds"`
	Pending int     `json:"pending"`
	// GC is the number of GC cycles that ended in the interval, in the
	// whole process.
	GC uint64 `json:"gcCycles"`
}

// A purgatoryPoint is what the sampler keeps of a Purgatory per interval.
type purgatoryPoint struct {
	T         time.Time `json:"time"`
	Completed uint64    `json:"completed"` // in the interval, the expired ones included
	Expired   uint64    `json:"expired"`   // in the interval
	Delayed   int       `json:"delayed"`
	Watched   int       `json:"watched"`
}

// A histogram is a timingwheel.Histogram as the JSON shows it: its count,
// quantiles, and the buckets that counted anything.
type histogram struct {
	Count   uint64   `json:"count"`
	P50     seconds  `json:"p50Seconds"`
	P99     seconds  `json:"p99Seconds"`
	P999    seconds  `json:"p999Seconds"`
	Max     seconds  `json:"maxSeconds"`
	Buckets []bucket `json:"buckets"`
}

// A bucket counts the durations above the bound of the bucket before it,
// up to its own, Le.
type bucket struct {
	Le    seconds `json:"leSeconds"`
	Count uint64  `json:"count"`
}

func newHistogram(h *timingwheel.Histogram) histogram {
	out := histogram{
		Count: h.Count(),
		P50:   seconds(h.Quantile(0.5)), P99: seconds(h.Quantile(0.99)),
		P999: seconds(h.Quantile(0.999)), Max: seconds(h.Quantile(1)),
		Buckets: []bucket{},
	}
	for i, c := range h.Counts {
		if c > 0 {
			out.Buckets = append(out.Buckets, bucket{seconds(timingwheel.BucketBound(i)), c})
		}
	}
	return out
}

// timerStats is a timingwheel.Stats as the JSON shows it.
type timerStats struct {
	Pending   int       `json:"pending"`
	Armed     uint64    `json:"armed"`
	Fired     uint64    `json:"fired"`
	Stopped   uint64    `json:"stopped"`
	Postponed uint64    `json:"postponed"`
	Moved     uint64    `json:"moved"`
	Migrated  uint64    `json:"migrated"`
	Rejected  uint64    `json:"rejected"`
	Cascaded  uint64    `json:"cascaded"`
	Panics    uint64    `json:"panics"`
	Lateness  histogram `json:"lateness"`
	Backlog   int       `json:"backlog"`
	Workers   int       `json:"workers"`
	Helpers   int       `json:"helpers"`
	Lag       seconds   `json:"lagSeconds"`
	Levels    int       `json:"levels"`
	Tick      seconds   `json:"tickSeconds"`
}

func newTimerStats(s timingwheel.Stats) timerStats {
	return timerStats{
		Pending: s.Pending, Armed: s.Armed, Fired: s.Fired, Stopped: s.Stopped,
		Postponed: s.Postponed, Moved: s.Moved, Migrated: s.Migrated, Rejected: s.Rejected,
		Cascaded: s.Cascaded, Panics: s.Panics, Lateness: newHistogram(&s.Lateness),
		Backlog: s.Backlog, Workers: s.Workers, Helpers: s.Helpers,
		Lag: seconds(s.Lag), Levels: s.Levels, Tick: seconds(s.Tick),
	}
}

// purgatoryStats is a purgatory.Stats as the JSON shows it.
type purgatoryStats struct {
	Delayed   int       `json:"delayed"`
	Watched   int       `json:"watched"`
	Completed uint64    `json:"completed"`
	Expired   uint64    `json:"expired"`
	Purged    uint64    `json:"purged"`
	Lateness  histogram `json:"lateness"`
}

func newPurgatoryStats(s purgatory.Stats) purgatoryStats {
	return purgatoryStats{
		Delayed: s.Delayed, Watched: s.Watched, Completed: s.Completed,
		Expired: s.Expired, Purged: s.Purged, Lateness: newHistogram(&s.Lateness),
	}
}

// A timerSource is a SystemTimer added to a Handler.
type timerSource struct {
	name string                   // immutable
	st   *timingwheel.SystemTimer // immutable

	hist ring[timerPoint] // guarded by Handler.mu
	// The last sample's lateness histogram, and whether there is one:
	// only the sampler goroutine uses them.
	prev   timingwheel.Histogram
	primed bool
}

// A keyCount is a purgatory key, formatted, and its watch-list entries.
type keyCount struct {
	Key     string `json:"key"`
	Watched int    `json:"watched"`
}

// A purgatorySource is a Purgatory added to a Handler, through closures
// that hide its key type.
type purgatorySource struct {
	name  string                 // immutable
	stats func() purgatory.Stats // immutable
	top   func(n int) []keyCount // immutable

	hist ring[purgatoryPoint] // guarded by Handler.mu
	// The last sample's totals, and whether there are any: only the
	// sampler goroutine uses them.
	prev   purgatory.Stats
	primed bool
}

// sample takes a sample every interval until nobody has looked for idle,
// then drops the histories and closes done.
func (h *Handler) sample(done, stop chan struct{}) {
	defer close(done)
	tk := h.clock.Ticker(h.interval)
	defer tk.Stop()
	gc := newGCCounter()
	for h.takeSample(gc) {
		select {
		case <-tk.C:
		case <-stop:
			h.mu.Lock()
			h.stopped()
			h.mu.Unlock()
			return
		}
	}
}

// stopped drops the histories and notes that the sampler no longer runs.
// Called with mu held by the sampler goroutine, as it exits.
func (h *Handler) stopped() {
	for _, s := range h.timers {
		s.hist, s.primed = ring[timerPoint]{}, false
	}
	for _, s := range h.purgs {
		s.hist, s.primed = ring[purgatoryPoint]{}, false
	}
	h.running, h.stop = false, nil
}

// takeSample takes a sample of every source, or reports false, and stops
// sampling, if nobody has looked for idle.
func (h *Handler) takeSample(gc *gcCounter) bool {
	h.mu.Lock()
	if h.clock.Since(h.seen) > h.idle {
		h.stopped()
		h.mu.Unlock()
		return false
	}
	timers, purgs := slices.Clone(h.timers), slices.Clone(h.purgs)
	h.mu.Unlock()

	// The figures are read without h.mu, so that a slow Stats holds up
	// no request.
	cycles := gc.read()
	now := h.clock.Now()
	tps := make([]timerPoint, len(timers))
	for i, src := range timers {
		s := src.st.Stats()
		delta := s.Lateness
		for j, c := range src.prev.Counts {
			delta.Counts[j] -= c
		}
		src.prev = s.Lateness
		tps[i] = timerPoint{
			T: now, N: delta.Count(), GC: cycles,
			Backlog: s.Backlog, Helpers: s.Helpers, Workers: s.Workers, Lag: seconds(s.Lag), Pending: s.Pending,
		}
		if tps[i].N > 0 {
			tps[i].P50, tps[i].P99 = seconds(delta.Quantile(0.5)), seconds(delta.Quantile(0.99))
			tps[i].P999, tps[i].Max = seconds(delta.Quantile(0.999)), seconds(delta.Quantile(1))
		}
	}
	pps := make([]purgatoryPoint, len(purgs))
	for i, src := range purgs {
		s := src.stats()
		pps[i] = purgatoryPoint{
			T: now, Completed: s.Completed - src.prev.Completed, Expired: s.Expired - src.prev.Expired,
			Delayed: s.Delayed, Watched: s.Watched,
		}
		src.prev = s
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	// The first sample only primes the totals that the next one counts
	// from.
	for i, src := range timers {
		if src.primed {
			src.hist.add(tps[i])
		}
		src.primed = true
	}
	for i, src := range purgs {
		if src.primed {
			src.hist.add(pps[i])
		}
		src.primed = true
	}
	return true
}

// A gcCounter reads the number of GC cycles ended since its last read.
type gcCounter struct {
	s    []metrics.Sample
	last uint64
}

func newGCCounter() *gcCounter {
	g := &gcCounter{s: []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}}
	g.read()
	return g
}

func (g *gcCounter) read() uint64 {
	metrics.Read(g.s)
	if g.s[0].Value.Kind() != metrics.KindUint64 {
		return 0 // not supported by this runtime
	}
	n := g.s[0].Value.Uint64()
	d := n - g.last
	g.last = n
	return d
}

// dueBounds are the upper bounds of the time-to-due chart's intervals:
// 1-2-5 steps, then the clock's own units, from 1ms to 10 days.
var dueBounds = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 2 * 24 * time.Hour, 5 * 24 * time.Hour, 10 * 24 * time.Hour,
}

// pageData is what the page shows, and the JSON endpoint serves.
type pageData struct {
	Time        time.Time       `json:"time"`
	Interval    seconds         `json:"intervalSeconds"`
	Window      seconds         `json:"windowSeconds"` // the history's span when full
	Timers      []timerData     `json:"timers"`
	Purgatories []purgatoryData `json:"purgatories"`
	refresh     int             // seconds between the page's refreshes
}

type timerData struct {
	Name  string     `json:"name"`
	Stats timerStats `json:"stats"`
	// Due[i] estimates the pending timers due within DueBounds[i] and
	// after DueBounds[i-1] (the last one: after the last bound); see
	// SystemTimer.DueProfile.
	DueBounds []seconds    `json:"dueBoundsSeconds"`
	Due       []float64    `json:"due"`
	Shards    []int        `json:"shards"`
	History   []timerPoint `json:"history"`
}

type purgatoryData struct {
	Name    string           `json:"name"`
	Stats   purgatoryStats   `json:"stats"`
	TopKeys []keyCount       `json:"topKeys"`
	History []purgatoryPoint `json:"history"`
}

// data returns what the page shows of the source named name, or of every
// source if name is empty.
func (h *Handler) data(name string) pageData {
	d := pageData{
		Time: h.clock.Now(), Interval: seconds(h.interval), Window: seconds(samples * h.interval),
		Timers: []timerData{}, Purgatories: []purgatoryData{},
		refresh: int(max(2*time.Second, 5*h.interval).Round(time.Second) / time.Second),
	}
	var timers []*timerSource
	var purgs []*purgatorySource
	h.mu.Lock()
	for _, s := range h.timers {
		if name == "" || s.name == name {
			timers = append(timers, s)
			d.Timers = append(d.Timers, timerData{Name: s.name, History: s.hist.all()})
		}
	}
	for _, s := range h.purgs {
		if name == "" || s.name == name {
			purgs = append(purgs, s)
			d.Purgatories = append(d.Purgatories, purgatoryData{Name: s.name, History: s.hist.all()})
		}
	}
	h.mu.Unlock()
	bounds := make([]seconds, len(dueBounds))
	for i, b := range dueBounds {
		bounds[i] = seconds(b)
	}
	for i, s := range timers {
		t := &d.Timers[i]
		t.Stats = newTimerStats(s.st.Stats())
		p := s.st.DueProfile(dueBounds)
		t.DueBounds, t.Due, t.Shards = bounds, p.Due, p.Shards
	}
	for i, s := range purgs {
		p := &d.Purgatories[i]
		p.Stats = newPurgatoryStats(s.stats())
		p.TopKeys = s.top(topKeys)
	}
	return d
}
