// Package idleconn gives every connection of a server an idle timeout on a
// timing wheel: a connection on which no data has moved for the idle time
// fails its I/O, as after an expired deadline, and is closed if you ask.
//
//	st, err := timingwheel.New()
//	...
//	defer st.Stop() // after the server has shut down
//	ln, err := net.Listen("tcp", ":8080")
//	...
//	ln, err = idleconn.Listen(ln, st, 2*time.Minute)
//	...
//	srv.Serve(ln) // an http.Server, or any accept loop
//
// [Wrap] does the same for one net.Conn.
//
// # The baseline, and what a Read costs
//
// Without this package a server gives a connection an idle timeout by
// calling conn.SetReadDeadline(time.Now().Add(idle)) before every Read. That
// reads the wall and monotonic clocks, and then goes through the runtime's
// netpoller: it locks the socket's poll descriptor and modifies a runtime
// timer of that connection in its P's heap, hundreds of nanoseconds a call.
//
// A [Conn] has one [timingwheel.Timer], a field of the Conn, bound once by
// [timingwheel.SystemTimer.Bind]. What a Read or Write that moves data
// costs the Conn, besides the underlying call:
//
//   - Exact mode (the default): [timingwheel.Timer.Postpone] of a pending
//     timer to a later deadline, which takes no lock and touches no bucket:
//     one monotonic clock read and one compare-and-swap of the timer's state
//     word; and three atomic loads of the Conn's state.
//   - Slack mode ([WithSlack]): an atomic load of the Conn's activity note,
//     and a store when it is clear (the first Read or Write after a check);
//     and an atomic load of the Conn's state. No clock read.
//
// Neither allocates (TestAllocs pins it). BenchmarkDeadline compares the
// three on a loopback TCP connection in one run:
//
//	go test -run '^$' -bench Deadline ./idleconn
//
// Off the hot path, a connection costs the wheel little: in the exact mode,
// a timer pushed back many times is moved by the wheel's driver when the
// bucket it was in comes due, about once per idle time; in the slack mode,
// one timer run per slack (the check), on the wheel's workers.
//
// # When a connection expires
//
// The idle deadline is idle after the connection's last activity: [Wrap]
// (or the Accept that wrapped it), and the return of every Read and Write
// that moved at least one byte. A Read that is blocked waiting for data is
// not activity: a connection whose reader waits for a silent peer is idle.
// Neither is time the program spends between calls, computing a response:
// a handler that neither reads nor writes for longer than idle has its
// connection cut. Choose idle longer than the longest silence of a healthy
// connection, in both directions.
//
// A Write counts when it returns, so a single Write that lasts longer than
// idle (a large buffer to a slow reader) is cut even while its bytes trickle
// out.
//
// When the deadline passes:
//
//   - Exact mode: the connection expires when the timer fires, at or after
//     the deadline and at most one tick of st later ([timingwheel.WithTick];
//     the wheel's bound, when its workers keep up). Never before.
//   - Slack mode: a check every slack notes whether the connection was
//     active since the previous check, and reads the clock. The connection
//     expires between idle and idle + slack + 2 ticks after its last
//     activity, never before: the check that first sees the last activity
//     comes at most slack and a tick after it, and records a clock reading
//     taken after it; the connection expires idle after that reading, at
//     most a tick late. Each check costs a timer run; the slack mode saves
//     CPU when a connection reads or writes more often than once per slack.
//
// Activity racing the expiry is decided by the timer: a Read that returns
// data just as the timer fires returns its data, and the calls after it
// fail. In both modes the timeout is measured on the monotonic clock as
// the wheel reads it (the slack mode's checks read time.Now), so st should
// run on the real clock, its default.
//
// Expiry is final. Once the connection has expired:
//
//   - A Read or Write blocked in the underlying conn returns at once with
//     the error of an expired deadline: the Conn sets a deadline in the past
//     on the underlying conn, which makes the net package's conns (and
//     net.Pipe, and crypto/tls over them) return a *net.OpError wrapping
//     os.ErrDeadlineExceeded. So errors.Is(err, os.ErrDeadlineExceeded) is
//     true, and err is a net.Error whose Timeout method reports true.
//   - Every later Read and Write returns such an error at once, without
//     calling the underlying conn, until Close; after Close they return
//     what the underlying conn returns after Close (net.ErrClosed).
//   - By default the connection stays open: the owner closes it, as every
//     reading loop does when its Read fails. With [WithCloseOnIdle] the
//     timer's callback closes it too, which frees the socket at once even
//     when no goroutine is reading it; blocked and later calls still return
//     the timeout error, not net.ErrClosed, and the owner's first Close
//     returns nil. An underlying conn whose SetDeadline fails (one that does
//     not support deadlines) is closed in either case, since nothing else
//     unblocks its calls.
//   - Close stops the timer. A Conn closed before its idle timeout never
//     expires, and holds nothing on the wheel.
//
// # Your own deadlines
//
// SetDeadline, SetReadDeadline and SetWriteDeadline go to the underlying
// conn, and work beside the idle timeout: a deadline that passes first fails
// the I/O as usual (also with os.ErrDeadlineExceeded), and the connection
// can be used again after a new deadline is set; the idle timeout does not
// move them. After the idle timeout has passed no deadline revives the
// connection: a deadline set then is followed by the past one again, so a
// call blocked in the underlying conn cannot miss the expiry.
//
// An [http.Server] sets read and write deadlines on its connections for its
// ReadTimeout, ReadHeaderTimeout, WriteTimeout and IdleTimeout, and clears
// them, on every request; those calls reach the underlying conn. To have
// the wheel keep idle connections in check instead of a runtime timer per
// connection, leave IdleTimeout and ReadTimeout zero (http.Server uses
// ReadTimeout as the idle timeout when IdleTimeout is zero). The server
// then reads the next request of a kept-alive connection until the idle
// timeout fails that Read, and closes the connection. An idle timeout does
// not stop a client that sends a byte now and then: ReadHeaderTimeout still
// bounds how long a request's header may take, with the runtime timer that
// comes with it.
//
// # Errors, limits, and what a Conn is not
//
// [Wrap] and [Listen] take a nil SystemTimer for [timingwheel.Default], as
// the package-level functions of timingwheel use it. They return errors for
// bad input: a nil conn or listener, an idle timeout that is not positive,
// a nil Option, a slack that is not positive. [Wrap] also returns an error when st cannot arm the
// timer (wrapping [timingwheel.ErrStopped] or
// [timingwheel.ErrTooManyPending] under [timingwheel.WithMaxPending]); the
// listener of [Listen] then closes the new connection and returns the error
// from Accept, as a temporary one when the wheel is only full.
//
// Stopping st ends the idle timeouts of the connections still open: their
// timers are returned by [timingwheel.SystemTimer.Stop] and never run.
// Stop st after the server has shut down.
//
// A Conn is a net.Conn and nothing more: it hides the underlying conn's
// other methods (CloseWrite, io.ReaderFrom's sendfile path, SetKeepAlive),
// so io.Copy and net/http move data through its Read and Write, which keeps
// the accounting right. [Conn.NetConn] returns the underlying conn for the
// rest; I/O made on it directly does not count as activity. For TLS, wrap
// the TCP listener and put crypto/tls's listener over it (as
// http.Server.ServeTLS does), so that the handshake counts as activity and
// the idle timeout sees the socket, not the TLS layer.
package idleconn
