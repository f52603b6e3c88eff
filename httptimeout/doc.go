// Package httptimeout is [http.TimeoutHandler] with its deadlines on a
// timing wheel: every request's time limit is a context from one shared
// [timingwheel.SystemTimer] ([timingwheel.SystemTimer.WithTimeout]) instead
// of a runtime timer each.
//
//	st, err := timingwheel.New()
//	...
//	defer st.Stop() // after the server has shut down
//	srv := &http.Server{Handler: httptimeout.New(st, mux, 2*time.Second, "")}
//
// A nil st is [timingwheel.Default], the SystemTimer of timingwheel's
// package-level functions: httptimeout.New(nil, mux, 2*time.Second, "")
// replaces http.TimeoutHandler(mux, 2*time.Second, "") with nothing to
// make or stop.
//
// # Behaviour
//
// A handler from [New] is a drop-in for the one [http.TimeoutHandler] returns
// with the same arguments; it does the same things in the same order:
//
//   - The request passed to h carries a context derived from the incoming
//     request's, with the deadline now+dt. h runs on a goroutine of its own,
//     and ServeHTTP waits for whichever comes first: h returns, h panics, or
//     the context is done.
//   - h writes to a buffer. Its status (200 if it wrote none) and body, and
//     the headers in its header map when it returns, including ones set after
//     WriteHeader, go to the client when h returns in time. The headers are
//     copied over those already in the ResponseWriter, key by key.
//   - If the deadline passes first, the client gets 503 Service Unavailable
//     and msg as the body, or an HTML page saying "Timeout" if msg is empty;
//     nothing h buffered is sent. Later writes by h return
//     [http.ErrHandlerTimeout], later WriteHeader calls do nothing.
//   - If the context is canceled first (the client went away), the client
//     gets 503 with no body, and later writes by h return
//     [context.Canceled].
//   - If h panics before the deadline, ServeHTTP panics with the same value
//     on the server's goroutine, so the server logs it (or not, for
//     [http.ErrAbortHandler]) and closes the connection, as for a handler
//     that panicked there. A panic after the deadline is dropped. If h calls
//     [runtime.Goexit], the request ends at the deadline.
//   - WriteHeader panics, with the text net/http uses, on a code outside
//     100..999, and logs a second call as net/http does ("http: superfluous
//     response.WriteHeader call from ..."), to the server's ErrorLog.
//   - The ResponseWriter h gets implements [http.Pusher], passing pushes to
//     the server's ResponseWriter ([http.ErrNotSupported] if that cannot
//     push: HTTP/1), and nothing else: not [http.Flusher], [http.Hijacker] or
//     io.ReaderFrom, and it has no Unwrap method, so an
//     [http.ResponseController] returns [http.ErrNotSupported] for Flush,
//     Hijack, deadlines and full duplex. Buffering is the point: a handler
//     cannot flush part of a response it may yet have to replace with a 503.
//
// The tests run the same scenarios through http.TimeoutHandler and through
// this package, over HTTP/1.1 and HTTP/2 on loopback and directly in a
// [testing/synctest] bubble, and demand the same responses.
//
// # Differences
//
//   - The deadline is on the wheel: the context is done at most one tick of
//     st ([timingwheel.WithTick]) after the deadline, never before; its
//     Deadline method reports now+dt exactly.
//   - A cancellation of the incoming request's context (the client went
//     away) reaches the handler's context a goroutine hop later, through
//     context.AfterFunc: the handler's context's Done and Err show it as soon
//     as they are called, but a context the handler derived from it before
//     may still report a nil Err until that goroutine has run (see
//     [timingwheel.SystemTimer.WithDeadline]). The deadline itself reaches
//     every context derived from the handler's at once, as
//     context.DeadlineExceeded.
//   - The handler's context is canceled as the handler returns, not as
//     ServeHTTP does, which no code of the handler's can see. If the deadline
//     has passed by the time ServeHTTP sees the handler return, the client
//     gets the 503, where net/http's picks either at random.
//   - If st is stopped when a request comes in, the request gets a deadline
//     from [context.WithTimeout] instead, and is served exactly as by
//     http.TimeoutHandler. Requests in flight when st stops have their
//     contexts canceled: their clients get 503 with no body, as when a client
//     goes away. So stop st after the server has shut down.
//   - New panics on a nil handler, where http.TimeoutHandler accepts it and
//     panics on every request.
//   - ServeHTTP writes to the server's ResponseWriter, and logs, without
//     holding the lock that the handler's writes take, so a late write
//     returns [http.ErrHandlerTimeout] at once rather than after the 503 has
//     been written to a slow client.
package httptimeout
