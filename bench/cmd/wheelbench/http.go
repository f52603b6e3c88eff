package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	httpConns = SizesParam("http-c", "http: requests in flight at once, each on a keep-alive connection of its own",
		[]int{16}, []int{1000}, []int{10_000})
	httpN = CountParam("http-n", "http: requests timed in each case",
		400, 10_000, 100_000)
	httpCtxs = CountParam("http-ctxs", "http: timeout contexts per request in the fan-out cases: the request's own, and ctxs-1 made and canceled after it",
		4, 32, 32)
	httpSlowEvery = CountParam("http-slow-every", "http: in the timeout case, every k-th request waits for its deadline and gets 503",
		10, 10, 10)
	httpTimeout = DurationParam("http-timeout", "http: each request's timeout, long enough never to fire (derived contexts get half)",
		30*time.Second, 30*time.Second, 30*time.Second)
	httpSlowTimeout = DurationParam("http-slow-timeout", "http: the timeout of the requests that wait for it",
		5*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond)
)

func init() {
	Register(&Workload{
		Name:  "http",
		Order: 60,
		Title: "net/http on loopback, c requests in flight on c keep-alive connections; each handler holds a timeout context while it waits",
		Notes: []string{
			"Server and load generator share the process: c client goroutines each keep one request in flight on a keep-alive " +
				"connection of its own. A handler makes its request's timeout context (-http-timeout, 30s: never fires), waits until " +
				"about c later requests have arrived, cancels it and answers: about c timeouts are pending at any time. " +
				"\"k ctx/req\": the handler also makes, checks and cancels k-1 more timeout contexts on the request's context, as " +
				"calls to backends with timeouts of their own would; \"nested\": on the request's timeout context. \"layered\": as " +
				"middleware and backend calls make them: a WithValue layer over the request's timeout context, a context.WithCancel " +
				"on it, and k-1 context.WithTimeout on that, standard contexts whatever the request's is. \"1 in k times " +
				"out\": every k-th request waits for its short deadline (-http-slow-timeout) and gets 503.",
			"CPU/req: process user+system time ÷ requests: server, client and GC together. ctx p50: the median over requests of " +
				"the wall time the handler spent in WithTimeout, Done, Err and cancel: the timeout handling alone, without the work " +
				"it leaves to other goroutines (the wheel's driver, the runtime's timer cleanup, the GC), which CPU/req counts. " +
				"GC/req: the runtime's estimate of GC CPU time ÷ requests; GCs: GC cycles during the load (at c=10k, one cycle " +
				"more or less moves CPU/req by a few µs). goroutines/req: goroutines started during the load ÷ requests, server " +
				"and client (net/http starts one per request on the server): a context that follows its parent with a goroutine " +
				"shows here. p50, p99: latency seen by the client.",
			"target: at c=10k, the wheel's context costs less CPU per request than context.WithTimeout: CPU/req ratio < 1.00× " +
				"on the c=10k rows; the ctx/req rows magnify the contexts' share of it.",
		},

		Cases: func(p Profile) []Case {
			base := httpConfig{
				n:           httpN.Get(p),
				ctxs:        1,
				timeout:     httpTimeout.Get(p),
				slowTimeout: httpSlowTimeout.Get(p),
			}
			var cases []Case
			for _, c := range httpConns.Get(p) {
				cfgs := []httpConfig{base, base, base, base, base}
				cfgs[1].ctxs = httpCtxs.Get(p)
				cfgs[2].ctxs, cfgs[2].nested = httpCtxs.Get(p), true
				cfgs[3].ctxs, cfgs[3].layered = httpCtxs.Get(p), true
				cfgs[4].slowEvery = httpSlowEvery.Get(p)
				for _, cfg := range cfgs {
					cfg.conns = c
					cases = append(cases, configCase(cfg, c, runHTTP))
				}
			}
			return cases
		},
	})
}

// An httpConfig is one case of the http workload.
type httpConfig struct {
	conns       int           // requests in flight at once, one connection each
	n           int           // requests timed
	ctxs        int           // timeout contexts per request: its own and ctxs-1 more
	nested      bool          // the ctxs-1 derive from the request's, not from its parent
	layered     bool          // the ctxs-1 are standard, under a WithCancel under a WithValue over the request's
	slowEvery   int           // every slowEvery-th request waits for slowTimeout; 0: none
	timeout     time.Duration // a request's timeout; derived contexts get half
	slowTimeout time.Duration
}

func (c httpConfig) label() string {
	s := "c=" + formatCount(c.conns)
	if c.ctxs > 1 {
		s += fmt.Sprintf(", %d ctx/req", c.ctxs)
		switch {
		case c.nested:
			s += " nested"
		case c.layered:
			s += " layered"
		}
	}
	if c.slowEvery > 0 {
		s += fmt.Sprintf(", 1 in %d times out", c.slowEvery)
	}
	return s
}

// httpSpareFDs are the descriptors kept free beyond two per connection and
// those already open: the listener, and whatever the runtime or a profile
// opens meanwhile.
const httpSpareFDs = 32

// httpDials is how many connections the load generator dials at once, so
// that the listener's accept queue (somaxconn, often 4096) never overflows;
// a dropped SYN is retried only after a second.
const httpDials = 128

func runHTTP(e *Env, cfg httpConfig) error {
	tc, ok := e.Impl.(TimeoutContexter)
	if !ok {
		return &SkipError{Reason: "no context API: this workload compares timeout contexts (SystemTimer.WithTimeout, context.WithTimeout)"}
	}
	defer e.Close(nil) // deferred first, so it runs after the server has shut down
	if cfg.conns < 1 || cfg.n < 1 || cfg.ctxs < 1 || cfg.slowEvery < 0 {
		return fmt.Errorf("http: bad case %+v", cfg)
	}
	conns, err := fitConns(e, cfg.conns)
	if err != nil {
		return err
	}

	srv, err := startHTTPServer(tc, cfg, conns)
	if err != nil {
		return err
	}
	defer srv.shutdown()
	lg := newHTTPLoadGen(srv, conns)
	defer lg.close()

	e.PhaseFunc("connect", conns, srv.warmArrived.Load)
	if err := lg.warmUp(); err != nil {
		return err
	}
	if got := lg.dials.Load(); got != int64(conns) {
		return fmt.Errorf("http: %d connections dialed for %d requests in flight", got, conns)
	}

	// The warm-up's garbage is collected now, not during the timed load.
	runtime.GC()
	e.PhaseFunc("requests", cfg.n, lg.done.Load)
	u, gc0, g0 := readUsage(), gcCPU(), httpGoroutinesCreated()
	lat, err := lg.load(cfg)
	s, gc, g := u.since(), gcCPU()-gc0, httpGoroutinesCreated()-g0
	if err != nil {
		return err
	}

	if extra := lg.dials.Load() - int64(conns); extra > 0 {
		e.Warn("%d connections were dialed during the load (a connection was lost): fewer than c were in flight for a while", extra)
	}
	if n, first := srv.logged.get(); n > 0 {
		e.Warn("the server logged %d errors; the first: %s", n, first)
	}
	if got := srv.hold.arrivals(); got != cfg.n {
		e.Warn("the server saw %d requests for %d sent (the client retried some)", got, cfg.n)
	}
	wantSlow := 0
	if cfg.slowEvery > 0 {
		wantSlow = cfg.n / cfg.slowEvery
	}
	if early := srv.early.Load(); early > 0 {
		return fmt.Errorf("http: %d of %d request timeouts fired before their deadline", early, wantSlow)
	}
	if got := srv.expired.Load(); got != int64(wantSlow) {
		e.Warn("%d requests timed out, %d meant to: a %v timeout fired, or a short one did not", got, wantSlow, cfg.timeout)
	}

	n := float64(cfg.n)
	slices.Sort(lat)
	ctxTimes := srv.ctxTimes[:min(int(srv.ctxCount.Load()), len(srv.ctxTimes))]
	slices.Sort(ctxTimes)
	e.Add(Metric{Name: "in flight", Value: float64(conns), Kind: Count})
	e.Add(Metric{Name: "req/s", Value: n / s.wall.Seconds(), Kind: Count})
	e.Add(Metric{Name: "p50", Value: float64(percentile(lat, 50)), Kind: Duration})
	e.Add(Metric{Name: "p99", Value: float64(percentile(lat, 99)), Kind: Duration, Ratio: true})
	e.Add(Metric{Name: "CPU/req", Value: float64(s.cpu) / n, Kind: Duration, Ratio: true})
	e.Add(Metric{Name: "ctx p50", Value: float64(percentile(ctxTimes, 50)), Kind: Duration, Ratio: true})
	e.Add(Metric{Name: "GC/req", Value: float64(gc) / n, Kind: Duration})
	e.Add(Metric{Name: "GCs", Value: float64(s.gcs), Kind: Count})
	e.Add(Metric{Name: "allocs/req", Value: float64(s.mallocs) / n, Kind: Decimal})
	e.Add(Metric{Name: "goroutines/req", Value: float64(g) / n, Kind: Decimal, Ratio: true})
	e.Add(Metric{Name: "timed out", Value: float64(srv.expired.Load()), Kind: Count})
	return nil
}

// httpGoroutinesCreated returns how many goroutines the process has started
// so far.
func httpGoroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// fitConns returns how many of want connections fit the open-file limit,
// warning on e when fewer do, or an error when none does.
func fitConns(e *Env, want int) (int, error) {
	conns, why := want, ""
	if limit, ok := httpFDLimit(); ok {
		conns, why = httpFitConns(want, limit, httpOpenFDs())
	}
	if conns < 1 {
		return 0, errors.New(why)
	}
	if why != "" {
		e.Warn("%s", why)
	}
	return conns, nil
}

// httpFitConns returns how many of want connections fit in limit open
// files with open already open: two descriptors each (the client's end and
// the server's), and httpSpareFDs to spare. If fewer than want fit, it also
// says why.
func httpFitConns(want, limit, open int) (int, string) {
	fit := (limit - open - httpSpareFDs) / 2
	if want <= fit {
		return want, ""
	}
	need := groupDigits(int64(2*want + open + httpSpareFDs))
	if fit < 1 {
		return 0, fmt.Sprintf("c=%s needs %s file descriptors, and the open-file limit (ulimit -n) is %s with %d open: no room for a connection",
			formatCount(want), need, groupDigits(int64(limit)), open)
	}
	return fit, fmt.Sprintf("c=%s needs %s file descriptors (2 a connection, %d open, %d spare); the open-file limit (ulimit -n) is %s: ran c=%s",
		formatCount(want), need, open, httpSpareFDs, groupDigits(int64(limit)), groupDigits(int64(fit)))
}

// httpOpenFDs returns the number of open file descriptors of the process.
func httpOpenFDs() int {
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if ents, err := os.ReadDir(dir); err == nil {
			return len(ents)
		}
	}
	return httpSpareFDs // unknown: assume some
}

// An httpServer serves the workload on a loopback port.
type httpServer struct {
	tc  TimeoutContexter
	cfg httpConfig

	srv    *http.Server
	url    string
	served chan error     // Serve's result
	conns  sync.WaitGroup // server connections not yet closed; see connState
	logged httpErrorLog

	// The warm-up: every /warm request waits until conns of them have
	// arrived, so that the client opens conns connections.
	warmWant    int64
	warmArrived atomic.Int64
	warmAll     chan struct{} // closed when warmArrived reaches warmWant

	hold httpHoldQueue
	// ctxTimes[i] is the wall time the i-th request's handler spent in
	// its timeout contexts' calls; ctxCount counts the requests.
	ctxTimes []int64
	ctxCount atomic.Int64
	expired  atomic.Int64 // requests whose context reached its deadline
	early    atomic.Int64 // of which before the deadline

	abortOnce sync.Once
	aborted   chan struct{} // closed by abort
}

func startHTTPServer(tc TimeoutContexter, cfg httpConfig, conns int) (*httpServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &httpServer{
		tc:       tc,
		cfg:      cfg,
		url:      "http://" + ln.Addr().String(),
		served:   make(chan error, 1),
		warmWant: int64(conns),
		warmAll:  make(chan struct{}),
		aborted:  make(chan struct{}),
		ctxTimes: make([]int64, cfg.n),
	}
	// The hold queue keeps all but a few of the requests in flight waiting,
	// and the rest on their way: enough to keep the processors busy.
	moving := max(conns/16, min(conns/2, 64))
	s.hold.init(conns-moving, cfg.n)
	// No timeouts on the server: each would put a runtime timer on every
	// connection, beside the contexts under test.
	s.srv = &http.Server{
		Handler:   s,
		ErrorLog:  log.New(&s.logged, "", 0),
		ConnState: s.connState,
	}
	go func() { s.served <- s.srv.Serve(ln) }()
	return s, nil
}

// connState counts the server's connections, so that shutdown can wait
// until every one is closed.
func (s *httpServer) connState(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		s.conns.Add(1)
	case http.StateClosed, http.StateHijacked:
		s.conns.Done()
	}
}

// abort releases every request the server holds and holds no more: the
// load generator failed.
func (s *httpServer) abort() {
	s.abortOnce.Do(func() {
		close(s.aborted)
		s.hold.releaseAll()
	})
}

// shutdown closes the listener and every connection, and returns once the
// server's goroutines are done with them. The client has closed its own
// connections first (httpLoadGen.close), so they are all idle.
func (s *httpServer) shutdown() {
	s.abort()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		s.srv.Close()
	}
	<-s.served
	s.conns.Wait()
}

var (
	httpOK         = []byte("ok\n")
	httpTimeout503 = []byte("timeout\n")
)

func (s *httpServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/warm":
		if s.warmArrived.Add(1) == s.warmWant {
			close(s.warmAll)
		}
		select {
		case <-s.warmAll:
		case <-s.aborted:
		case <-r.Context().Done():
		}
		w.Write(httpOK)
	case "/req":
		s.serveRequest(w, r)
	case "/slow":
		s.serveSlow(w, r)
	default:
		http.NotFound(w, r)
	}
}

// serveRequest is a request that completes in time: its handler makes the
// request's timeout context, waits in the hold queue (as for a backend),
// makes and cancels ctxs-1 more (as calls with timeouts of their own would:
// on the request's context, or, nested, on its timeout context), cancels
// its own, and answers.
func (s *httpServer) serveRequest(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	ctx, cancel := s.tc.WithTimeout(r.Context(), s.cfg.timeout)
	done := ctx.Done()
	spent := time.Since(t0)

	select {
	case <-s.hold.arrive():
	case <-done:
	}

	t1 := time.Now()
	switch {
	case s.cfg.layered:
		s.backendCalls(ctx)
	default:
		parent := r.Context()
		if s.cfg.nested {
			parent = ctx
		}
		for range s.cfg.ctxs - 1 {
			sub, cancelSub := s.tc.WithTimeout(parent, s.cfg.timeout/2)
			select {
			case <-sub.Done():
			default:
			}
			cancelSub()
		}
	}
	err := ctx.Err()
	cancel()
	s.record(spent + time.Since(t1))

	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			s.expired.Add(1)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write(httpTimeout503)
		return
	}
	w.Write(httpOK)
}

// httpRequestIDKey is the key of the value the layered case's middleware
// puts in the request's context.
type httpRequestIDKey struct{}

// backendCalls derives from the request's timeout context what middleware
// and backend calls make of it: a value layer (a request ID), a
// context.WithCancel on it (an errgroup's), and ctxs-1 standard timeouts on
// that, each checked and canceled, as a backend client would.
func (s *httpServer) backendCalls(ctx context.Context) {
	mw, cancelMW := context.WithCancel(context.WithValue(ctx, httpRequestIDKey{}, s.ctxCount.Load()))
	for range s.cfg.ctxs - 1 {
		sub, cancelSub := context.WithTimeout(mw, s.cfg.timeout/2)
		select {
		case <-sub.Done():
		default:
		}
		cancelSub()
	}
	cancelMW()
}

// record keeps the time a request's handler spent in its contexts' calls.
func (s *httpServer) record(d time.Duration) {
	if i := s.ctxCount.Add(1) - 1; i < int64(len(s.ctxTimes)) {
		s.ctxTimes[i] = int64(d)
	}
}

// serveSlow is a request whose handler waits for its deadline, and answers
// 503, as http.TimeoutHandler would.
func (s *httpServer) serveSlow(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	ctx, cancel := s.tc.WithTimeout(r.Context(), s.cfg.slowTimeout)
	done := ctx.Done()
	spent := time.Since(t0)

	s.hold.arriveSlow()
	<-done
	waited := time.Since(t0)
	s.hold.slowDone()

	t1 := time.Now()
	err := ctx.Err()
	cancel()
	s.record(spent + time.Since(t1))

	if errors.Is(err, context.DeadlineExceeded) {
		s.expired.Add(1)
		if waited < s.cfg.slowTimeout {
			s.early.Add(1)
		}
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write(httpTimeout503)
}

// An httpHoldQueue keeps requests waiting, first in first out, so that
// about limit of them are held at any time: each arrival beyond that
// releases the oldest. It holds requests without a timer of its own, so
// that the only timers are the contexts under test. Requests that wait for
// their own deadline (slow ones) count against the limit, so that as many
// requests keep moving between client and server. The arrival of the last
// of total requests releases all; so does releaseAll.
type httpHoldQueue struct {
	// mu guards every field. Closing a channel under it never blocks.
	mu       sync.Mutex
	limit    int             // held + slow, at most
	total    int             // requests expected
	arrived  int             // requests that called arrive or arriveSlow
	held     []chan struct{} // a ring of the held requests' release channels
	head     int             // the oldest's index in held
	count    int             // how many are held
	slow     int             // slow requests waiting for their deadline
	finished bool            // no request is held any more, nor will be
}

// httpClosedChan is what arrive returns once nothing is held any more.
var httpClosedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (q *httpHoldQueue) init(limit, total int) {
	q.limit, q.total = max(limit, 1), total
	q.held = make([]chan struct{}, q.limit+1)
}

// arrive registers a request, and returns the channel that is closed when
// it is released.
func (q *httpHoldQueue) arrive() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.arrivedLocked()
	if q.finished {
		return httpClosedChan
	}
	ch := make(chan struct{})
	q.held[(q.head+q.count)%len(q.held)] = ch
	q.count++
	q.trimLocked()
	return ch
}

// arriveSlow registers a request that waits for its deadline and then
// calls slowDone: it is not held, but counts against the limit meanwhile.
func (q *httpHoldQueue) arriveSlow() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.arrivedLocked()
	q.slow++
	q.trimLocked()
}

func (q *httpHoldQueue) slowDone() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.slow--
}

// arrivedLocked counts an arrival; the last one releases every request.
func (q *httpHoldQueue) arrivedLocked() {
	q.arrived++
	if q.arrived >= q.total {
		q.releaseAllLocked()
	}
}

// trimLocked releases the oldest held requests until held and slow ones
// are within the limit.
func (q *httpHoldQueue) trimLocked() {
	for q.count > 0 && q.count+q.slow > q.limit {
		q.releaseOldestLocked()
	}
}

func (q *httpHoldQueue) releaseOldestLocked() {
	close(q.held[q.head])
	q.held[q.head] = nil
	q.head = (q.head + 1) % len(q.held)
	q.count--
}

func (q *httpHoldQueue) releaseAll() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.releaseAllLocked()
}

func (q *httpHoldQueue) releaseAllLocked() {
	q.finished = true
	for q.count > 0 {
		q.releaseOldestLocked()
	}
}

func (q *httpHoldQueue) arrivals() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.arrived
}

// An httpErrorLog counts what the server logs, and keeps the first line.
type httpErrorLog struct {
	mu    sync.Mutex // guards n and first
	n     int
	first string
}

func (l *httpErrorLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		l.first = strings.TrimSpace(string(p))
	}
	l.n++
	return len(p), nil
}

func (l *httpErrorLog) get() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n, l.first
}

// A httpLoadGen is the client: conns goroutines, each with one request in
// flight at a time on a keep-alive connection of its own.
type httpLoadGen struct {
	srv    *httpServer
	conns  int
	tr     *http.Transport
	client *http.Client
	dials  atomic.Int64 // connections dialed
	done   atomic.Int64 // requests of the load answered
}

func newHTTPLoadGen(srv *httpServer, conns int) *httpLoadGen {
	g := &httpLoadGen{srv: srv, conns: conns}
	dialing := make(chan struct{}, httpDials)
	var d net.Dialer
	g.tr = &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialing <- struct{}{}
			defer func() { <-dialing }()
			g.dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
		// Keep every connection, and open no more than one per request
		// in flight: IdleConnTimeout 0 keeps idle ones for ever.
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		DisableCompression:  true,
	}
	g.client = &http.Client{Transport: g.tr}
	return g
}

// close closes the client's connections.
func (g *httpLoadGen) close() { g.tr.CloseIdleConnections() }

// warmUp opens the connections: conns requests to /warm, which the server
// answers once all have arrived, so that each needs a connection of its own.
func (g *httpLoadGen) warmUp() error {
	var (
		wg       sync.WaitGroup
		firstErr error
		errOnce  sync.Once
	)
	for range g.conns {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodGet, g.srv.url+"/warm", nil)
			if err == nil {
				_, err = g.get(req)
			}
			if err != nil {
				errOnce.Do(func() { firstErr = fmt.Errorf("http: warm-up: %w", err) })
				g.srv.abort()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// load sends cfg.n requests, conns at a time, and returns every request's
// latency in ns. Every slowEvery-th request goes to /slow.
func (g *httpLoadGen) load(cfg httpConfig) ([]int64, error) {
	var (
		wg       sync.WaitGroup
		next     atomic.Int64
		lat      = make([]int64, cfg.n)
		failures atomic.Int64
		firstErr error
		errOnce  sync.Once
	)
	fail := func(err error) {
		failures.Add(1)
		errOnce.Do(func() { firstErr = err })
		g.srv.abort() // release the held requests: they would wait for their timeout
	}
	for range min(g.conns, cfg.n) {
		wg.Go(func() {
			// A request may be sent again once its response's body is
			// closed.
			fast, err1 := http.NewRequest(http.MethodGet, g.srv.url+"/req", nil)
			slow, err2 := http.NewRequest(http.MethodGet, g.srv.url+"/slow", nil)
			if err := errors.Join(err1, err2); err != nil {
				fail(err)
				return
			}
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.n {
					return
				}
				req, want := fast, http.StatusOK
				if cfg.slowEvery > 0 && i%cfg.slowEvery == cfg.slowEvery-1 {
					req, want = slow, http.StatusServiceUnavailable
				}
				t0 := time.Now()
				status, err := g.get(req)
				lat[i] = int64(time.Since(t0))
				g.done.Add(1)
				switch {
				case err != nil:
					fail(err)
				case status != want:
					fail(fmt.Errorf("%s: status %d, want %d", req.URL.Path, status, want))
				}
			}
		})
	}
	wg.Wait()
	if n := failures.Load(); n > 0 {
		return nil, fmt.Errorf("http: %d of %d requests failed; the first: %w", n, cfg.n, firstErr)
	}
	return lat, nil
}

// get sends req and reads the whole response, which puts its connection
// back among the idle ones before it returns.
func (g *httpLoadGen) get(req *http.Request) (int, error) {
	res, err := g.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, err
}
