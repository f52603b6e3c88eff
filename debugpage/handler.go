package debugpage

import (
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/purgatory"
)

// Defaults.
const (
	defaultInterval = time.Second
	// samples is how many samples the history holds: five minutes at the
	// default interval.
	samples = 300
	// idleSamples is how many intervals the sampler runs on after the last
	// request, and at least minIdle: long enough to span a few refreshes
	// of an open page, so that it keeps its history.
	idleSamples = 60
	minIdle     = 30 * time.Second
	// topKeys is how many keys the purgatory chart shows.
	topKeys = 20
)

// An Option configures a Handler in New.
type Option interface {
	apply(*config)
}

type config struct {
	interval time.Duration
	clock    clock.Clock
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithInterval sets how often the sampler takes a sample while someone
// looks: every second by default. The history holds 300 samples (five
// minutes at the default); the page refreshes every 5 intervals, but not
// more often than every 2 seconds. An interval that is not positive makes
// New return an error.
func WithInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.interval = d })
}

// WithClock sets the clock the sampler ticks on and stamps its samples
// with, for tests, as [timingwheel.WithClock] does: clock.NewMock() makes
// a test take samples when it says so, minutes of them in a moment. The
// figures sampled are the sources' own. Default clock.New(), the real
// clock. A nil clock makes New return an error.
func WithClock(c clock.Clock) Option {
	return optionFunc(func(cf *config) { cf.clock = c })
}

// A Handler serves the page of the SystemTimers and Purgatories added to
// it; see the package doc. It is safe for concurrent use.
type Handler struct {
	interval time.Duration // immutable
	idle     time.Duration // immutable: how long the sampler runs on after the last request
	clock    clock.Clock   // immutable

	// mu guards everything below, and the histories of the sources.
	mu      sync.Mutex
	timers  []*timerSource
	purgs   []*purgatorySource
	running bool          // the sampler goroutine runs
	seen    time.Time     // the last request's time
	done    chan struct{} // closed when the running sampler has exited
	stop    chan struct{} // closed by Close to stop it; nil once closed
}

// New returns a Handler with nothing added, or an error naming the first
// invalid option. It starts no goroutine.
func New(opts ...Option) (*Handler, error) {
	c := config{interval: defaultInterval, clock: clock.New()}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("debugpage: nil Option")
		}
		o.apply(&c)
	}
	switch {
	case c.interval <= 0:
		return nil, fmt.Errorf("debugpage: WithInterval(%v): the interval must be positive", c.interval)
	case c.clock == nil:
		return nil, errors.New("debugpage: WithClock(nil)")
	}
	return &Handler{interval: c.interval, idle: max(minIdle, idleSamples*c.interval), clock: c.clock}, nil
}

// AddTimer adds st to h under name, as expvarstats publishes it. It panics
// if name is empty or already added.
func (h *Handler) AddTimer(name string, st *timingwheel.SystemTimer) {
	if st == nil {
		panic("debugpage: AddTimer(" + name + ", nil)")
	}
	h.add(name, func() { h.timers = append(h.timers, &timerSource{name: name, st: st}) })
}

// AddPurgatory adds p to h under name. It panics if name is empty or
// already added. (A function, not a method: methods cannot have type
// parameters.)
func AddPurgatory[K comparable](h *Handler, name string, p *purgatory.Purgatory[K]) {
	if p == nil {
		panic("debugpage: AddPurgatory(" + name + ", nil)")
	}
	top := func(n int) []keyCount {
		kc := p.TopKeys(n)
		out := make([]keyCount, len(kc))
		for i, c := range kc {
			out[i] = keyCount{Key: fmt.Sprint(c.Key), Watched: c.Watched}
		}
		return out
	}
	h.add(name, func() { h.purgs = append(h.purgs, &purgatorySource{name: name, stats: p.Stats, top: top}) })
}

// add runs append under mu if name is new.
func (h *Handler) add(name string, append func()) {
	if name == "" {
		panic("debugpage: empty name")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hasLocked(name) {
		panic("debugpage: " + name + " added twice")
	}
	append()
}

// ServeHTTP serves the page at any path under the mount point that ends in
// a slash, and its data as JSON at "json" beside it; a query name=N shows
// only the SystemTimer or Purgatory named N. Other paths are not found, a
// method other than GET or HEAD is not allowed.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "debugpage: method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var asJSON bool
	switch p := r.URL.Path; {
	case p == "" || strings.HasSuffix(p, "/"):
	case path.Base(p) == "json":
		asJSON = true
	default:
		http.NotFound(w, r)
		return
	}
	name := r.URL.Query().Get("name")
	if !h.has(name) {
		http.Error(w, "debugpage: no SystemTimer or Purgatory named "+strconv.Quote(name), http.StatusNotFound)
		return
	}
	h.looked()
	d := h.data(name)
	w.Header().Set("Cache-Control", "no-store")
	if asJSON {
		writeJSON(w, d)
		return
	}
	writeHTML(w, d)
}

// has reports whether name is empty or names a source.
func (h *Handler) has(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return name == "" || h.hasLocked(name)
}

// hasLocked reports whether name names a source. Called with mu held.
func (h *Handler) hasLocked(name string) bool {
	return slices.ContainsFunc(h.timers, func(s *timerSource) bool { return s.name == name }) ||
		slices.ContainsFunc(h.purgs, func(s *purgatorySource) bool { return s.name == name })
}

// looked notes a request, and starts the sampler if it is not running.
func (h *Handler) looked() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = h.clock.Now()
	if h.running {
		return
	}
	h.running = true
	h.done, h.stop = make(chan struct{}), make(chan struct{})
	go h.sample(h.done, h.stop)
}

// Close stops the sampler, if it runs, drops its histories, and waits
// until its goroutine has exited: for a program that shuts down, or a test
// that checks for leaked goroutines. A later request starts it again.
func (h *Handler) Close() {
	h.mu.Lock()
	done, running := h.done, h.running
	if h.stop != nil {
		close(h.stop)
		h.stop = nil
	}
	h.mu.Unlock()
	if running {
		<-done
	}
}

// Default returns the Handler that Register and RegisterPurgatory add to.
// It mounts nothing: Register and RegisterPurgatory mount it. A program
// that serves its debug pages on a mux of its own, not on the
// http.DefaultServeMux that it may serve to everyone, mounts Default there
// and never calls Register.
func Default() *Handler { return defaultHandler() }

var (
	defaultHandler = sync.OnceValue(func() *Handler {
		h, _ := New() // no options: no error
		return h
	})
	mountDefault = sync.OnceFunc(func() { http.Handle("/debug/timingwheel/", Default()) })
)

// Register adds st under name to the Default handler, and mounts that on
// http.DefaultServeMux at /debug/timingwheel/ the first time it or
// RegisterPurgatory is called, as net/http/pprof serves /debug/pprof/.
// Call it at start-up, once per name.
func Register(name string, st *timingwheel.SystemTimer) {
	mountDefault()
	Default().AddTimer(name, st)
}

// RegisterPurgatory adds p under name to the Default handler, and mounts
// that as Register does.
func RegisterPurgatory[K comparable](name string, p *purgatory.Purgatory[K]) {
	mountDefault()
	AddPurgatory(Default(), name, p)
}
