package idleconn_test

import (
	"net"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/idleconn"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/go-timingwheel/timingwheel/internal/wheeltest"
)

// instantReads is a loopback TCP connection whose Read returns at once
// without a system call, so that a benchmark of a Read measures what
// surrounds it: the deadline handling. Its deadlines are the socket's own,
// through the runtime's netpoller.
type instantReads struct{ *net.TCPConn }

func (instantReads) Read(b []byte) (int, error) { return len(b), nil }

// loopbackConn returns the server end of a loopback TCP connection.
func loopbackConn(b *testing.B) *net.TCPConn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	cli, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })
	srv := testwait.Recv(b, accepted, "the accepted connection")
	if srv == nil {
		b.Fatal("Accept failed")
	}
	b.Cleanup(func() { srv.Close() })
	return srv.(*net.TCPConn)
}

// BenchmarkDeadline compares the idle-timeout handling of one Read, in
// isolation, on a loopback TCP connection: the baseline,
// SetReadDeadline(time.Now().Add(idle)) before every Read, against a Read
// through a Conn in the exact mode (a clock read and a compare-and-swap)
// and in the slack mode (an atomic load). Each Read returns at once without
// a system call, so each figure is the deadline handling plus a few
// nanoseconds of calls.
//
//	go test -run '^$' -bench Deadline -count 10 ./idleconn | benchstat -col /how -
func BenchmarkDeadline(b *testing.B) {
	const idle = 30 * time.Second
	st := wheeltest.New(b)
	buf := make([]byte, 64)
	b.Run("how=SetReadDeadline", func(b *testing.B) {
		c := instantReads{loopbackConn(b)}
		b.ReportAllocs()
		for b.Loop() {
			if err := c.SetReadDeadline(time.Now().Add(idle)); err != nil {
				b.Fatal(err)
			}
			c.Read(buf)
		}
	})
	for _, m := range []struct {
		name string
		opts []idleconn.Option
	}{
		{"how=exact", nil},
		{"how=slack", []idleconn.Option{idleconn.WithSlack(time.Second)}},
	} {
		b.Run(m.name, func(b *testing.B) {
			c, err := idleconn.Wrap(instantReads{loopbackConn(b)}, st, idle, m.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Read(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
