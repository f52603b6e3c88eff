package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel/purgatory"
)

// The purgatory workload is Kafka's purgatory performance test
// (kafka.TestPurgatoryPerformance, core/src/test/scala/other/kafka),
// ported: requests arrive as a Poisson process of rate R, each watched
// under the same few keys; a request whose drawn completion latency is
// below the timeout is force-completed at that latency by a completion
// goroutine, the others expire. Nothing ever calls CheckAndComplete, so
// every watch-list entry goes stale and only the purge removes it.

var (
	purgN = CountParam("purgatory-n", "purgatory: requests in each case",
		2000, 200_000, 1_000_000)
	purgRate = CountParam("purgatory-rate", "purgatory: target arrival rate R, requests per second",
		100_000, 200_000, 200_000)
	purgTimeout = DurationParam("purgatory-timeout", "purgatory: every request's timeout",
		20*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond)
	purgLatency = newParam("purgatory-latency",
		"purgatory: pct50/pct75 of the log-normal completion latency, comma-separated, one case each",
		[]purgLatencyCase{{2 * time.Millisecond, 6 * time.Millisecond}},
		purgKafkaCases, purgKafkaCases, parsePurgLatencies, formatPurgLatencies)
	// One generator, as Kafka's test has one thread: more contend on the
	// three keys' shard locks, which measures the harness as much as the
	// purgatory. The tests run two, to exercise concurrent submission.
	purgGenerators = CountParam("purgatory-generators", "purgatory: goroutines that submit the requests",
		2, 1, 1)
)

// purgKafkaCases are the two cases of Kafka's benchmark in the purgatory
// redesign (KAFKA-1430, "Purgatory Redesign Proposal"): with a 200 ms
// timeout, "low timeout" (pct75 60 ms, pct50 20 ms: about 8% expire) and
// "high timeout" (pct75 400 ms, pct50 200 ms: half expire).
var purgKafkaCases = []purgLatencyCase{
	{20 * time.Millisecond, 60 * time.Millisecond},
	{200 * time.Millisecond, 400 * time.Millisecond},
}

const (
	purgKeySpace = 100 // keys requests may be watched under, as Kafka's -key-space-size
	purgKeys     = 3   // keys per request, the same for every request, as Kafka's -keys

	// purgSlot is the resolution of the completion queue: a request is
	// force-completed in the first slot boundary at or after its
	// completion time. Kafka's completion queue works in milliseconds.
	purgSlot = int64(time.Millisecond)

	// purgSlack is how long after the last arrival and the timeout the
	// workload waits for every request to end before it reports a failure.
	purgSlack = time.Minute
)

func init() {
	Register(&Workload{
		Name:  "purgatory",
		Order: 50,
		Title: "Kafka's purgatory performance test: Poisson arrivals at rate R, 3 of 100 keys, log-normal completion, 200 ms timeout",
		Notes: []string{
			"Each implementation hosts the same purgatory (package purgatory): timingwheel with WithTimer (the default), " +
				"time.AfterFunc and go-zero with WithAfterFunc (go-zero's Stop cannot tell whether it kept the function " +
				"from running, so a compare-and-swap wrapper decides).",
			"Every request watches the same 3 keys out of 100 and is never checked (no CheckAndComplete): a request whose " +
				"latency is below the timeout is ForceCompleted at that latency (1 ms slots) by a completion goroutine, " +
				"the others expire; every watch-list entry goes stale and only the purge removes it.",
			"target/s: requests ÷ the schedule's span; achieved/s: requests ÷ the time the last submission returned " +
				"(Kafka's actual rate); gen late: submission start − scheduled arrival. CPU/req: process user+system time " +
				"from the first arrival until every request ended ÷ requests. GC CPU: runtime/metrics " +
				"/cpu/classes/gc/total (an estimate; whole GC cycles); GC pause: MemStats.PauseTotalNs.",
			"OnComplete: calls over all requests; every request must end exactly once (the run fails otherwise). " +
				"expiry late: OnExpiration − (submission + timeout). max watched: the most watch-list entries seen (every 1 ms).",
			"target: achieved ≥ 99% of the target rate with R = 200k/s for 1M requests.",
		},
		Cases: func(p Profile) []Case {
			c := purgConfig{
				n:          purgN.Get(p),
				rate:       purgRate.Get(p),
				timeout:    purgTimeout.Get(p),
				generators: purgGenerators.Get(p),
			}
			var cases []Case
			for _, l := range purgLatency.Get(p) {
				c := c
				c.latency = l
				cases = append(cases, Case{
					Label: fmt.Sprintf("N=%s R=%s/s p50/p75=%v/%v", formatCount(c.n), formatCount(c.rate), l.p50, l.p75),
					X:     float64(c.n),
					Run:   func(e *Env) error { return runPurgatory(e, c) },
				})
			}
			return cases
		},
	})
}

// A purgLatencyCase is the completion latency distribution of a case: the
// median and 75th percentile of a log-normal, as Kafka's -pct50, -pct75.
type purgLatencyCase struct{ p50, p75 time.Duration }

func parsePurgLatencies(s string) ([]purgLatencyCase, error) {
	var cs []purgLatencyCase
	for f := range strings.SplitSeq(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok {
			return nil, fmt.Errorf("latency %q: want pct50/pct75, like 20ms/60ms", f)
		}
		p50, err1 := time.ParseDuration(a)
		p75, err2 := time.ParseDuration(b)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("latency %q: %w", f, err)
		}
		if p50 <= 0 || p75 < p50 {
			return nil, fmt.Errorf("latency %q: want 0 < pct50 <= pct75", f)
		}
		cs = append(cs, purgLatencyCase{p50, p75})
	}
	return cs, nil
}

func formatPurgLatencies(cs []purgLatencyCase) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.p50.String() + "/" + c.p75.String()
	}
	return strings.Join(s, ",")
}

type purgConfig struct {
	n, rate, generators int
	timeout             time.Duration
	latency             purgLatencyCase
}

// purgSchedule draws the arrival times and completion latencies of n
// requests, in nanoseconds: arrivals as a Poisson process of the given
// rate (exponential gaps), latencies from the log-normal whose median is
// p50 and whose 75th percentile is p75, as Kafka's LatencySamples, but in
// nanoseconds rather than truncated to milliseconds.
func purgSchedule(c purgConfig) (arrive, latency []int64) {
	rng := rand.New(rand.NewPCG(5, uint64(c.n)))
	mu := math.Log(float64(c.latency.p50))
	const z75 = 0.6744897501960817 // the 75th percentile of N(0, 1)
	sigma := (math.Log(float64(c.latency.p75)) - mu) / z75
	arrive, latency = make([]int64, c.n), make([]int64, c.n)
	t := 0.0
	for i := range c.n {
		t += rng.ExpFloat64() * 1e9 / float64(c.rate)
		arrive[i] = int64(t)
		latency[i] = int64(math.Exp(mu + sigma*rng.NormFloat64()))
	}
	return arrive, latency
}

// purgKeyNames returns the keys every request is watched under: purgKeys
// distinct names out of purgKeySpace, named like Kafka's.
func purgKeyNames() []string {
	rng := rand.New(rand.NewPCG(6, 6))
	var keys []string
	for len(keys) < purgKeys {
		k := "fakeKey" + strconv.Itoa(rng.IntN(purgKeySpace))
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// newPurgatoryOn returns a purgatory whose timeouts are on impl's timers.
func newPurgatoryOn(impl Impl) (*purgatory.Purgatory[string], error) {
	switch impl := impl.(type) {
	case *wheelImpl:
		return purgatory.New[string](purgatory.WithTimer(impl.st))
	case runtimeImpl:
		return purgatory.New[string](purgatory.WithAfterFunc(func(d time.Duration, f func()) purgatory.Timer {
			return time.AfterFunc(d, f)
		}))
	default:
		return purgatory.New[string](purgatory.WithAfterFunc(func(d time.Duration, f func()) purgatory.Timer {
			t := &implTimer{impl: impl, f: f}
			t.h = impl.AfterFunc(d, t.fire)
			return t
		}))
	}
}

// An implTimer is a purgatory.Timer on any Impl, including one whose Stop
// cannot tell whether it kept the function from running: a
// compare-and-swap between the function and Stop decides.
type implTimer struct {
	impl  Impl
	h     Handle // written before the purgatory can call Stop
	f     func()
	state atomic.Int32 // 0 armed, 1 fired, 2 stopped
}

func (t *implTimer) fire() {
	if t.state.CompareAndSwap(0, 1) {
		t.f()
	}
}

func (t *implTimer) Stop() bool {
	if !t.state.CompareAndSwap(0, 2) {
		return false
	}
	t.impl.Stop(t.h)
	return true
}

// purgRun is the state one run shares with its requests.
type purgRun struct {
	base    time.Time
	n       int64
	timeout int64         // ns
	ended   atomic.Int64  // requests whose OnComplete ran
	twice   atomic.Int64  // OnComplete calls beyond a request's first
	expired atomic.Int64  // OnExpiration calls
	done    chan struct{} // closed by the n-th first OnComplete
	// expiryLate[i] is written by request i's OnExpiration only, before
	// its OnComplete.
	expiryLate []int64
}

// now returns the monotonic time since base in nanoseconds.
func (r *purgRun) now() int64 { return int64(time.Since(r.base)) }

// A purgOp is Kafka's FakeOperation: it can complete once its completion
// time has come, and ends at the latest at its timeout.
type purgOp struct {
	purgatory.Op
	run         *purgRun
	submitted   int64 // ns since base
	completesAt int64 // ns since base
	i           int32
	completes   atomic.Int32
}

func (o *purgOp) TryComplete() bool {
	if o.run.now() >= o.completesAt {
		return o.ForceComplete()
	}
	return false
}

func (o *purgOp) OnExpiration() {
	o.run.expired.Add(1)
	o.run.expiryLate[o.i] = o.run.now() - (o.submitted + o.run.timeout)
}

func (o *purgOp) OnComplete() {
	if o.completes.Add(1) != 1 {
		o.run.twice.Add(1)
		return
	}
	if o.run.ended.Add(1) == o.run.n {
		close(o.run.done)
	}
}

// A purgCalendar is one generator's part of the completion queue: a ring of
// purgSlot-wide buckets of requests, by completion time. The completion
// goroutine takes the buckets in turn as their time comes.
type purgCalendar struct {
	mu    sync.Mutex // guards slots and next
	slots [][]*purgOp
	next  int64 // the slot the completion goroutine takes next
	mask  int64
}

func newPurgCalendar(timeout time.Duration) *purgCalendar {
	n := int64(1)
	for n < int64(timeout)/purgSlot+2 {
		n *= 2
	}
	return &purgCalendar{slots: make([][]*purgOp, n), next: 1, mask: n - 1}
}

// slotOf returns the slot a request completing at t is due in: the first
// whose end is at or after t.
func slotOf(t int64) int64 { return (t + purgSlot - 1) / purgSlot }

func (c *purgCalendar) add(o *purgOp) {
	k := slotOf(o.completesAt)
	c.mu.Lock()
	k = max(k, c.next) // never into a bucket already taken
	c.slots[k&c.mask] = append(c.slots[k&c.mask], o)
	c.mu.Unlock()
}

// take returns the bucket of the next slot and its slot number, putting
// spare in its place, if that slot has ended by now.
func (c *purgCalendar) take(now int64, spare []*purgOp) ([]*purgOp, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.next
	if k*purgSlot > now {
		return nil, 0, false
	}
	b := c.slots[k&c.mask]
	c.slots[k&c.mask] = spare[:0]
	c.next++
	return b, k, true
}

// completer force-completes the queued requests as their slots end, until
// stop is closed; it returns the most watch-list entries it saw.
func (r *purgRun) completer(pg *purgatory.Purgatory[string], cals []*purgCalendar, stop <-chan struct{}) (maxWatched int) {
	var spare []*purgOp
	wait := time.NewTimer(time.Hour)
	defer wait.Stop()
	for {
		for _, c := range cals {
			for {
				b, k, ok := c.take(r.now(), spare)
				if !ok {
					break
				}
				for j, o := range b {
					if slotOf(o.completesAt) > k {
						c.add(o) // a turn of the ring ahead: not due yet
					} else {
						o.ForceComplete() // false if it expired meanwhile
					}
					b[j] = nil
				}
				spare = b[:0]
			}
		}
		maxWatched = max(maxWatched, pg.Watched())
		next := int64(math.MaxInt64)
		for _, c := range cals {
			c.mu.Lock()
			next = min(next, c.next*purgSlot)
			c.mu.Unlock()
		}
		wait.Reset(time.Duration(next - r.now()))
		select {
		case <-stop:
			return maxWatched
		case <-wait.C:
		}
	}
}

// generate submits the requests g, g+gens, g+2·gens, ... at their arrival
// times, and returns when the last submission returned.
func (r *purgRun) generate(e *Env, g, gens int, pg *purgatory.Purgatory[string], cal *purgCalendar,
	keys []string, arrive, latency, late []int64) (end int64, err error) {
	for i := g; i < len(arrive); i += gens {
		if g == 0 && i&stepMask == 0 {
			e.Step(i)
		}
		at := arrive[i]
		now := r.now()
		if now < at {
			time.Sleep(time.Duration(at - now)) // the schedule, not a synchronisation
			now = r.now()
		}
		late[i] = now - at
		o := &purgOp{
			Op:          purgatory.Op{Timeout: time.Duration(r.timeout)},
			run:         r,
			submitted:   now,
			completesAt: now + latency[i],
			i:           int32(i),
		}
		// After TryCompleteElseWatch: a ForceComplete before it would do
		// nothing, and Kafka's, after it, finds the request watched.
		completed, err := pg.TryCompleteElseWatch(o, keys...)
		if err != nil {
			return 0, fmt.Errorf("request %d: %w", i, err)
		}
		if !completed && latency[i] < r.timeout {
			cal.add(o)
		}
	}
	return r.now(), nil
}

func runPurgatory(e *Env, c purgConfig) error {
	if c.generators < 1 || c.rate < 1 || c.n < 1 || c.n > math.MaxInt32 {
		return fmt.Errorf("purgatory: bad configuration %+v", c)
	}
	e.Phase("schedule", 0)
	arrive, latency := purgSchedule(c)
	keys := purgKeyNames()
	late := make([]int64, c.n)
	r := &purgRun{
		n:          int64(c.n),
		timeout:    int64(c.timeout),
		done:       make(chan struct{}),
		expiryLate: make([]int64, c.n),
	}
	for i := range r.expiryLate {
		r.expiryLate[i] = math.MinInt64 // not expired
	}
	pg, err := newPurgatoryOn(e.Impl)
	if err != nil {
		return err
	}
	cals := make([]*purgCalendar, c.generators)
	for g := range cals {
		cals[g] = newPurgCalendar(c.timeout)
	}
	cleanHeap()

	e.Phase("requests", c.n)
	gc0 := gcCPU()
	u := readUsage()
	r.base = time.Now()
	var (
		wg      sync.WaitGroup
		ends    = make([]int64, c.generators)
		errs    = make([]error, c.generators)
		watched int
	)
	stop, completerDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(completerDone)
		watched = r.completer(pg, cals, stop)
	}()
	for g := range c.generators {
		wg.Go(func() { ends[g], errs[g] = r.generate(e, g, c.generators, pg, cals[g], keys, arrive, latency, late) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		close(stop)
		<-completerDone
		pg.Close()
		return err
	}

	e.PhaseFunc("ending", c.n, r.ended.Load)
	wait := time.NewTimer(c.timeout + purgSlack)
	defer wait.Stop()
	select {
	case <-r.done:
	case <-wait.C:
	}
	s := u.since()
	gc := gcCPU() - gc0
	close(stop)
	<-completerDone
	left := pg.Close()
	e.Close(nil) // stops the timers; no OnComplete starts after it
	if ended := r.ended.Load(); ended != int64(c.n) {
		return fmt.Errorf("%d of %d requests never ended within %v after the timeout (%d still waiting at Close)",
			int64(c.n)-ended, c.n, purgSlack, len(left))
	}
	if tw := r.twice.Load(); tw > 0 {
		return fmt.Errorf("%d extra OnComplete calls: some requests ended twice", tw)
	}

	span := float64(arrive[c.n-1]) / 1e9
	end := float64(slices.Max(ends)) / 1e9
	target, achieved := float64(c.n)/span, float64(c.n)/end
	slices.Sort(late)
	var expLate []int64
	for _, l := range r.expiryLate {
		if l != math.MinInt64 {
			expLate = append(expLate, l)
		}
	}
	slices.Sort(expLate)
	expired := r.expired.Load()
	n := float64(c.n)

	e.Add(Metric{Name: "target/s", Value: target, Kind: Count})
	e.Add(Metric{Name: "achieved/s", Value: achieved, Kind: Count})
	e.Add(Metric{Name: "achieved %", Value: 100 * achieved / target, Kind: Decimal})
	e.Add(Metric{Name: "gen late p99", Value: float64(percentile(late, 99)), Kind: Duration})
	e.Add(Metric{Name: "CPU/req", Value: float64(s.cpu) / n, Kind: Duration, Ratio: true})
	e.Add(Metric{Name: "GC CPU", Value: float64(gc), Kind: Duration, Ratio: true})
	e.Add(Metric{Name: "GC pause", Value: float64(s.gcPause), Kind: Duration})
	e.Add(Metric{Name: "completed", Value: float64(int64(c.n) - expired), Kind: Count})
	e.Add(Metric{Name: "expired", Value: float64(expired), Kind: Count})
	e.Add(Metric{Name: "OnComplete", Value: float64(r.ended.Load() + r.twice.Load()), Kind: Count})
	e.Add(Metric{Name: "expiry late p99", Value: float64(percentile(expLate, 99)), Kind: Duration})
	e.Add(Metric{Name: "max watched", Value: float64(watched), Kind: Count})
	if achieved < 0.99*target {
		e.Warn("achieved %.1f%% of the target rate; the generator was up to %v late", 100*achieved/target,
			time.Duration(late[len(late)-1]).Round(time.Microsecond))
	}
	return nil
}
