package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testConfig is a configuration whose timers do not fire in a test unless
// the test shortens one of them.
func testConfig() config {
	return config{
		idleTimeout:    time.Hour,
		requestTimeout: 10 * time.Second,
		quiet:          time.Millisecond,
		saveAttempts:   3,
		saveBackoff:    time.Millisecond,
		statsEvery:     time.Hour,
	}
}

func start(t *testing.T, cfg config, sink func(map[string]string) error, report func(int)) *server {
	t.Helper()
	if sink == nil {
		sink = func(map[string]string) error { return nil }
	}
	if report == nil {
		report = func(int) {}
	}
	s := newServer(cfg, sink, report)
	if err := s.listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

type client struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dial(t *testing.T, s *server) *client {
	t.Helper()
	nc, err := net.Dial("tcp", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	// A bound on the whole conversation, so that a broken server fails
	// the test instead of hanging it.
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (c *client) do(cmd string) string {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.nc, "%s\n", cmd); err != nil {
		c.t.Fatalf("%s: %v", cmd, err)
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("%s: %v", cmd, err)
	}
	return strings.TrimSuffix(line, "\n")
}

func TestCommands(t *testing.T) {
	c := dial(t, start(t, testConfig(), nil, nil))
	for _, step := range []struct{ cmd, want string }{
		{"GET a", "NOTFOUND"},
		{"SET a 1", "OK"},
		{"GET a", "VALUE 1"},
		{"DEL a", "OK"},
		{"GET a", "NOTFOUND"},
		{"SLOW 1", "OK"},
		{"FLY", "ERR unknown command"},
	} {
		if got := c.do(step.cmd); got != step.want {
			t.Errorf("%s: got %q, want %q", step.cmd, got, step.want)
		}
	}
}

func TestIdleConnectionIsClosed(t *testing.T) {
	cfg := testConfig()
	cfg.idleTimeout = 20 * time.Millisecond
	c := dial(t, start(t, cfg, nil, nil))
	if _, err := c.r.ReadString('\n'); !errors.Is(err, io.EOF) {
		t.Fatalf("read from an idle connection: %v, want EOF", err)
	}
}

func TestCommandHasDeadline(t *testing.T) {
	cfg := testConfig()
	cfg.requestTimeout = 20 * time.Millisecond
	c := dial(t, start(t, cfg, nil, nil))
	if got := c.do("SLOW 60000"); got != "ERR timeout" {
		t.Fatalf("SLOW 60000: got %q, want ERR timeout", got)
	}
}

func TestSavesOnceChangesStop(t *testing.T) {
	saves := make(chan map[string]string, 100)
	c := dial(t, start(t, testConfig(), func(m map[string]string) error { saves <- m; return nil }, nil))
	c.do("SET a 1")
	c.do("SET b 2")
	c.do("SET c 3")
	for {
		select {
		case m := <-saves:
			if len(m) == 3 && m["c"] == "3" {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no save of all three keys")
		}
	}
}

func TestSaveRetries(t *testing.T) {
	var calls atomic.Int32
	sink := func(map[string]string) error {
		if calls.Add(1) < 3 {
			return errors.New("disk full")
		}
		return nil
	}
	cfg := testConfig()
	cfg.quiet = time.Hour // saved by close, not by the timer
	s := newServer(cfg, sink, func(int) {})
	s.store.set("a", "1")
	s.stats.stop()
	s.saver.stop()
	if n := calls.Load(); n != 3 {
		t.Errorf("sink called %d times, want 3", n)
	}
	if got := s.saver.outcomes(); len(got) != 1 || got[0] != nil {
		t.Errorf("outcomes %v, want one success", got)
	}
}

func TestSaveGivesUp(t *testing.T) {
	cfg := testConfig()
	cfg.quiet = time.Hour
	s := newServer(cfg, func(map[string]string) error { return errors.New("disk full") }, func(int) {})
	s.store.set("a", "1")
	s.stats.stop()
	s.saver.stop()
	if got := s.saver.outcomes(); len(got) != 1 || got[0] == nil {
		t.Errorf("outcomes %v, want one failure", got)
	}
}

func TestCloseSavesPending(t *testing.T) {
	var saved atomic.Int32
	cfg := testConfig()
	cfg.quiet = time.Hour
	s := newServer(cfg, func(map[string]string) error { saved.Add(1); return nil }, func(int) {})
	if err := s.listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	c := dial(t, s)
	c.do("SET a 1")
	s.close()
	if saved.Load() != 1 {
		t.Fatalf("%d saves at close, want 1", saved.Load())
	}
}

func TestStatsAreReported(t *testing.T) {
	reports := make(chan int, 1)
	cfg := testConfig()
	cfg.statsEvery = time.Millisecond
	report := func(n int) {
		select {
		case reports <- n:
		default:
		}
	}
	start(t, cfg, nil, report)
	for range 2 {
		select {
		case <-reports:
		case <-time.After(10 * time.Second):
			t.Fatal("no report")
		}
	}
}
