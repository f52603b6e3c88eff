package httptimeout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"path"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// defaultBody is the 503's body when New gets no message; net/http's.
const defaultBody = "<html><head><title>Timeout</title></head><body><h1>Timeout</h1></body></html>"

// New returns a handler that runs h with the time limit dt, as
// http.TimeoutHandler(h, dt, msg) does, with the deadline of every request
// kept on st, or on timingwheel.Default if st is nil. If h runs for longer than dt, the client gets 503 Service
// Unavailable with msg as the body (a short HTML page if msg is empty), and
// h's later writes return [http.ErrHandlerTimeout]. See the package doc for
// the whole behaviour and the few differences.
//
// New panics if h is nil.
func New(st *timingwheel.SystemTimer, h http.Handler, dt time.Duration, msg string) http.Handler {
	if st == nil {
		st = timingwheel.Default() // as the time package's functions would
	}
	if h == nil {
		panic("httptimeout: New: nil Handler")
	}
	if msg == "" {
		msg = defaultBody
	}
	return &handler{st: st, next: h, dt: dt, body: msg}
}

type handler struct {
	st   *timingwheel.SystemTimer
	next http.Handler
	dt   time.Duration
	body string // the 503's body after a deadline; never empty
}

func (th *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := th.context(r.Context())
	defer cancel()
	tw := &writer{
		w:      w,
		h:      make(http.Header),
		req:    r.WithContext(ctx),
		cancel: cancel,
	}
	tw.buf = *bytes.NewBuffer(tw.small[:0])
	go tw.serve(th.next)
	<-ctx.Done()
	err := ctx.Err()
	tw.mu.Lock()
	if tw.returned && err != context.DeadlineExceeded {
		// The handler ended the context by returning or panicking: it
		// came first, unless the deadline had passed already.
		panicked := tw.panicked
		if panicked != nil {
			tw.mu.Unlock()
			panic(panicked)
		}
		tw.finishLocked()
		return
	}
	tw.expireLocked(err, th.body)
}

// context returns the request's context with the deadline now+dt on the
// wheel, or, if st is stopped or full, with a runtime timer: st then hands
// out contexts canceled at birth, which would turn every request into a 503.
func (th *handler) context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := th.st.WithTimeout(parent, th.dt)
	select {
	case <-ctx.Done():
		// The cause is the parent's if the parent was canceled first.
		if cause := context.Cause(ctx); errors.Is(cause, timingwheel.ErrStopped) || errors.Is(cause, timingwheel.ErrTooManyPending) {
			cancel()
			return context.WithTimeout(parent, th.dt)
		}
	default:
	}
	return ctx, cancel
}

// A writer is the ResponseWriter the handler gets. It buffers the response
// until ServeHTTP either copies it out (the handler returned in time) or
// replaces it with a 503 (the context was done first).
//
// ServeHTTP waits for the context alone: the handler's goroutine cancels
// it when the handler returns or panics, after setting returned. So waiting
// for the handler costs no channel of its own, where net/http's costs a done
// channel and a 1-buffered panic channel; canceling the handler's context
// as it returns, rather than as ServeHTTP does, is invisible to the
// handler itself.
type writer struct {
	w      http.ResponseWriter // the server's
	h      http.Header         // the handler's header map; not guarded, as for any ResponseWriter
	req    *http.Request       // the handler's request, with the deadline
	cancel context.CancelFunc  // req's context's

	mu          sync.Mutex // guards returned, panicked, buf, err, wroteHeader and code
	returned    bool       // the handler returned or panicked
	panicked    any        // the value the handler panicked with
	buf         bytes.Buffer
	small       [64]byte // buf's first bytes: a short response costs no allocation of its own
	err         error    // once set, Write returns it and WriteHeader does nothing
	wroteHeader bool
	code        int
}

// serve runs h on the handler's goroutine. If h calls runtime.Goexit, the
// context is not canceled and ServeHTTP waits for the deadline, as
// net/http's does.
func (tw *writer) serve(h http.Handler) {
	defer func() {
		if p := recover(); p != nil {
			tw.mu.Lock()
			tw.returned, tw.panicked = true, p
			tw.mu.Unlock()
			tw.cancel()
		}
	}()
	h.ServeHTTP(tw, tw.req)
	tw.mu.Lock()
	tw.returned = true
	tw.mu.Unlock()
	tw.cancel()
}

// finishLocked sends the buffered response: the handler returned in time.
// It unlocks mu.
func (tw *writer) finishLocked() {
	code := tw.code
	if !tw.wroteHeader {
		code = http.StatusOK
	}
	// Detach the body, so that it can be written without holding mu: a
	// goroutine the handler left behind may still write, and, as with
	// net/http's, what it writes now goes nowhere.
	body := tw.buf.Bytes()
	tw.buf = bytes.Buffer{}
	tw.mu.Unlock()

	maps.Copy(tw.w.Header(), tw.h)
	tw.w.WriteHeader(code)
	tw.w.Write(body) // as net/http's, ignoring the error: nobody to tell
}

// expireLocked answers 503 in place of the handler: its context is done
// with err. It unlocks mu.
func (tw *writer) expireLocked(err error, body string) {
	// Comparisons, not errors.Is, like net/http's: a context's Err is one
	// of the two sentinels.
	timedOut := err == context.DeadlineExceeded
	if timedOut {
		tw.err = http.ErrHandlerTimeout
	} else {
		tw.err = err
	}
	tw.mu.Unlock()

	tw.w.WriteHeader(http.StatusServiceUnavailable)
	if timedOut {
		io.WriteString(tw.w, body) // as net/http's, ignoring the error
	}
}

// Header returns the handler's header map. What it holds when the handler
// returns in time is sent, even keys set after WriteHeader.
func (tw *writer) Header() http.Header { return tw.h }

// Write buffers p, or returns the error that ended the request.
func (tw *writer) Write(p []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock() // deferred: bytes.Buffer panics when out of memory
	if tw.err != nil {
		return 0, tw.err
	}
	if !tw.wroteHeader {
		tw.wroteHeader, tw.code = true, http.StatusOK
	}
	return tw.buf.Write(p)
}

// WriteHeader records code, unless the request has ended already. Like
// net/http, it panics on a code that is not three digits and logs a second
// call.
func (tw *writer) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code)) // net/http's words
	}
	tw.mu.Lock()
	superfluous := tw.err == nil && tw.wroteHeader
	if tw.err == nil && !tw.wroteHeader {
		tw.wroteHeader, tw.code = true, code
	}
	tw.mu.Unlock()
	if superfluous {
		f := relevantCaller()
		logf(tw.req, "http: superfluous response.WriteHeader call from %s (%s:%d)", f.Function, path.Base(f.File), f.Line)
	}
}

// Push implements [http.Pusher] by passing the push to the server's
// ResponseWriter, at any time, as net/http's does.
func (tw *writer) Push(target string, opts *http.PushOptions) error {
	if p, ok := tw.w.(http.Pusher); ok {
		return p.Push(target, opts)
	}
	return http.ErrNotSupported
}

// pkgPrefix starts the names of this package's functions.
var pkgPrefix = reflect.TypeFor[handler]().PkgPath() + "."

// relevantCaller returns the innermost frame of the calling goroutine's stack
// outside net/http and this package: the handler code that made the call.
func relevantCaller() runtime.Frame {
	pc := make([]uintptr, 16)
	frames := runtime.CallersFrames(pc[:runtime.Callers(1, pc)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "net/http.") && !strings.HasPrefix(f.Function, pkgPrefix) || !more {
			return f
		}
	}
}

// logf logs to the ErrorLog of r's server, else to the log package's
// standard logger, as net/http does.
func logf(r *http.Request, format string, args ...any) {
	if s, _ := r.Context().Value(http.ServerContextKey).(*http.Server); s != nil && s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}
