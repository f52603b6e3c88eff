package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

type config struct {
	idleTimeout    time.Duration // a connection without a command for this long is closed
	requestTimeout time.Duration // the deadline of one command
	quiet          time.Duration // changes are saved once none came for this long
	saveAttempts   int
	saveBackoff    time.Duration // the first wait between attempts; doubled after each
	statsEvery     time.Duration
}

type server struct {
	cfg   config
	store *store
	saver *saver
	stats *reporter
	ln    net.Listener

	mu    sync.Mutex // guards conns
	conns map[*conn]struct{}
	wg    sync.WaitGroup
}

// conn is a client connection. Its idle timer closes it; every command
// pushes the timer back.
type conn struct {
	nc   net.Conn
	idle *time.Timer
}

func newServer(cfg config, sink func(map[string]string) error, report func(int)) *server {
	s := &server{cfg: cfg, store: newStore(), conns: make(map[*conn]struct{})}
	s.saver = newSaver(cfg.quiet, cfg.saveAttempts, cfg.saveBackoff, s.store.snapshot, sink)
	s.store.changed = s.saver.changed
	s.stats = newReporter(cfg.statsEvery, func() { report(s.store.size()) })
	return s
}

func (s *server) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.ln = ln
	s.wg.Add(1)
	go s.acceptLoop()
	return nil
}

func (s *server) addr() string { return s.ln.Addr().String() }

func (s *server) acceptLoop() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		c := &conn{nc: nc}
		c.idle = time.AfterFunc(s.cfg.idleTimeout, func() { c.nc.Close() })
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *server) serve(c *conn) {
	defer s.wg.Done()
	defer s.drop(c)
	sc := bufio.NewScanner(c.nc)
	for sc.Scan() {
		c.idle.Reset(s.cfg.idleTimeout)
		if _, err := io.WriteString(c.nc, s.handle(sc.Text())+"\n"); err != nil {
			return
		}
	}
}

func (s *server) drop(c *conn) {
	c.idle.Stop()
	c.nc.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// handle runs one command with the deadline of a request.
func (s *server) handle(line string) string {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.requestTimeout)
	defer cancel()
	f := strings.Fields(line)
	if len(f) == 0 {
		return "ERR empty command"
	}
	switch {
	case f[0] == "SET" && len(f) == 3:
		s.store.set(f[1], f[2])
		return "OK"
	case f[0] == "GET" && len(f) == 2:
		if v, ok := s.store.get(f[1]); ok {
			return "VALUE " + v
		}
		return "NOTFOUND"
	case f[0] == "DEL" && len(f) == 2:
		s.store.del(f[1])
		return "OK"
	case f[0] == "SLOW" && len(f) == 2:
		ms, err := strconv.Atoi(f[1])
		if err != nil {
			return "ERR bad duration"
		}
		if err := s.store.slow(ctx, time.Duration(ms)*time.Millisecond); errors.Is(err, context.DeadlineExceeded) {
			return "ERR timeout"
		}
		return "OK"
	}
	return "ERR unknown command"
}

// close stops accepting, closes every connection, and saves what is
// pending.
func (s *server) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.stats.stop()
	s.saver.stop()
}
