package idleconn_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/idleconn"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/go-timingwheel/timingwheel/internal/wheeltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Real sockets do not work in a synctest bubble: these tests run on the
// real clock, with idle times short enough to keep them quick and long
// enough that a connection meant to stay active does: its gaps are a small
// fraction of the idle time. They check "never early" exactly, against
// clock readings taken before the activity they bound; how late a cut
// comes depends on the machine, so they only log it, and wait for it with
// a bound that detects a cut that never comes (testwait.FailAfter).

// listen returns a loopback listener wrapped by Listen.
func listen(t *testing.T, st *timingwheel.SystemTimer, idle time.Duration, opts ...idleconn.Option) net.Listener {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln, err := idleconn.Listen(raw, st, idle, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return ln
}

// accept accepts one connection on a goroutine and sends it.
func accept(t *testing.T, ln net.Listener) <-chan net.Conn {
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Errorf("Accept: %v", err)
			close(ch)
			return
		}
		ch <- c
	}()
	return ch
}

func dial(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestLoopbackBlockedIO: on a real TCP connection, a blocked Read and a
// blocked Write fail as after an expired deadline, not before the idle
// time; with WithCloseOnIdle the peer sees the connection closed and the
// owner's first Close returns nil.
func TestLoopbackBlockedIO(t *testing.T) {
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			st := wheeltest.New(t)
			const idle = 250 * time.Millisecond
			ln := listen(t, st, idle, m.opts...)
			acc := accept(t, ln)
			cli := dial(t, ln)
			c := testwait.Recv(t, acc, "the accepted connection")
			require.NotNil(t, c)
			defer c.Close()
			require.IsType(t, &idleconn.Conn{}, c)

			// A Read blocked on a silent peer.
			b := make([]byte, 1)
			go cli.Write([]byte("x"))
			last := time.Now() // before the Read that returns data: before its push
			_, err := io.ReadFull(c, b)
			require.NoError(t, err)
			_, err = c.Read(b)
			cut := time.Since(last)
			requireTimeout(t, err, "read")
			t.Logf("Read cut %v after its last activity plus idle", cut-idle)
			_, err = c.Write(b)
			requireTimeout(t, err, "write")

			if m.closes {
				cli.SetReadDeadline(time.Now().Add(testwait.FailAfter))
				_, err := cli.Read(b)
				assert.ErrorIs(t, err, io.EOF, "the peer's view of a connection closed on expiry")
				assert.NoError(t, c.Close())
				assert.ErrorIs(t, c.Close(), net.ErrClosed, "a second Close")
			}

			// A Write blocked on a peer that does not read: a fresh
			// connection; the server fills the socket buffers.
			acc = accept(t, ln)
			start := time.Now() // before Accept wraps the connection
			cli2 := dial(t, ln)
			c2 := testwait.Recv(t, acc, "the second connection")
			require.NotNil(t, c2)
			defer c2.Close()
			big := make([]byte, 64<<20)
			n, err := c2.Write(big)
			requireTimeout(t, err, "write")
			assert.Less(t, n, len(big))
			assert.GreaterOrEqual(t, time.Since(start), idle, "a Write cut before the idle time")
			cli2.Close()
		})
	}
}

// TestLoopbackConns runs 1000 connections through Listen: one in ten goes
// idle after its first exchange and must be cut, no earlier than the idle
// time after its last activity; the others exchange a message every few
// milliseconds for several idle times, and must not be.
func TestLoopbackConns(t *testing.T) {
	for _, m := range []mode{modes()[0], modes()[3]} {
		t.Run(m.name, func(t *testing.T) {
			testConns(t, m, 1000)
		})
	}
}

type connOutcome struct {
	msgs int       // messages echoed
	idle bool      // the client meant it to go idle
	last time.Time // read before the last echo's Write: no later than its push
	end  time.Time // when Read failed
	err  error
}

func testConns(t *testing.T, m mode, conns int) {
	st := wheeltest.New(t)
	const (
		idle    = time.Second
		every   = 20 * time.Millisecond // an active client's pace
		runFor  = 3 * idle
		idleOne = 10 // one connection in idleOne goes idle
	)
	ln := listen(t, st, idle, m.opts...)

	// The server echoes, and records how each connection ended.
	var (
		mu       sync.Mutex // guards outcomes
		outcomes []connOutcome
		servers  sync.WaitGroup
	)
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			servers.Go(func() {
				defer c.Close()
				var o connOutcome
				b := make([]byte, 64)
				for {
					n, err := c.Read(b)
					if err != nil {
						o.end, o.err = time.Now(), err
						break
					}
					o.idle = o.idle || b[0] == 'i'
					o.last = time.Now()
					if _, err := c.Write(b[:n]); err != nil {
						o.end, o.err = time.Now(), err
						break
					}
					o.msgs++
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			})
		}
	}()

	// The clients.
	var clients sync.WaitGroup
	var cutSeen atomic.Int64
	start := time.Now()
	for i := range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		goesIdle := i%idleOne == 0
		clients.Go(func() {
			defer c.Close()
			msg, b := []byte("a-message"), make([]byte, 64)
			if goesIdle {
				msg = []byte("idle-soon")
			}
			exchange := func() error {
				if _, err := c.Write(msg); err != nil {
					return err
				}
				_, err := io.ReadFull(c, b[:len(msg)])
				return err
			}
			if err := exchange(); err != nil {
				t.Errorf("first exchange: %v", err)
				return
			}
			if goesIdle {
				// Wait for the server to cut the connection.
				c.SetReadDeadline(time.Now().Add(idle + testwait.FailAfter))
				if _, err := c.Read(b); !errors.Is(err, io.EOF) {
					t.Errorf("an idle connection was not closed by the server: %v", err)
				}
				cutSeen.Add(1)
				return
			}
			for time.Since(start) < runFor {
				time.Sleep(every)
				if err := exchange(); err != nil {
					t.Errorf("an active connection failed: %v", err)
					return
				}
			}
		})
	}
	clients.Wait()
	ln.Close()
	<-acceptDone
	servers.Wait()

	require.Len(t, outcomes, conns)
	var lateness []time.Duration
	idleConns := 0
	for _, o := range outcomes {
		if !o.idle {
			assert.ErrorIs(t, o.err, io.EOF, "an active connection ended by %v after %d messages", o.err, o.msgs)
			continue
		}
		idleConns++
		assert.Equal(t, 1, o.msgs)
		if errors.Is(o.err, io.EOF) {
			continue // reported by its client
		}
		requireTimeout(t, o.err, "read")
		cut := o.end.Sub(o.last)
		assert.GreaterOrEqual(t, cut, idle, "an idle connection was cut before its idle time")
		lateness = append(lateness, cut-idle)
	}
	assert.Equal(t, (conns+idleOne-1)/idleOne, idleConns)
	assert.EqualValues(t, idleConns, cutSeen.Load())
	slices.Sort(lateness)
	if len(lateness) > 0 {
		t.Logf("%d connections, %d cut; lateness after idle: min %v, median %v, max %v", conns, len(lateness),
			lateness[0], lateness[len(lateness)/2], lateness[len(lateness)-1])
	}
}

// TestLoopbackHTTPServer: Listen under an http.Server with no timeouts of
// its own. A kept-alive connection that carries a request every idle/5 is
// kept; once its client stops, the server closes it, no earlier than idle
// after the last request was sent.
func TestLoopbackHTTPServer(t *testing.T) {
	for _, m := range []mode{modes()[0], modes()[2]} {
		t.Run(m.name, func(t *testing.T) {
			st := wheeltest.New(t)
			const idle = time.Second
			ln := listen(t, st, idle, m.opts...)
			var closedMu sync.Mutex // guards closedAt
			var closedAt []time.Time
			closed := make(chan struct{}, 10)
			srv := &http.Server{
				Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
				ConnState: func(c net.Conn, s http.ConnState) {
					if _, ok := c.(*idleconn.Conn); !ok {
						t.Errorf("the server got a %T", c)
					}
					if s == http.StateClosed {
						closedMu.Lock()
						closedAt = append(closedAt, time.Now())
						closedMu.Unlock()
						closed <- struct{}{}
					}
				},
				ErrorLog: log.New(io.Discard, "", 0),
			}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()
			defer func() {
				srv.Close()
				assert.ErrorIs(t, <-served, http.ErrServerClosed)
			}()

			var dials atomic.Int64
			tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.Add(1)
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			url := "http://" + ln.Addr().String()
			get := func() {
				res, err := client.Get(url)
				require.NoError(t, err)
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
				require.NoError(t, err)
				require.Equal(t, "ok", string(body))
			}

			var sent time.Time
			for range 8 { // more than an idle time, on one connection
				sent = time.Now() // before any of the server's activity for it
				get()
				time.Sleep(idle / 5)
			}
			testwait.Recv(t, closed, "the server closing the idle connection")
			closedMu.Lock()
			at := closedAt[0]
			closedMu.Unlock()
			assert.EqualValues(t, 1, dials.Load(), "the active connection was cut")
			assert.GreaterOrEqual(t, at.Sub(sent), idle, "closed before its idle time")
			t.Logf("closed %v after the last request was sent", at.Sub(sent))

			// A new request gets a new connection.
			get()
			assert.EqualValues(t, 2, dials.Load())
		})
	}
}

// TestListenWhenTheTimerCannotArm: Accept closes a connection it cannot
// give an idle timer, and says why: a full wheel is a temporary error, after
// which Accept works again; a stopped one ends http.Server's Serve.
func TestListenWhenTheTimerCannotArm(t *testing.T) {
	st := wheeltest.New(t, timingwheel.WithMaxPending(1))
	ln := listen(t, st, time.Hour)

	acc := accept(t, ln)
	dial(t, ln)
	first := testwait.Recv(t, acc, "the first connection")
	require.NotNil(t, first)

	errc := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		errc <- err
	}()
	cli := dial(t, ln)
	err := testwait.Recv(t, errc, "Accept's error")
	assert.ErrorIs(t, err, timingwheel.ErrTooManyPending)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	//lint:ignore SA1019 http.Server's Serve relies on it
	assert.True(t, ne.Temporary(), "a full wheel is temporary")
	assert.False(t, ne.Timeout())
	assert.Contains(t, err.Error(), fmt.Sprintf("idleconn: Accept: closed the connection from %v", cli.LocalAddr()))
	cli.SetReadDeadline(time.Now().Add(testwait.FailAfter))
	_, err = cli.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "the connection Accept refused is closed")

	require.NoError(t, first.Close()) // room on the wheel again
	acc = accept(t, ln)
	dial(t, ln)
	second := testwait.Recv(t, acc, "a connection after the wheel had room again")
	require.NotNil(t, second)
	second.Close()

	// A stopped wheel ends Serve.
	st.Stop()
	srv := &http.Server{Handler: http.NotFoundHandler()}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	dial(t, ln)
	err = testwait.Recv(t, served, "Serve's return")
	assert.ErrorIs(t, err, timingwheel.ErrStopped)
	if ne, ok := err.(net.Error); assert.True(t, ok) {
		//lint:ignore SA1019 http.Server's Serve relies on it
		assert.False(t, ne.Temporary())
	}
	srv.Close()
}
