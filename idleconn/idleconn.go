package idleconn

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// An Option configures Wrap and Listen.
type Option interface {
	apply(*config)
}

type config struct {
	idle        time.Duration
	slack       time.Duration // 0: the exact mode
	slackSet    bool
	closeOnIdle bool
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithCloseOnIdle makes a connection close itself when its idle timeout
// passes, from the timer's callback, instead of only failing its I/O. The
// owner's first Close afterwards returns nil. Without it, the connection
// stays open until its owner closes it, which every loop that reads (an
// http.Server, an echo loop) does when its Read fails.
func WithCloseOnIdle() Option {
	return optionFunc(func(c *config) { c.closeOnIdle = true })
}

// WithSlack selects the slack mode: Read and Write only note that the
// connection was active (an atomic load, and a store when the note was
// clear: no clock read), and the timer checks the note every slack. A
// connection is then cut between idle and idle+slack+2 ticks after its last
// activity, never before. See the package doc for the bound and its cost.
// The slack must be positive.
func WithSlack(d time.Duration) Option {
	return optionFunc(func(c *config) { c.slack, c.slackSet = d, true })
}

var (
	errNilConn     = errors.New("idleconn: nil net.Conn")
	errNilListener = errors.New("idleconn: nil net.Listener")
	errNilOption   = errors.New("idleconn: nil Option")
)

func newConfig(idle time.Duration, opts []Option) (config, error) {
	c := config{idle: idle}
	for _, o := range opts {
		if o == nil {
			return c, errNilOption
		}
		o.apply(&c)
	}
	switch {
	case idle <= 0:
		return c, fmt.Errorf("idleconn: idle timeout %v: it must be positive", idle)
	case c.slackSet && c.slack <= 0:
		return c, fmt.Errorf("idleconn: WithSlack(%v): the slack must be positive", c.slack)
	}
	return c, nil
}

// resolve is what Wrap and Listen make of their arguments other than the
// conn or listener: the config, and the SystemTimer, Default for a nil st.
func resolve(st *timingwheel.SystemTimer, idle time.Duration, opts []Option) (*timingwheel.SystemTimer, config, error) {
	cfg, err := newConfig(idle, opts)
	if err != nil {
		return nil, cfg, err
	}
	if st == nil {
		st = timingwheel.Default()
	}
	return st, cfg, nil
}

// Bits of Conn.state. Each is set once and never cleared.
const (
	stExpired     = 1 << iota // the idle timeout has passed: I/O fails
	stClosed                  // the underlying conn is closed, or being closed, by Close or on expiry
	stOwnerClosed             // Close has been called
)

// aLongTimeAgo is the deadline that makes the underlying conn's blocked and
// later I/O fail at once.
var aLongTimeAgo = time.Unix(1, 0)

// A Conn is a net.Conn with an idle timeout on a timing wheel. Its methods
// are safe for concurrent use, as those of the conn it wraps must be.
type Conn struct {
	conn net.Conn
	// timer is the idle timeout, bound to onTimer. Exact mode: pushed
	// back by every Read and Write that moves data. Slack mode: a check
	// every slack, re-armed by itself.
	timer       timingwheel.Timer
	idle        time.Duration // immutable
	slack       time.Duration // immutable; 0: the exact mode
	closeOnIdle bool          // immutable
	state       atomic.Uint32 // stExpired, stClosed, stOwnerClosed
	// Slack mode. active is set by Read and Write that move data and
	// cleared by the check. seen is a clock reading no earlier than the
	// last activity the check has seen: written by Wrap before it arms
	// the timer and then only by the check, whose runs are ordered by the
	// timer (a run re-arms the timer after its last write to seen).
	active atomic.Uint32
	seen   time.Time
}

// Wrap returns c with an idle timeout on st: each Read and Write that
// moves data pushes the deadline back to idle from then, and once it
// passes, blocked and later Reads and Writes fail with an error that
// errors.Is os.ErrDeadlineExceeded, a net.Error whose Timeout is true. The
// package doc says exactly when and how.
//
// The timeout starts now. A nil st is timingwheel.Default. Wrap returns an
// error for a nil c, an idle timeout that is not positive, or a bad
// option; and, wrapping timingwheel.ErrStopped or
// timingwheel.ErrTooManyPending, when st cannot arm the timer. On error, c
// is left as it was, open.
func Wrap(c net.Conn, st *timingwheel.SystemTimer, idle time.Duration, opts ...Option) (*Conn, error) {
	if c == nil {
		return nil, errNilConn
	}
	st, cfg, err := resolve(st, idle, opts)
	if err != nil {
		return nil, err
	}
	w, err := wrap(c, st, &cfg)
	if err != nil {
		return nil, fmt.Errorf("idleconn: Wrap: %w", err)
	}
	return w, nil
}

func wrap(c net.Conn, st *timingwheel.SystemTimer, cfg *config) (*Conn, error) {
	w := &Conn{conn: c, idle: cfg.idle, slack: cfg.slack, closeOnIdle: cfg.closeOnIdle}
	st.Bind(&w.timer, w.onTimer)
	d := w.idle
	if w.slack > 0 {
		w.seen = time.Now()
		d = min(w.slack, w.idle)
	}
	if _, err := w.timer.TryReset(d); err != nil {
		return nil, err
	}
	return w, nil
}

// Read reads from the connection. A Read that returns data pushes the idle
// deadline back. Once the idle timeout has passed, Read fails with a
// timeout error (os.ErrDeadlineExceeded), until Close.
func (c *Conn) Read(b []byte) (int, error) { return c.transfer("read", c.conn.Read, b) }

// Write writes to the connection. A Write that writes data pushes the idle
// deadline back. Once the idle timeout has passed, Write fails with a
// timeout error (os.ErrDeadlineExceeded), until Close.
func (c *Conn) Write(b []byte) (int, error) { return c.transfer("write", c.conn.Write, b) }

// transfer is Read and Write, which differ only in the call to the
// underlying conn, rw, and in op, the name their errors give.
func (c *Conn) transfer(op string, rw func([]byte) (int, error), b []byte) (int, error) {
	if c.state.Load()&(stExpired|stOwnerClosed) == stExpired {
		return 0, c.timeoutError(op)
	}
	n, err := rw(b)
	if n > 0 {
		c.touch()
	}
	if err != nil {
		err = c.fix(err, op)
	}
	return n, err
}

// touch records activity: the idle deadline moves to idle from now.
func (c *Conn) touch() {
	if c.slack > 0 {
		// Load first: a store to a line that holds 1 already would
		// take it from the other cores for nothing.
		if c.active.Load() == 0 {
			c.active.Store(1)
		}
		return
	}
	if c.state.Load() == 0 {
		// A clock read and a CAS: no lock. Postpone, not Reset: a Read
		// and a Write at once must not move the deadline back to the
		// one whose clock read came first.
		c.timer.Postpone(c.idle)
		// Closed or expired meanwhile: take back what was armed.
		if c.state.Load() != 0 {
			c.timer.Stop()
		}
	}
}

// fix returns the error a Read or Write that failed with err returns: once
// the connection has expired, a timeout, whatever the underlying conn said
// (net.ErrClosed after WithCloseOnIdle closed it, an EOF that came late).
func (c *Conn) fix(err error, op string) error {
	if c.state.Load()&(stExpired|stOwnerClosed) == stExpired && !errors.Is(err, os.ErrDeadlineExceeded) {
		return c.timeoutError(op)
	}
	return err
}

// timeoutError returns the error of an expired deadline, as the net
// package's conns return it.
func (c *Conn) timeoutError(op string) error {
	laddr, raddr := c.conn.LocalAddr(), c.conn.RemoteAddr()
	network := ""
	if laddr != nil {
		network = laddr.Network()
	}
	return &net.OpError{Op: op, Net: network, Source: laddr, Addr: raddr, Err: os.ErrDeadlineExceeded}
}

// onTimer runs on the timer's executor when the timer comes due.
func (c *Conn) onTimer() {
	if c.slack > 0 && !c.quiet() {
		return
	}
	c.expire()
}

// quiet is the slack mode's check. It reports whether the connection has
// been idle for idle; if not, it re-arms the timer for the next check.
//
// Never early: now is read before the note is taken, so every activity it
// does not see came after now, and seen is read after the note is taken, so
// it is no earlier than any activity the note recorded. If now-seen >= idle,
// every activity came idle or more before now.
func (c *Conn) quiet() bool {
	if c.state.Load() != 0 {
		return false
	}
	now := time.Now()
	if c.active.Load() != 0 && c.active.Swap(0) != 0 {
		c.seen = time.Now()
		now = c.seen
	}
	rest := c.idle - now.Sub(c.seen)
	if rest <= 0 {
		return true
	}
	// At most slack until the next check, so that an activity is seen at
	// most slack (and a tick) after it; and no later than seen+idle, when
	// the connection is due to be cut if nothing happens meanwhile.
	c.timer.Reset(min(c.slack, rest))
	if c.state.Load() != 0 {
		c.timer.Stop()
	}
	return false
}

// expire makes the connection's blocked and later I/O fail: it marks it
// expired, sets a deadline in the past on the underlying conn, which wakes
// blocked calls with os.ErrDeadlineExceeded, and closes it if asked to, or
// if the underlying conn cannot take a deadline (then only Close unblocks
// it).
func (c *Conn) expire() {
	if c.state.Or(stExpired) != 0 {
		return // expired already, or closed by its owner
	}
	err := c.conn.SetDeadline(aLongTimeAgo)
	if c.closeOnIdle || err != nil {
		if c.state.Or(stClosed)&stClosed == 0 {
			c.conn.Close()
		}
	}
}

// Close stops the idle timer and closes the connection. If the connection
// was closed on expiry (WithCloseOnIdle), the first Close returns nil; later
// ones return what the underlying conn's Close returns.
func (c *Conn) Close() error {
	old := c.state.Or(stClosed | stOwnerClosed)
	c.timer.Stop()
	if old&(stClosed|stOwnerClosed) == stClosed {
		return nil // closed on expiry
	}
	return c.conn.Close()
}

// LocalAddr returns the underlying conn's local address.
func (c *Conn) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// RemoteAddr returns the underlying conn's remote address.
func (c *Conn) RemoteAddr() net.Addr { return c.conn.RemoteAddr() }

// SetDeadline sets the underlying conn's read and write deadlines. They
// work beside the idle timeout, each failing I/O when it passes; once the
// idle timeout has passed, no deadline revives the connection.
func (c *Conn) SetDeadline(t time.Time) error {
	err := c.conn.SetDeadline(t)
	c.keepExpired()
	return err
}

// SetReadDeadline sets the underlying conn's read deadline; see SetDeadline.
func (c *Conn) SetReadDeadline(t time.Time) error {
	err := c.conn.SetReadDeadline(t)
	c.keepExpired()
	return err
}

// SetWriteDeadline sets the underlying conn's write deadline; see
// SetDeadline.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	err := c.conn.SetWriteDeadline(t)
	c.keepExpired()
	return err
}

// keepExpired puts the past deadline back after the caller set one, if the
// connection has expired. The expiry marks the connection before it sets
// the past deadline, and the caller's deadline is set before the mark is
// read here: so either the expiry's deadline came last, or this call sees
// the mark and sets it again. A Read blocked in the underlying conn thus
// never misses the expiry.
func (c *Conn) keepExpired() {
	if c.state.Load()&(stExpired|stClosed) == stExpired {
		c.conn.SetDeadline(aLongTimeAgo)
	}
}

// NetConn returns the underlying conn, for what a net.Conn does not offer
// (a *net.TCPConn's SetKeepAlive, CloseWrite, File). Reads and Writes made
// on it directly do not push the idle deadline back.
func (c *Conn) NetConn() net.Conn { return c.conn }

// Listen returns l, whose Accept wraps every connection it accepts with
// Wrap(conn, st, idle, opts...): one line gives every connection of an
// http.Server, or of any accept loop, an idle timeout.
//
// A nil st is timingwheel.Default. Listen returns an error for a nil l,
// an idle timeout that is not positive, or a bad option. If st cannot arm
// the timer of a new connection, Accept closes that connection and returns
// an error that wraps the timer's: timingwheel.ErrStopped, which ends
// http.Server's Serve; or timingwheel.ErrTooManyPending, a net.Error whose
// Temporary method reports true, after which Serve waits a little and
// accepts again.
func Listen(l net.Listener, st *timingwheel.SystemTimer, idle time.Duration, opts ...Option) (net.Listener, error) {
	if l == nil {
		return nil, errNilListener
	}
	st, cfg, err := resolve(st, idle, opts)
	if err != nil {
		return nil, err
	}
	return &listener{Listener: l, st: st, cfg: cfg}, nil
}

type listener struct {
	net.Listener
	st  *timingwheel.SystemTimer
	cfg config
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	w, err := wrap(c, l.st, &l.cfg)
	if err != nil {
		c.Close()
		return nil, &acceptError{err: err, remote: c.RemoteAddr()}
	}
	return w, nil
}

// An acceptError says why Accept closed a connection it had accepted.
type acceptError struct {
	err    error
	remote net.Addr
}

func (e *acceptError) Error() string {
	return fmt.Sprintf("idleconn: Accept: closed the connection from %v: no idle timer: %v", e.remote, e.err)
}

func (e *acceptError) Unwrap() error { return e.err }
func (e *acceptError) Timeout() bool { return false }

// Temporary reports whether accepting again may succeed: when the wheel is
// full, not when it is stopped. http.Server's Serve backs off and retries on
// a temporary error, and returns on any other.
func (e *acceptError) Temporary() bool {
	return errors.Is(e.err, timingwheel.ErrTooManyPending)
}
