package idleconn_test

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/idleconn"
	"github.com/go-timingwheel/timingwheel/internal/wheeltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A mode is a way to run a Conn, with the latest a connection may be cut
// after its idle time (in a synctest bubble, where callbacks run on time).
type mode struct {
	name   string
	opts   []idleconn.Option
	late   time.Duration
	closes bool // WithCloseOnIdle
}

func modes() []mode {
	return []mode{
		{"exact", nil, tick, false},
		{"exact/close", []idleconn.Option{idleconn.WithCloseOnIdle()}, tick, true},
		{"slack=7ms", []idleconn.Option{idleconn.WithSlack(7 * time.Millisecond)}, 7*time.Millisecond + 2*tick, false},
		{"slack=100ms/close", []idleconn.Option{idleconn.WithSlack(100 * time.Millisecond), idleconn.WithCloseOnIdle()}, 100*time.Millisecond + 2*tick, true},
	}
}

// inEachMode runs test in a synctest bubble once for each mode, with a
// SystemTimer of its own and one end of a net.Pipe wrapped with the mode's
// options and idle time; cli is the peer's end, closed when test returns.
func inEachMode(t *testing.T, idle time.Duration, test func(t *testing.T, m mode, st *timingwheel.SystemTimer, c *idleconn.Conn, cli net.Conn)) {
	t.Helper()
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := wheeltest.New(t)
				srv, cli := net.Pipe()
				defer cli.Close()
				c, err := idleconn.Wrap(srv, st, idle, m.opts...)
				require.NoError(t, err)
				test(t, m, st, c, cli)
			})
		})
	}
}

// requireTimeout checks that err is what an expired deadline gives.
func requireTimeout(t *testing.T, err error, op string) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	var ne net.Error
	if assert.ErrorAs(t, err, &ne) {
		assert.True(t, ne.Timeout(), "Timeout() of %v", err)
	}
	var oe *net.OpError
	if assert.ErrorAs(t, err, &oe) {
		assert.Equal(t, op, oe.Op)
	}
}

type ioResult struct {
	n   int
	err error
	at  time.Time
}

// goRead reads from c on a goroutine of its own and sends the result.
func goRead(c net.Conn, b []byte) <-chan ioResult {
	ch := make(chan ioResult, 1)
	go func() {
		n, err := c.Read(b)
		ch <- ioResult{n, err, time.Now()}
	}()
	return ch
}

// TestBlockedReadIsCutSynctest: a Read waiting for a silent peer fails
// with the error of an expired deadline at idle after Wrap, no earlier and
// at most the mode's bound later; later Reads and Writes fail at once; with
// WithCloseOnIdle the peer sees the connection closed, without it the
// connection stays open until Close.
func TestBlockedReadIsCutSynctest(t *testing.T) {
	const idle = time.Second
	inEachMode(t, idle, func(t *testing.T, m mode, _ *timingwheel.SystemTimer, c *idleconn.Conn, cli net.Conn) {
		start := time.Now()

		peer := goRead(cli, make([]byte, 1))
		r := <-goRead(c, make([]byte, 1))
		requireTimeout(t, r.err, "read")
		assert.Zero(t, r.n)
		cut := r.at.Sub(start)
		assert.GreaterOrEqual(t, cut, idle, "cut before its idle time")
		assert.LessOrEqual(t, cut, idle+m.late, "cut late")

		// Later calls fail at once, whatever the peer does.
		_, err := c.Read(make([]byte, 1))
		requireTimeout(t, err, "read")
		_, err = c.Write([]byte("x"))
		requireTimeout(t, err, "write")

		synctest.Wait()
		select {
		case p := <-peer:
			require.True(t, m.closes, "the peer's Read returned (%v) though the connection was not to be closed", p.err)
			assert.ErrorIs(t, p.err, io.EOF)
			assert.NoError(t, c.Close(), "the first Close after a close on expiry")
		default:
			require.False(t, m.closes, "WithCloseOnIdle did not close the connection")
			assert.NoError(t, c.Close())
			assert.ErrorIs(t, (<-peer).err, io.EOF)
		}
		// After Close, what the underlying conn says.
		_, err = c.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.ErrClosedPipe)
	})
}

// TestBlockedWriteIsCutSynctest: a Write that the peer does not read fails
// at idle after the last activity.
func TestBlockedWriteIsCutSynctest(t *testing.T) {
	const idle = 500 * time.Millisecond
	inEachMode(t, idle, func(t *testing.T, m mode, _ *timingwheel.SystemTimer, c *idleconn.Conn, cli net.Conn) {
		defer c.Close()

		// One exchange, 200ms in: the last activity.
		time.Sleep(200 * time.Millisecond)
		got := goRead(cli, make([]byte, 1))
		_, err := c.Write([]byte("a"))
		require.NoError(t, err)
		require.NoError(t, (<-got).err)
		last := time.Now()

		// The peer reads no more: net.Pipe's Write blocks.
		n, err := c.Write([]byte("b"))
		requireTimeout(t, err, "write")
		assert.Zero(t, n)
		cut := time.Since(last)
		assert.GreaterOrEqual(t, cut, idle)
		assert.LessOrEqual(t, cut, idle+m.late)
	})
}

// TestCutBoundsSynctest drives many connections through random schedules
// of activity in both directions, with gaps that are either clearly under
// the idle time or clearly over it, and checks that each connection is cut
// exactly at its first long gap, within [idle, idle+bound] after the
// activity before it: never early, never a connection that stays active.
func TestCutBoundsSynctest(t *testing.T) {
	for _, m := range append(modes(), mode{"slack>idle", []idleconn.Option{idleconn.WithSlack(time.Second)}, 300*time.Millisecond + 2*tick, false}) {
		t.Run(m.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := wheeltest.New(t)
				const (
					idle  = 300 * time.Millisecond
					conns = 40
				)
				rng := rand.New(rand.NewPCG(7, uint64(len(m.name))))
				type outcome struct {
					i        int
					acts     int       // activities the server saw
					last, at time.Time // the last activity, the cut
					err      error
				}
				outcomes := make(chan outcome, conns)
				wantActs := make([]int, conns)
				var peers sync.WaitGroup
				defer peers.Wait()
				for i := range conns {
					// Gaps: short ones below idle-tick, and one long
					// one, above idle+bound, somewhere (or at the end).
					var gaps []time.Duration
					for range rng.IntN(12) {
						gaps = append(gaps, time.Duration(rng.Int64N(int64(idle-tick))))
					}
					wantActs[i] = len(gaps)
					gaps = append(gaps, idle+m.late+time.Duration(1+rng.Int64N(int64(idle))))
					for range rng.IntN(3) {
						gaps = append(gaps, time.Duration(rng.Int64N(int64(idle))))
					}
					srv, cli := net.Pipe()
					c, err := idleconn.Wrap(srv, st, idle, m.opts...)
					require.NoError(t, err)
					start := time.Now()
					// The peer: after each gap, writes a byte or reads
					// one, until the connection is gone.
					peers.Go(func() {
						defer cli.Close()
						b := make([]byte, 1)
						for j, g := range gaps {
							time.Sleep(g)
							if readOrWrite(cli, j%2 == 0, b) != nil {
								return
							}
						}
						cli.Read(b) // until the server closes
					})
					// The server: reads on even steps, writes on odd ones.
					go func() {
						defer c.Close()
						o := outcome{i: i, last: start}
						b := make([]byte, 1)
						for j := 0; ; j++ {
							if err := readOrWrite(c, j%2 == 1, b); err != nil {
								o.at, o.err = time.Now(), err
								outcomes <- o
								return
							}
							o.acts++
							o.last = time.Now()
						}
					}()
				}
				for range conns {
					o := <-outcomes
					requireTimeout(t, o.err, [2]string{"read", "write"}[o.acts%2])
					assert.Equal(t, wantActs[o.i], o.acts, "conn %d: cut after the wrong activity", o.i)
					cut := o.at.Sub(o.last)
					assert.GreaterOrEqual(t, cut, idle, "conn %d: cut before its idle time", o.i)
					assert.LessOrEqual(t, cut, idle+m.late, "conn %d: cut late", o.i)
				}
			})
		})
	}
}

// TestWritesKeepABlockedReadSynctest: the idle timeout is the
// connection's, not a direction's: while the server writes, a Read blocked
// on a silent peer is not cut.
func TestWritesKeepABlockedReadSynctest(t *testing.T) {
	const idle = 200 * time.Millisecond
	inEachMode(t, idle, func(t *testing.T, m mode, _ *timingwheel.SystemTimer, c *idleconn.Conn, cli net.Conn) {
		defer c.Close()
		go io.Copy(io.Discard, cli)

		read := goRead(c, make([]byte, 1))
		for range 20 { // 2s of writes, one every idle/2
			time.Sleep(idle / 2)
			_, err := c.Write([]byte("x"))
			require.NoError(t, err)
		}
		last := time.Now()
		synctest.Wait()
		select {
		case r := <-read:
			t.Fatalf("the blocked Read returned %v while writes went on", r.err)
		default:
		}
		r := <-read
		requireTimeout(t, r.err, "read")
		assert.GreaterOrEqual(t, r.at.Sub(last), idle)
		assert.LessOrEqual(t, r.at.Sub(last), idle+m.late)
	})
}

// TestOwnDeadlinesSynctest: the caller's deadlines work beside the idle
// timeout and do not end it; after the idle timeout no deadline revives the
// connection, down to the underlying conn.
func TestOwnDeadlinesSynctest(t *testing.T) {
	const idle = time.Second
	inEachMode(t, idle, func(t *testing.T, m mode, _ *timingwheel.SystemTimer, c *idleconn.Conn, cli net.Conn) {
		defer c.Close()
		b := make([]byte, 1)

		// A deadline of the caller's, well before idle.
		start := time.Now()
		require.NoError(t, c.SetReadDeadline(start.Add(100*time.Millisecond)))
		_, err := c.Read(b)
		requireTimeout(t, err, "read")
		assert.Equal(t, 100*time.Millisecond, time.Since(start))

		// The connection is not expired: a new deadline, and it
		// reads.
		require.NoError(t, c.SetReadDeadline(time.Time{}))
		go cli.Write([]byte("x"))
		n, err := c.Read(b)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		last := time.Now()

		// A deadline of the caller's after idle does not hold the
		// idle timeout back.
		require.NoError(t, c.SetDeadline(last.Add(10*idle)))
		_, err = c.Read(b)
		requireTimeout(t, err, "read")
		assert.GreaterOrEqual(t, time.Since(last), idle)
		assert.LessOrEqual(t, time.Since(last), idle+m.late)

		// Expired: clearing the deadlines revives nothing, not even
		// the underlying conn.
		c.SetDeadline(time.Time{})
		c.SetReadDeadline(time.Now().Add(time.Hour))
		c.SetWriteDeadline(time.Time{})
		_, err = c.Read(b)
		requireTimeout(t, err, "read")
		if !m.closes {
			raw := goRead(c.NetConn(), b)
			synctest.Wait()
			select {
			case r := <-raw:
				assert.ErrorIs(t, r.err, os.ErrDeadlineExceeded)
			default:
				t.Fatal("a deadline set after the expiry revived the underlying conn: its Read blocks")
			}
		}
	})
}

// TestCloseStopsTheTimerSynctest: a connection closed before its idle
// timeout holds nothing on the wheel and never expires.
func TestCloseStopsTheTimerSynctest(t *testing.T) {
	inEachMode(t, time.Second, func(t *testing.T, _ mode, st *timingwheel.SystemTimer, c *idleconn.Conn, _ net.Conn) {
		assert.Equal(t, 1, st.Len())
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, c.Close())
		assert.Zero(t, st.Len(), "Close left the timer on the wheel")
		time.Sleep(5 * time.Second)
		assert.Zero(t, st.Len())
		_, err := c.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.ErrClosedPipe, "a closed connection says so, it does not time out")
		assert.NotErrorIs(t, err, os.ErrDeadlineExceeded)
	})
}

// TestDataRacingTheCutSynctest: data that arrives in the very instant the
// timer fires is returned or not, but the connection is cut either way
// once its idle time has passed, and it is never cut early.
func TestDataRacingTheCutSynctest(t *testing.T) {
	const idle = time.Second
	inEachMode(t, idle, func(t *testing.T, _ mode, _ *timingwheel.SystemTimer, c *idleconn.Conn, cli net.Conn) {
		defer c.Close()
		start := time.Now()
		go func() {
			time.Sleep(idle) // the deadline itself
			cli.Write([]byte("x"))
		}()
		b := make([]byte, 1)
		for {
			_, err := c.Read(b)
			if err != nil {
				requireTimeout(t, err, "read")
				assert.GreaterOrEqual(t, time.Since(start), idle)
				break
			}
		}
	})
}

func TestBadInput(t *testing.T) {
	st := wheeltest.New(t)
	srv, cli := net.Pipe()
	defer cli.Close()
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	for _, tt := range []struct {
		name string
		c    net.Conn
		st   *timingwheel.SystemTimer
		idle time.Duration
		opts []idleconn.Option
		want string
	}{
		{"nil conn", nil, st, time.Second, nil, "idleconn: nil net.Conn"},
		{"nil timer, zero idle", srv, nil, 0, nil, "idleconn: idle timeout 0s: it must be positive"},
		{"zero idle", srv, st, 0, nil, "idleconn: idle timeout 0s: it must be positive"},
		{"negative idle", srv, st, -time.Second, nil, "idleconn: idle timeout -1s: it must be positive"},
		{"nil option", srv, st, time.Second, []idleconn.Option{nil}, "idleconn: nil Option"},
		{"zero slack", srv, st, time.Second, []idleconn.Option{idleconn.WithSlack(0)}, "idleconn: WithSlack(0s): the slack must be positive"},
		{"negative slack", srv, st, time.Second, []idleconn.Option{idleconn.WithSlack(-time.Millisecond)}, "idleconn: WithSlack(-1ms): the slack must be positive"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := idleconn.Wrap(tt.c, tt.st, tt.idle, tt.opts...)
			assert.Nil(t, c)
			assert.EqualError(t, err, tt.want)
			if tt.c == nil {
				return
			}
			l, err := idleconn.Listen(ln, tt.st, tt.idle, tt.opts...)
			assert.Nil(t, l)
			assert.EqualError(t, err, tt.want)
		})
	}
	l, err := idleconn.Listen(nil, st, time.Second)
	assert.Nil(t, l)
	assert.EqualError(t, err, "idleconn: nil net.Listener")
	assert.Zero(t, st.Len(), "a failed Wrap left a timer")

	// The conn a failed Wrap was given is as it was: open.
	go cli.Write([]byte("x"))
	_, err = srv.Read(make([]byte, 1))
	assert.NoError(t, err)
}

// TestTimerCannotArm: Wrap says why st could not arm the timer, and
// leaves the conn open.
func TestTimerCannotArm(t *testing.T) {
	full := wheeltest.New(t, timingwheel.WithMaxPending(1))
	srv, cli := net.Pipe()
	defer cli.Close()
	defer srv.Close()
	c, err := idleconn.Wrap(srv, full, time.Hour)
	require.NoError(t, err)
	defer c.Close()
	_, err = idleconn.Wrap(srv, full, time.Hour)
	assert.ErrorIs(t, err, timingwheel.ErrTooManyPending)
	assert.ErrorContains(t, err, "idleconn: Wrap: ")

	stopped := wheeltest.New(t)
	stopped.Stop()
	_, err = idleconn.Wrap(srv, stopped, time.Hour)
	assert.ErrorIs(t, err, timingwheel.ErrStopped)
	assert.NoError(t, srv.SetDeadline(time.Time{}), "a failed Wrap closed the conn")
}

// A stubConn is a net.Conn whose Read and Write return at once, so that
// what is measured is the wrapper's own path.
type stubConn struct{ net.Conn }

func (stubConn) Read(b []byte) (int, error)  { return len(b), nil }
func (stubConn) Write(b []byte) (int, error) { return len(b), nil }
func (stubConn) Close() error                { return nil }

// TestAllocs pins that a Read or Write through a Conn allocates nothing,
// in either mode.
func TestAllocs(t *testing.T) {
	st := wheeltest.New(t)
	for _, m := range modes() {
		c, err := idleconn.Wrap(stubConn{}, st, time.Hour, m.opts...)
		require.NoError(t, err)
		b := make([]byte, 64)
		assert.Zero(t, testing.AllocsPerRun(1000, func() { c.Read(b) }), "%s: allocations per Read", m.name)
		assert.Zero(t, testing.AllocsPerRun(1000, func() { c.Write(b) }), "%s: allocations per Write", m.name)
		require.NoError(t, c.Close())
	}
}

// noDeadlines is a net.Conn that does not support deadlines, as some
// wrappers do not.
type noDeadlines struct{ net.Conn }

var errNoDeadlines = errors.New("deadlines not supported")

func (noDeadlines) SetDeadline(time.Time) error      { return errNoDeadlines }
func (noDeadlines) SetReadDeadline(time.Time) error  { return errNoDeadlines }
func (noDeadlines) SetWriteDeadline(time.Time) error { return errNoDeadlines }

// TestNoDeadlineSupportSynctest: a conn that cannot take the past deadline
// is closed on expiry, with or without WithCloseOnIdle, since nothing else
// unblocks its calls; the blocked Read still fails with a timeout, not with
// the error of a closed conn.
func TestNoDeadlineSupportSynctest(t *testing.T) {
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := wheeltest.New(t)
				const idle = time.Second
				srv, cli := net.Pipe()
				defer cli.Close()
				c, err := idleconn.Wrap(noDeadlines{srv}, st, idle, m.opts...)
				require.NoError(t, err)
				start := time.Now()
				_, err = c.Read(make([]byte, 1))
				requireTimeout(t, err, "read")
				assert.GreaterOrEqual(t, time.Since(start), idle)
				assert.LessOrEqual(t, time.Since(start), idle+m.late)
				_, err = cli.Read(make([]byte, 1))
				assert.ErrorIs(t, err, io.EOF, "the conn was not closed")
				assert.NoError(t, c.Close())
				assert.ErrorIs(t, c.SetDeadline(time.Time{}), errNoDeadlines)
			})
		})
	}
}

// TestNilTimerIsDefault: Wrap and Listen with a nil SystemTimer keep the
// idle timeouts on timingwheel.Default: a Read blocked past the idle
// timeout fails as with a SystemTimer of one's own, never early.
func TestNilTimerIsDefault(t *testing.T) {
	before := timingwheel.Default().Stats().Armed
	srv, cli := net.Pipe()
	defer cli.Close()
	const idle = 20 * time.Millisecond
	start := time.Now()
	c, err := idleconn.Wrap(srv, nil, idle)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Read(make([]byte, 1))
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.GreaterOrEqual(t, time.Since(start), idle, "the idle timeout cut the Read early")
	assert.Greater(t, timingwheel.Default().Stats().Armed, before, "the timeout was not armed on the default")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l, err := idleconn.Listen(ln, nil, idle)
	require.NoError(t, err)
	defer l.Close()
	go func() {
		if d, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer d.Close()
			d.Read(make([]byte, 1)) // until the server side is closed
		}
	}()
	ac, err := l.Accept()
	require.NoError(t, err)
	defer ac.Close()
	_, err = ac.Read(make([]byte, 1))
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "an accepted conn's Read")
}
