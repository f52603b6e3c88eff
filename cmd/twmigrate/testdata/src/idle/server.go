// Package idle serves a line protocol: a connection closes after a quiet
// spell, and each request has a deadline of its own.
package idle

import (
	"bufio"
	"context"
	"net"
	"sync"
	"time"
)

type server struct {
	idleTimeout time.Duration
	handle      func(ctx context.Context, line string) string

	mu    sync.Mutex
	conns map[*conn]struct{}
}

// conn is one client connection. Its idle timer is armed here, reset on
// every request and stopped on close, in conn.go.
type conn struct {
	nc   net.Conn
	idle *time.Timer
}

func (s *server) serve(nc net.Conn) {
	c := &conn{nc: nc}
	c.idle = time.AfterFunc(s.idleTimeout, func() { nc.Close() }) // want `time.AfterFunc becomes timingwheel.AfterFunc: conn.idle holds a \*timingwheel.Timer`
	s.track(c)
	defer s.untrack(c)
	r := bufio.NewScanner(nc)
	for r.Scan() {
		s.touch(c)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second) // want `context.WithTimeout becomes timingwheel.WithTimeout`
		reply := s.handle(ctx, r.Text())
		cancel()
		if _, err := nc.Write([]byte(reply + "\n")); err != nil {
			return
		}
	}
}

func (s *server) track(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[c] = struct{}{}
}
