package idleconn_test

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/idleconn"
	"github.com/go-timingwheel/timingwheel/internal/isolate"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/go-timingwheel/timingwheel/internal/wheeltest"
)

// The concurrency suite of idleconn: Close racing Read and Write on other
// goroutines, and the idle timer firing, on many net.Pipe connections at
// once, each body in a child process (Close racing a Read's Reset of the
// timer used to corrupt the wheel's lists: a race report in every run under
// -race, a nil dereference in some runs without it) with
// GOMAXPROCS above the core count. TestMain's goleak check fails the child
// if a goroutine is left.

// concTimeout bounds a child process: a hang fails the test then.
const concTimeout = 2 * time.Minute

// stressFor is how long a stress body repeats its rounds (at least a few):
// a time, not a count, since the race detector and the failpoints slow
// every operation down by ten or more.
const stressFor = 1500 * time.Millisecond

// idles are the idle timeouts: short ones fire during the round, the hour
// never does, so that a timer Close failed to stop stays pending and Len
// shows it.
var idles = []time.Duration{2 * time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, time.Hour}

// spinFor spins, yielding, for d: it spreads calls over the idle times. It
// is not a synchronisation point: any interleaving it produces is valid.
func spinFor(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
		runtime.Gosched()
	}
}

// TestConcurrentCloseReadWrite runs rounds of 96 connections, in the exact
// and the slack mode, with and without WithCloseOnIdle. Half are chatty:
// the peer writes without pause, so that the Conn's two readers reset the
// timer all the time while its writer does too, and Close comes within a
// millisecond, once or twice at once, on another goroutine. The other half
// are measured: the Conn's writer is the only activity, with gaps of up to
// twice the idle time, and a Read blocked on a silent peer sees the cut,
// which must not be early (see measured for the bound). At the end every
// Conn is closed, and Len must drop to 0: every timer stopped or fired.
func TestConcurrentCloseReadWrite(t *testing.T) {
	isolate.Run(t, concTimeout, func(t *testing.T) {
		old := runtime.GOMAXPROCS(8)
		defer runtime.GOMAXPROCS(old)
		end := time.Now().Add(stressFor)
		var cut, total atomic.Int64
		for round := 0; round < 3 || time.Now().Before(end); round++ {
			closeReadWriteRound(t, uint64(round), &cut, &total)
			if t.Failed() {
				t.Fatalf("round %d failed", round)
			}
		}
		// The short idle times must really fire, or the test tests
		// only Close against I/O.
		if cut.Load() == 0 {
			t.Errorf("none of %d connections was cut idle", total.Load())
		}
		t.Logf("%d of %d connections cut idle", cut.Load(), total.Load())
	})
}

func closeReadWriteRound(t *testing.T, seed uint64, cut, total *atomic.Int64) {
	st, err := timingwheel.New()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	rng := rand.New(rand.NewPCG(seed, 1))
	var wg sync.WaitGroup
	for i := range 96 {
		idle := idles[rng.IntN(len(idles))]
		var opts []idleconn.Option
		if rng.IntN(2) == 0 {
			opts = append(opts, idleconn.WithSlack(time.Millisecond))
		}
		if rng.IntN(2) == 0 {
			opts = append(opts, idleconn.WithCloseOnIdle())
		}
		a, b := net.Pipe()
		wrapped := time.Now() // before Wrap: a bound on the first activity
		c, err := idleconn.Wrap(a, st, idle, opts...)
		if err != nil {
			t.Fatal(err)
		}
		total.Add(1)
		closeAfter := time.Duration(rng.IntN(1000)) * time.Microsecond
		if idle < time.Hour && i%2 == 1 {
			closeAfter = time.Duration(rng.Int64N(int64(3 * idle)))
		}
		twice := rng.IntN(4) == 0
		cn := &pipeConn{t: t, c: c, peer: b, idle: idle, wrapped: wrapped, cut: cut}
		if i%2 == 0 {
			cn.chatty(&wg)
		} else {
			cn.measured(&wg, uint64(i)+seed<<8)
		}
		wg.Go(func() {
			spinFor(closeAfter)
			if twice {
				wg.Go(func() { c.Close() })
			}
			c.Close()
		})
	}
	wg.Wait()
	// Every Conn is closed, and the goroutines that read and wrote have
	// returned. A timer callback still running may re-arm the timer for a
	// moment (the slack mode's check, which then sees the Conn closed and
	// stops it): wait for Len to come to 0. A timer that Close failed to
	// stop stays pending (the hour) and fails the wait.
	deadline := time.Now().Add(testwait.FailAfter)
	for st.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Len is %d after every connection was closed", st.Len())
		}
		runtime.Gosched()
	}
}

// A pipeConn is one connection of a round: c wraps one end of a net.Pipe,
// peer is the other.
type pipeConn struct {
	t       *testing.T
	c       *idleconn.Conn
	peer    net.Conn
	idle    time.Duration
	wrapped time.Time
	cut     *atomic.Int64
}

// chatty starts a peer that writes without pause and drains what it gets,
// and a reader and a writer on c, until their I/O fails.
func (p *pipeConn) chatty(wg *sync.WaitGroup) {
	wg.Go(func() { // peer writer: ends when c's end is closed
		buf := []byte("ping")
		for range 100_000 {
			if _, err := p.peer.Write(buf); err != nil {
				return
			}
		}
	})
	wg.Go(p.drainPeer)
	for range 2 { // two readers: more Resets to meet Close
		wg.Go(func() {
			buf := make([]byte, 16)
			for {
				if _, err := p.c.Read(buf); err != nil {
					p.checkErr("Read", err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		buf := []byte("pong")
		for range 100_000 {
			if _, err := p.c.Write(buf); err != nil {
				p.checkErr("Write", err)
				return
			}
		}
	})
}

// drainPeer reads the peer's end until it fails (c's end closed), then
// closes it.
func (p *pipeConn) drainPeer() {
	buf := make([]byte, 64)
	for {
		if _, err := p.peer.Read(buf); err != nil {
			p.peer.Close()
			return
		}
	}
}

// measured starts a silent peer that drains, a writer on c that is the
// Conn's only activity (gaps of up to twice the idle time), and a Read on c
// that waits for the cut and checks that it is not early.
func (p *pipeConn) measured(wg *sync.WaitGroup, seed uint64) {
	wg.Go(p.drainPeer)
	// writes are the Writes that moved data: a clock reading before each
	// and one after it returned.
	type write struct{ start, end time.Time }
	var mu sync.Mutex
	var writes []write
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 2))
		buf := []byte("data")
		for range 50 {
			start := time.Now()
			n, err := p.c.Write(buf)
			if n > 0 && err == nil {
				w := write{start, time.Now()}
				mu.Lock()
				writes = append(writes, w)
				mu.Unlock()
			}
			if err != nil {
				p.checkErr("Write", err)
				return
			}
			if p.idle < time.Hour {
				spinFor(time.Duration(rng.Int64N(int64(2 * p.idle))))
			}
		}
	})
	wg.Go(func() {
		_, err := p.c.Read(make([]byte, 1)) // the peer never writes
		seen := time.Now()
		if err == nil {
			p.t.Error("a Read got data from a silent peer")
			return
		}
		p.checkErr("Read", err)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return // closed first
		}
		p.cut.Add(1)
		// The bound: while each Write ended less than idle after the
		// previous one began (Wrap first), the deadline was always ahead
		// of the next Write's Reset, so the timer cannot have fired in
		// between without being early; after the last Write of that
		// chain, the deadline was idle after it began, at least. Once a
		// gap reaches idle the timer may fire, and Writes after it (its
		// callback still on its way) may succeed and lose the race: the
		// chain stops there.
		bound := p.wrapped
		mu.Lock()
		for _, w := range writes {
			if w.end.Sub(bound) >= p.idle {
				break
			}
			bound = w.start
		}
		mu.Unlock()
		if early := bound.Add(p.idle).Sub(seen); early > 0 {
			p.t.Errorf("a connection with idle %v was cut %v early", p.idle, early)
		}
	})
}

// checkErr fails the test if a Read or Write failed with an error that is
// neither the cut's timeout nor one of a closed connection.
func (p *pipeConn) checkErr(op string, err error) {
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		if !errors.As(err, &ne) || !ne.Timeout() {
			p.t.Errorf("%s: the timeout error %v is not a net.Error whose Timeout is true", op, err)
		}
	case errors.Is(err, io.ErrClosedPipe), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		// Closed: by Close, or by the peer after it.
	default:
		p.t.Errorf("%s: unexpected error %v", op, err)
	}
}

// heldReadClock is a mock clock that, once armed, holds the first reading
// taken inside a Conn's Read (the one its touch makes) after taking it and
// before returning it: that goroutine then holds an old reading, as one
// preempted between the clock read and its store would.
type heldReadClock struct {
	*clock.Mock
	armed            atomic.Bool
	arrived, release chan struct{}
}

func (c *heldReadClock) Now() time.Time {
	v := c.Mock.Now()
	if c.armed.Load() && inConnRead() && c.armed.CompareAndSwap(true, false) {
		c.arrived <- struct{}{}
		<-c.release
	}
	return v
}

// inConnRead reports whether idleconn's Conn.Read is on the caller's stack.
func inConnRead() bool {
	pc := make([]uintptr, 32)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "idleconn.(*Conn).Read") {
			return true
		}
		if !more {
			return false
		}
	}
}

// TestConcurrentReadWriteNeverCutEarly: a Read and a Write on one Conn at
// once (a reader and a writer goroutine, as HTTP/2 or a websocket have).
// The Read reads the clock first, the Write later; the Read's deadline was
// stored last, and with Reset it moved the deadline back to its own: the
// connection was cut idle/2 after the Write, its last activity.
func TestConcurrentReadWriteNeverCutEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = 10 * time.Second
		mc := &heldReadClock{Mock: clock.NewMock(), arrived: make(chan struct{}), release: make(chan struct{})}
		st := wheeltest.New(t, timingwheel.WithClock(mc))
		srv, cli := net.Pipe()
		defer cli.Close()
		c, err := idleconn.Wrap(srv, st, idle)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

		mc.armed.Store(true)
		readDone := make(chan error, 1)
		go func() {
			_, err := c.Read(make([]byte, 1))
			readDone <- err
		}()
		go cli.Write([]byte("x"))
		<-mc.arrived // the Read has its reading, t0, and is held

		mc.Add(idle / 2)
		go cli.Read(make([]byte, 1))
		if _, err := c.Write([]byte("y")); err != nil { // the deadline goes to t0 + 3/2 idle
			t.Fatal(err)
		}
		last := mc.Mock.Now()
		close(mc.release) // the Read's touch, with t0, lands last
		if err := <-readDone; err != nil {
			t.Fatal(err)
		}

		blocked := goRead(c, make([]byte, 1))
		mc.Add(idle/2 + time.Millisecond)
		synctest.Wait()
		select {
		case r := <-blocked:
			t.Fatalf("cut %v after its last activity, idle is %v (%v)", mc.Mock.Now().Sub(last), idle, r.err)
		default:
		}
		mc.Add(idle / 2)
		synctest.Wait()
		select {
		case r := <-blocked:
			requireTimeout(t, r.err, "read")
		default:
			t.Fatal("not cut idle after its last activity")
		}
	})
}
