package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/idleconn"
)

var (
	idleConnsC = SizesParam("idleconns-c", "idleconns: loopback connections, each with a client exchanging messages",
		[]int{16}, []int{1000}, []int{10_000})
	idleConnsFor = DurationParam("idleconns-for", "idleconns: the measured window in which the clients exchange messages",
		600*time.Millisecond, 3*time.Second, 5*time.Second)
	idleConnsIdle = DurationParam("idleconns-idle", "idleconns: the server's idle timeout per connection (far above an active connection's gaps)",
		300*time.Millisecond, time.Second, 2*time.Second)
	idleConnsSlack = DurationParam("idleconns-slack", "idleconns: the slack of the slack-mode case",
		50*time.Millisecond, 500*time.Millisecond, time.Second)
	idleConnsIdleEvery = CountParam("idleconns-idle-every", "idleconns: every k-th connection falls silent during the window",
		4, 25, 25)
)

// idleConnsMsg is the size of a message.
const idleConnsMsg = 32

func init() {
	Register(&Workload{
		Name:  "idleconns",
		Order: 70,
		Title: "c loopback connections exchanging small messages, a few percent falling silent; the server gives every connection an idle timeout",
		Notes: []string{
			"The server echoes each connection on a goroutine of its own. timingwheel row: every connection wrapped by " +
				"idleconn.Listen on the library's SystemTimer (\"exact\": each Read and Write that moves data pushes the timer back, " +
				"a clock read and a CAS; \"slack\": it only notes the activity, and a check every slack cuts the connection within " +
				"idle+slack+2 ticks). time.AfterFunc row: the baseline on the runtime's timers, conn.SetReadDeadline(time.Now().Add(idle)) " +
				"before every Read, the same in both cases. go-zero has no deadline for a net.Conn.",
			"c clients each exchange 32-byte messages in a closed loop over the window; every k-th falls silent at a random " +
				"moment of its first part and waits for the server to cut it. msgs/s and CPU/msg (process user+system time, client and " +
				"server together) over the window. late: when the server's Read failed − (its last Write's start + idle), over the " +
				"silent connections; the run fails if one was cut early.",
			"target: less CPU per message than SetReadDeadline (CPU/msg ratio < 1.00× on the time.AfterFunc row); silent connections " +
				"cut within idle + 1 tick (exact), none early.",
		},

		Cases: func(p Profile) []Case {
			base := idleConnsConfig{
				window:    idleConnsFor.Get(p),
				idle:      idleConnsIdle.Get(p),
				idleEvery: idleConnsIdleEvery.Get(p),
			}
			var cases []Case
			for _, c := range idleConnsC.Get(p) {
				for _, slack := range []time.Duration{0, idleConnsSlack.Get(p)} {
					cfg := base
					cfg.conns, cfg.slack = c, slack
					cases = append(cases, configCase(cfg, c, runIdleConns))
				}
			}
			return cases
		},
	})
}

// An idleConnsConfig is one case of the idleconns workload.
type idleConnsConfig struct {
	conns     int
	window    time.Duration
	idle      time.Duration
	slack     time.Duration // the wrapper's slack mode; 0: exact
	idleEvery int           // every idleEvery-th connection falls silent
}

func (c idleConnsConfig) label() string {
	s := "c=" + formatCount(c.conns) + ", idle " + c.idle.String()
	if c.slack > 0 {
		return s + ", slack " + c.slack.String()
	}
	return s + ", exact"
}

// idleConnsDeadline is how the server bounds its connections' idleness.
type idleConnsDeadline int

const (
	viaWrapper         idleConnsDeadline = iota // idleconn.Listen on the wheel
	viaSetReadDeadline                          // SetReadDeadline before every Read
)

func runIdleConns(e *Env, cfg idleConnsConfig) error {
	var (
		st  *timingwheel.SystemTimer
		how idleConnsDeadline
	)
	switch impl := e.Impl.(type) {
	case *wheelImpl:
		st, how = impl.st, viaWrapper
	case runtimeImpl:
		how = viaSetReadDeadline
	default:
		return &SkipError{Reason: "no deadline for a net.Conn: this workload compares idleconn on this library's wheel with SetReadDeadline on the runtime's timers (the time.AfterFunc row)"}
	}
	defer e.Close(nil) // deferred first, so it runs after the server has shut down
	if cfg.conns < 1 || cfg.idleEvery < 1 || cfg.window <= 0 || cfg.idle <= 0 || cfg.slack < 0 {
		return fmt.Errorf("idleconns: bad case %+v", cfg)
	}
	conns, err := fitConns(e, cfg.conns)
	if err != nil {
		return err
	}

	srv, err := startIdleConnsServer(st, how, cfg)
	if err != nil {
		return err
	}
	defer srv.shutdown()
	cl := newIdleConnsClients(srv.ln.Addr().String(), conns, cfg)
	defer cl.close()

	e.PhaseFunc("connect", conns, cl.ready.Load)
	if err := cl.connect(); err != nil {
		return err
	}
	runtime.GC() // the set-up's garbage is collected now, not in the window

	e.Phase("messages for "+cfg.window.String(), 0) // no redraws during the window
	u := readUsage()
	msgs0 := cl.msgs.Load()
	cl.startAt = time.Now()
	close(cl.start)
	time.Sleep(cfg.window)
	msgs := cl.msgs.Load() - msgs0
	s := u.since()
	cl.stop.Store(true)

	e.PhaseFunc("waiting for the silent connections to be cut", cl.silent, cl.cut.Load)
	clientErr := cl.wait()
	srv.shutdown()
	late, early, activeCut := srv.outcome()
	// A connection cut while its client was active is the machine's
	// doing (the client stalled for the idle time): a warning below. Any
	// other failure fails the run.
	if fails, broken := cl.fails.Load(), cl.broken.Load(); fails > broken || broken > int64(activeCut) {
		return clientErr
	}
	if msgs == 0 {
		return errors.New("idleconns: no message was exchanged in the window")
	}
	if early > 0 {
		return fmt.Errorf("idleconns: %d connections were cut before their idle time (silent ones cut late: %d)", early, len(late))
	}
	if len(late) != cl.silent {
		return fmt.Errorf("idleconns: %d of %d silent connections were cut by their idle timeout", len(late), cl.silent)
	}
	if activeCut > 0 {
		e.Warn("%d active connections were cut: their clients were slower than the idle timeout (an overloaded machine?); raise -idleconns-idle", activeCut)
	}
	slices.Sort(late)
	n := float64(msgs)
	e.Add(Metric{Name: "conns", Value: float64(conns), Kind: Count})
	e.Add(Metric{Name: "msgs/s", Value: n / s.wall.Seconds(), Kind: Count})
	e.Add(Metric{Name: "CPU/msg", Value: float64(s.cpu) / n, Kind: Duration, Ratio: true})
	e.Add(Metric{Name: "allocs/msg", Value: float64(s.mallocs) / n, Kind: Decimal})
	e.Add(Metric{Name: "GCs", Value: float64(s.gcs), Kind: Count})
	e.Add(Metric{Name: "cut", Value: float64(len(late)), Kind: Count})
	if len(late) > 0 {
		e.Add(Metric{Name: "late min", Value: float64(late[0]), Kind: Duration})
		e.Add(Metric{Name: "late p50", Value: float64(percentile(late, 50)), Kind: Duration})
		e.Add(Metric{Name: "late p99", Value: float64(percentile(late, 99)), Kind: Duration})
		e.Add(Metric{Name: "late max", Value: float64(late[len(late)-1]), Kind: Duration})
	}
	return nil
}

// An idleConnsServer echoes on every connection it accepts.
type idleConnsServer struct {
	ln   net.Listener
	how  idleConnsDeadline
	idle time.Duration

	acceptDone chan struct{}
	conns      sync.WaitGroup
	once       sync.Once

	mu        sync.Mutex // guards the fields below
	late      []int64    // silent connections: cut − (last Write's start + idle), ns
	early     int        // connections cut before their idle time, silent or not
	activeCut int        // active connections cut
}

func startIdleConnsServer(st *timingwheel.SystemTimer, how idleConnsDeadline, cfg idleConnsConfig) (*idleConnsServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if how == viaWrapper {
		var opts []idleconn.Option
		if cfg.slack > 0 {
			opts = append(opts, idleconn.WithSlack(cfg.slack))
		}
		wrapped, err := idleconn.Listen(ln, st, cfg.idle, opts...)
		if err != nil {
			ln.Close()
			return nil, err
		}
		ln = wrapped
	}
	s := &idleConnsServer{ln: ln, how: how, idle: cfg.idle, acceptDone: make(chan struct{})}
	go s.acceptLoop()
	return s, nil
}

func (s *idleConnsServer) acceptLoop() {
	defer close(s.acceptDone)
	for {
		c, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			//lint:ignore SA1019 as http.Server does: a full wheel is temporary
			if errors.As(err, &ne) && ne.Temporary() {
				time.Sleep(time.Millisecond)
				continue
			}
			return // closed
		}
		s.conns.Go(func() { s.echo(c) })
	}
}

// echo echoes what the client sends until it hangs up or the connection is
// cut. A client that will fall silent says so in its first message. The
// server reads the clock before each Write (which the wrapper's push-back
// follows, and the baseline's SetReadDeadline too): for the silent ones, to
// measure how late the cut comes; for the others, to tell a cut of a
// client the machine stalled for the idle time (allowed, with a warning)
// from one cut early (a failure). The same read in both rows; about 30ns
// against the tens of µs of a message's round trip.
func (s *idleConnsServer) echo(c net.Conn) {
	defer c.Close()
	var (
		buf     [idleConnsMsg]byte
		watched bool
		last    time.Time
	)
	for first := true; ; first = false {
		if s.how == viaSetReadDeadline {
			c.SetReadDeadline(time.Now().Add(s.idle))
		}
		n, err := c.Read(buf[:])
		if err != nil {
			s.ended(err, watched, last)
			return
		}
		if first {
			watched = buf[0] == 's'
		}
		last = time.Now()
		if _, err := c.Write(buf[:n]); err != nil {
			s.ended(err, watched, last)
			return
		}
	}
}

func (s *idleConnsServer) ended(err error, watched bool, last time.Time) {
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		return // the client hung up
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case now.Sub(last) < s.idle:
		s.early++ // active or silent: a defect either way
	case !watched:
		s.activeCut++ // its client stalled for the idle time
	default:
		s.late = append(s.late, int64(now.Sub(last)-s.idle))
	}
}

// outcome returns the lateness of the silent connections' cuts, sorted
// later, and the counts of early cuts and of active connections cut.
func (s *idleConnsServer) outcome() (late []int64, early, activeCut int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.late, s.early, s.activeCut
}

// shutdown closes the listener and waits for every connection's goroutine.
func (s *idleConnsServer) shutdown() {
	s.once.Do(func() {
		s.ln.Close()
		<-s.acceptDone
	})
	s.conns.Wait()
}

// idleConnsClients are the load: a goroutine and a connection per client.
type idleConnsClients struct {
	addr   string
	n      int
	cfg    idleConnsConfig
	silent int // clients that fall silent

	start   chan struct{} // closed when the window starts
	startAt time.Time     // written before start is closed
	stop    atomic.Bool   // set when it ends
	ready   atomic.Int64  // clients connected and warmed up
	msgs    atomic.Int64  // messages exchanged since the warm-up
	cut     atomic.Int64  // silent clients whose connection the server cut
	broken  atomic.Int64  // connections that failed while active
	fails   atomic.Int64  // calls of fail

	wg       sync.WaitGroup
	mu       sync.Mutex // guards firstErr and conns
	firstErr error
	conns    []net.Conn
}

func newIdleConnsClients(addr string, n int, cfg idleConnsConfig) *idleConnsClients {
	cl := &idleConnsClients{addr: addr, n: n, cfg: cfg, start: make(chan struct{})}
	for i := range n {
		if i%cfg.idleEvery == cfg.idleEvery-1 {
			cl.silent++
		}
	}
	return cl
}

func (cl *idleConnsClients) fail(err error) {
	cl.fails.Add(1)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.firstErr == nil {
		cl.firstErr = err
	}
}

// connect dials every connection, httpDials at a time, and has each client
// make one exchange, so that every server goroutine is running before the
// window; the clients then go on exchanging messages.
func (cl *idleConnsClients) connect() error {
	rng := rand.New(rand.NewPCG(12, uint64(cl.n)))
	// A silent client falls silent at a random moment of the part of the
	// window that leaves it time to be cut within the window.
	silentSpan := max(cl.cfg.window-cl.cfg.idle-cl.cfg.slack, 0)
	dialing := make(chan struct{}, httpDials)
	var warm sync.WaitGroup
	for i := range cl.n {
		silent := i%cl.cfg.idleEvery == cl.cfg.idleEvery-1
		var silentAt time.Duration
		if silent && silentSpan > 0 {
			silentAt = time.Duration(rng.Int64N(int64(silentSpan)))
		}
		warm.Add(1)
		cl.wg.Go(func() { cl.run(silent, silentAt, dialing, &warm) })
	}
	warm.Wait()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.firstErr
}

// run is one client.
func (cl *idleConnsClients) run(silent bool, silentAt time.Duration, dialing chan struct{}, warm *sync.WaitGroup) {
	warmed := false
	defer func() {
		if !warmed {
			warm.Done()
		}
	}()
	dialing <- struct{}{}
	c, err := net.Dial("tcp", cl.addr)
	<-dialing
	if err != nil {
		cl.fail(fmt.Errorf("idleconns: dial: %w", err))
		return
	}
	cl.mu.Lock()
	cl.conns = append(cl.conns, c)
	cl.mu.Unlock()
	defer c.Close()

	var msg, back [idleConnsMsg]byte
	copy(msg[:], "active client")
	if silent {
		copy(msg[:], "silent client")
	}
	exchange := func() error {
		if _, err := c.Write(msg[:]); err != nil {
			return err
		}
		_, err := io.ReadFull(c, back[:])
		return err
	}
	if err := exchange(); err != nil {
		cl.fail(fmt.Errorf("idleconns: warm-up exchange: %w", err))
		return
	}
	cl.ready.Add(1)
	warmed = true
	warm.Done()

	// No pause between the warm-up and the window: a pause would be idle
	// time. A silent client falls silent silentAt into the window.
	for !cl.stop.Load() {
		if silent && cl.started() && time.Since(cl.startAt) >= silentAt {
			break
		}
		if err := exchange(); err != nil {
			// The server cut it (it counts those), or something broke.
			if !cl.stop.Load() {
				cl.broken.Add(1)
				cl.fail(fmt.Errorf("idleconns: a connection failed while active: %w", err))
			}
			return
		}
		cl.msgs.Add(1)
	}
	if !silent {
		return // hang up
	}
	// Silent: wait for the server to cut the connection, and no longer
	// than the window, the idle time, the slack and a minute.
	c.SetReadDeadline(time.Now().Add(cl.cfg.window + cl.cfg.idle + cl.cfg.slack + time.Minute))
	if _, err := c.Read(back[:]); errors.Is(err, io.EOF) {
		cl.cut.Add(1)
	} else {
		cl.fail(fmt.Errorf("idleconns: waiting for the server to cut a silent connection: %v", err))
	}
}

// started reports whether the window has started.
func (cl *idleConnsClients) started() bool {
	select {
	case <-cl.start:
		return true
	default:
		return false
	}
}

// wait waits for every client to finish.
func (cl *idleConnsClients) wait() error {
	cl.wg.Wait()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.firstErr
}

// close ends every client: on a failed run, it closes their connections
// and waits for them.
func (cl *idleConnsClients) close() {
	cl.stop.Store(true)
	select {
	case <-cl.start:
	default:
		close(cl.start)
	}
	cl.mu.Lock()
	for _, c := range cl.conns {
		c.Close()
	}
	cl.mu.Unlock()
	cl.wg.Wait()
}
