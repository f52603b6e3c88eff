// Command idleecho runs an echo server on loopback whose connections have an
// idle timeout on a timing wheel (package idleconn), and a bounded set of
// clients against it: most exchange a few messages and hang up; one in
// -idle-every sends one message and then falls silent, and the server cuts
// it once it has been idle for -idle. It prints what happened to each
// client and what the server saw.
//
//	go run ./examples/idleecho
//	go run ./examples/idleecho -clients 20 -idle 200ms -slack 50ms
//
// The server is idleconn.Listen over a net.Listener, and io.Copy(conn, conn)
// per connection: a cut makes the copy's Read fail with a timeout error
// (os.ErrDeadlineExceeded), and with -close (the default) the wheel's
// callback closes the connection at once. A client measures the cut from
// just before it sent its last message, so the figure includes the echo
// and is never below the idle time.
//
// Everything listens on 127.0.0.1 only, on an ephemeral port, and the whole
// program stops within -maxtime (25s by default) whatever the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/idleconn"
)

func main() {
	if _, err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "idleecho:", err)
		}
		os.Exit(2)
	}
}

type config struct {
	clients   int
	msgs      int           // messages per active client
	every     time.Duration // an active client's pause between messages
	idleEvery int           // every idleEvery-th client goes idle; 0: none
	idle      time.Duration
	slack     time.Duration // 0: the exact mode
	close     bool          // WithCloseOnIdle
	maxTime   time.Duration
}

// A result is what happened to one client.
type result struct {
	client int
	idle   bool          // it fell silent after its first message
	echoed int           // messages that came back
	cut    bool          // the server closed the connection
	after  time.Duration // for a cut: from just before the last message was sent
	err    error         // what went wrong, if anything did
}

// A report is what run saw.
type report struct {
	results []result
	// The server's view: connections its clients closed, and ones it
	// cut when their idle timeout passed.
	closedByClient, cutIdle, otherErrs int
}

// run parses args, serves, runs the clients and prints what happened to
// out.
func run(ctx context.Context, args []string, out io.Writer) (report, error) {
	var cfg config
	fs := flag.NewFlagSet("idleecho", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.IntVar(&cfg.clients, "clients", 9, "clients, one connection each")
	fs.IntVar(&cfg.msgs, "msgs", 5, "messages each active client sends")
	fs.DurationVar(&cfg.every, "every", 50*time.Millisecond, "an active client's pause between messages (well under -idle)")
	fs.IntVar(&cfg.idleEvery, "idle-every", 3, "every `k`th client falls silent after one message; 0 for none")
	fs.DurationVar(&cfg.idle, "idle", 500*time.Millisecond, "the server's idle timeout per connection")
	fs.DurationVar(&cfg.slack, "slack", 0, "use idleconn's slack mode with this slack; 0 for the exact mode")
	fs.BoolVar(&cfg.close, "close", true, "close a connection when its idle timeout passes (idleconn.WithCloseOnIdle)")
	fs.DurationVar(&cfg.maxTime, "maxtime", 25*time.Second, "stop after this long, whatever is left")
	if err := fs.Parse(args); err != nil {
		return report{}, err
	}
	switch {
	case fs.NArg() > 0:
		return report{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	case cfg.clients < 1 || cfg.msgs < 1 || cfg.idleEvery < 0:
		return report{}, errors.New("-clients and -msgs must be positive, -idle-every not negative")
	case cfg.idle <= 0 || cfg.every < 0 || cfg.slack < 0 || cfg.maxTime <= 0:
		return report{}, errors.New("-idle and -maxtime must be positive, -every and -slack not negative")
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.maxTime)
	defer cancel()

	st, err := timingwheel.New()
	if err != nil {
		return report{}, err
	}
	// Deferred first, so it runs last: after the server has stopped.
	defer st.Stop()

	var opts []idleconn.Option
	mode := "exact"
	if cfg.slack > 0 {
		opts = append(opts, idleconn.WithSlack(cfg.slack))
		mode = fmt.Sprintf("slack %v: cut within idle+slack+2ms", cfg.slack)
	}
	if cfg.close {
		opts = append(opts, idleconn.WithCloseOnIdle())
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return report{}, err
	}
	ln, err := idleconn.Listen(raw, st, cfg.idle, opts...)
	if err != nil {
		raw.Close()
		return report{}, err
	}
	srv := serve(ln)
	fmt.Fprintf(out, "echo server on %v, idle timeout %v (%s), %d clients, 1 in %d goes idle\n",
		ln.Addr(), cfg.idle, mode, cfg.clients, cfg.idleEvery)

	rep := report{results: clients(ctx, cfg, ln.Addr().String())}
	ln.Close()
	rep.closedByClient, rep.cutIdle, rep.otherErrs = srv.wait()
	printReport(out, cfg, rep)
	return rep, nil
}

// A server echoes on every connection it accepts, and counts how they end.
type server struct {
	conns sync.WaitGroup
	done  chan struct{} // closed when the accept loop has returned

	mu                                 sync.Mutex // guards the counts
	closedByClient, cutIdle, otherErrs int
}

func serve(ln net.Listener) *server {
	s := &server{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return // the listener is closed
			}
			s.conns.Go(func() { s.echo(c) })
		}
	}()
	return s
}

// echo copies what the client sends back to it until the client hangs up
// or the idle timeout cuts the connection.
func (s *server) echo(c net.Conn) {
	defer c.Close()
	_, err := io.Copy(c, c) // through the Conn's Read and Write: each message pushes the deadline back
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil: // io.Copy returns nil at EOF
		s.closedByClient++
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.cutIdle++
	default:
		s.otherErrs++
	}
}

// wait waits until the accept loop and every connection are done, and
// returns the counts.
func (s *server) wait() (closedByClient, cutIdle, otherErrs int) {
	<-s.done
	s.conns.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closedByClient, s.cutIdle, s.otherErrs
}

// clients runs the clients, one connection each, all at once, and returns
// what happened to each. Every connection is bounded by ctx's deadline.
func clients(ctx context.Context, cfg config, addr string) []result {
	results := make([]result, cfg.clients)
	var wg sync.WaitGroup
	for i := range cfg.clients {
		wg.Go(func() {
			r := &results[i]
			r.client = i + 1
			r.idle = cfg.idleEvery > 0 && (i+1)%cfg.idleEvery == 0
			r.err = client(ctx, cfg, addr, r)
		})
	}
	wg.Wait()
	return results
}

func client(ctx context.Context, cfg config, addr string, r *result) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl) // the client is bounded, whatever the server does
	}
	msgs := cfg.msgs
	if r.idle {
		msgs = 1
	}
	msg := fmt.Appendf(nil, "hello from client %d\n", r.client)
	back := make([]byte, len(msg))
	var last time.Time
	for k := range msgs {
		if k > 0 {
			select {
			case <-time.After(cfg.every):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		last = time.Now()
		if _, err := c.Write(msg); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, back); err != nil {
			return err
		}
		r.echoed++
	}
	if !r.idle {
		return nil // hang up
	}
	// Silent from now on: wait for the server to cut the connection.
	n, err := c.Read(back)
	switch {
	case n > 0:
		return fmt.Errorf("the server sent %q unasked", back[:n])
	case errors.Is(err, io.EOF):
		r.cut, r.after = true, time.Since(last)
		return nil
	default:
		return fmt.Errorf("waiting for the server to cut the connection: %w", err)
	}
}

func printReport(out io.Writer, cfg config, rep report) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, r := range rep.results {
		kind := "active"
		if r.idle {
			kind = "idle"
		}
		var what string
		switch {
		case r.err != nil:
			what = fmt.Sprintf("%d echoed, then: %v", r.echoed, r.err)
		case r.cut:
			what = fmt.Sprintf("%d echoed; cut by the server %v after it sent its last message", r.echoed, r.after.Round(time.Millisecond))
		default:
			what = fmt.Sprintf("%d echoed; hung up", r.echoed)
		}
		fmt.Fprintf(tw, "client %d\t%s\t%s\n", r.client, kind, what)
	}
	tw.Flush()
	fmt.Fprintf(out, "server: %d connections closed by their clients, %d cut after %v idle, %d other errors\n",
		rep.closedByClient, rep.cutIdle, cfg.idle, rep.otherErrs)
}
