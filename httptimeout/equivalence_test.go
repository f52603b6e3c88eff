package httptimeout_test

// The same scenarios run through http.TimeoutHandler and through
// httptimeout.New, and must produce the same outcome: what the client gets,
// what the handler sees, what the server logs and how ServeHTTP panics. They
// run in three modes: directly against an httptest.ResponseRecorder inside a
// synctest bubble, where time is exact, and against a real server on
// loopback over HTTP/1.1 and over HTTP/2. Every scenario also checks its
// claim on the outcome, so that it fails if both handlers change the same
// way, or if it stops testing what its name says.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/httptimeout"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/go-timingwheel/timingwheel/internal/wheeltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type mode int

const (
	modeDirect mode = iota // ServeHTTP on a ResponseRecorder, in a synctest bubble
	modeHTTP1              // httptest.Server, HTTP/1.1
	modeHTTP2              // httptest.Server with TLS, HTTP/2
)

func (m mode) String() string { return [...]string{"direct", "http1", "http2"}[m] }

// A wrapFunc has http.TimeoutHandler's signature.
type wrapFunc func(h http.Handler, dt time.Duration, msg string) http.Handler

func wheel(st *timingwheel.SystemTimer) wrapFunc {
	return func(h http.Handler, dt time.Duration, msg string) http.Handler {
		return httptimeout.New(st, h, dt, msg)
	}
}

// A probe connects a scenario's handler with the harness.
type probe struct {
	mode  mode
	start time.Time // when the request started; exact in modeDirect

	served     chan struct{} // closed once the timeout handler's ServeHTTP has returned or panicked
	finished   chan struct{} // closed once the inner handler has returned, panicked or exited
	disconnect func()        // the client goes away

	late sync.WaitGroup // goroutines from afterServed

	mu    sync.Mutex // guards notes
	notes []string
}

// afterServed runs f on a goroutine of its own once ServeHTTP has returned;
// the harness waits for it.
func (p *probe) afterServed(f func()) {
	p.late.Go(func() {
		<-p.served
		f()
	})
}

func newProbe(m mode) *probe {
	return &probe{mode: m, served: make(chan struct{}), finished: make(chan struct{})}
}

// note records what the handler saw.
func (p *probe) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notes = append(p.notes, fmt.Sprintf(format, args...))
}

// An outcome is everything observable about one request.
type outcome struct {
	Status           int
	Header           http.Header // without Date
	Body             string
	Trailer          http.Header
	ContentLength    int64    // server modes
	TransferEncoding []string // server modes
	ClientErr        bool     // server modes: the request failed
	Panic            string   // modeDirect: "%T: %v" of the value ServeHTTP panicked with
	Notes            []string // what the handler saw
	Log              []string // the server's log, first lines, addresses blanked

	Elapsed time.Duration // modeDirect: how long ServeHTTP took; compared apart
}

type scenario struct {
	name   string
	method string // "" is GET
	dt     time.Duration
	msg    string
	// outer, if set, runs in front of the timeout handler: it can set
	// headers on the server's ResponseWriter or wrap it.
	outer func(p *probe, w http.ResponseWriter) http.ResponseWriter
	// parentTimeout, if not 0, gives the incoming request a deadline.
	parentTimeout time.Duration
	inner         func(p *probe, w http.ResponseWriter, r *http.Request)
	logs          func(m mode) int // messages the server logs; nil is none
	check         func(t *testing.T, m mode, o outcome)
}

var errBoom = errors.New("boom")

// pusher is an outer ResponseWriter that can push.
type pusher struct {
	http.ResponseWriter
	p *probe
}

func (pw pusher) Push(target string, _ *http.PushOptions) error {
	pw.p.note("pushed %s", target)
	return nil
}

// noteWrite writes s and notes what Write returned.
func noteWrite(p *probe, w http.ResponseWriter, what, s string) {
	n, err := w.Write([]byte(s))
	p.note("%s: %d, %v", what, n, err)
}

// waitTimeout blocks until the handler's context is done, notes its error,
// and then waits until ServeHTTP has answered in the handler's place.
func waitTimeout(p *probe, r *http.Request) {
	<-r.Context().Done()
	p.note("ctx err: %v", r.Context().Err())
	<-p.served
}

func oneLog(mode) int { return 1 }

func serverLog(m mode) int {
	if m == modeDirect {
		return 0 // the harness recovers the panic
	}
	return 1
}

// checkPanic checks that the request panicked with v: in modeDirect,
// ServeHTTP panicked with it; on a server, the client saw the connection or
// stream fail and the server logged the value (unless logged is "").
func checkPanic(t *testing.T, m mode, o outcome, v, logged string) {
	t.Helper()
	if m == modeDirect {
		assert.Equal(t, v, o.Panic)
		return
	}
	assert.True(t, o.ClientErr, "the client sees the request fail")
	if logged == "" {
		assert.Empty(t, o.Log)
		return
	}
	prefix := "http: "
	if m == modeHTTP2 {
		prefix = "http2: "
	}
	assert.Equal(t, []string{prefix + "panic serving ADDR: " + logged}, o.Log)
}

func scenarios() []scenario {
	const (
		long  = time.Minute           // never reached: the handler returns first
		short = 20 * time.Millisecond // reached: the handler waits for its context
	)
	return []scenario{{
		name: "ok/status-headers-body",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			dl, ok := r.Context().Deadline()
			p.note("deadline: %v", ok)
			if p.mode == modeDirect {
				p.note("deadline in %v", dl.Sub(p.start))
			}
			p.note("ctx err: %v", r.Context().Err())
			p.note("server in ctx: %v", r.Context().Value(http.ServerContextKey) != nil)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-A", "1")
			w.Header().Add("X-Multi", "1")
			w.Header().Add("X-Multi", "2")
			w.WriteHeader(http.StatusCreated)
			noteWrite(p, w, "write", "hello, ")
			n, err := io.WriteString(w, "world")
			p.note("WriteString: %d, %v", n, err)
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusCreated, o.Status)
			assert.Equal(t, "hello, world", o.Body)
			assert.Equal(t, "1", o.Header.Get("X-A"))
			assert.Equal(t, []string{"1", "2"}, o.Header.Values("X-Multi"))
			assert.Equal(t, "text/plain; charset=utf-8", o.Header.Get("Content-Type"))
			want := []string{"deadline: true", "ctx err: <nil>", "server in ctx: true", "write: 7, <nil>", "WriteString: 5, <nil>"}
			if m == modeDirect {
				want = slices.Insert(want, 1, "deadline in 1m0s")
			}
			assert.Equal(t, want, o.Notes)
		},
	}, {
		name: "ok/implicit-200",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			noteWrite(p, w, "write", "x")
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusOK, o.Status)
			assert.Equal(t, "x", o.Body)
		},
	}, {
		name:  "ok/nothing-written",
		dt:    long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusOK, o.Status)
			assert.Empty(t, o.Body)
		},
	}, {
		name: "ok/header-set-after-WriteHeader-is-sent",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			w.Header().Set("X-Late", "1") // ignored by a plain ResponseWriter, sent by the timeout handler
			noteWrite(p, w, "write", "x")
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusAccepted, o.Status)
			assert.Equal(t, "1", o.Header.Get("X-Late"))
		},
	}, {
		name: "ok/superfluous-WriteHeader-is-logged",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			w.WriteHeader(http.StatusInternalServerError)
			noteWrite(p, w, "write", "x")
		},
		logs: oneLog,
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusCreated, o.Status)
			require.Len(t, o.Log, 1)
			// Names the scenario's handler, this file and its line.
			assert.Regexp(t, `^http: superfluous response.WriteHeader call from github.com/go-timingwheel/timingwheel/httptimeout_test\.scenarios\.func\d+ \(equivalence_test\.go:\d+\)$`, o.Log[0])
		},
	}, {
		name: "ok/http.Error-after-WriteHeader-names-its-caller",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			http.Error(w, "oops", http.StatusInternalServerError)
		},
		logs: oneLog,
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusOK, o.Status)
			assert.Equal(t, "oops\n", o.Body)
			require.Len(t, o.Log, 1)
			assert.Regexp(t, `call from github.com/go-timingwheel/timingwheel/httptimeout_test\.scenarios\.func\d+ `, o.Log[0])
		},
	}, {
		name: "ok/writes-after-return-go-nowhere",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "body")
			p.afterServed(func() {
				noteWrite(p, w, "straggler write", "late")
				w.WriteHeader(http.StatusInternalServerError) // logged: the header was written
			})
		},
		logs: oneLog,
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusOK, o.Status)
			assert.Equal(t, "body", o.Body)
			assert.Equal(t, []string{"straggler write: 4, <nil>"}, o.Notes)
			require.Len(t, o.Log, 1)
			assert.Regexp(t, `superfluous response.WriteHeader call from github.com/go-timingwheel/timingwheel/httptimeout_test\.scenarios\.func\d+\.\d+ `, o.Log[0])
		},
	}, {
		name: "ok/content-type-sniffed",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			noteWrite(p, w, "write", "<html><body>hi</body></html>")
		},
		check: func(t *testing.T, m mode, o outcome) {
			if m != modeDirect { // a ResponseRecorder sniffs only without WriteHeader
				assert.Equal(t, "text/html; charset=utf-8", o.Header.Get("Content-Type"))
			}
		},
	}, {
		name: "ok/large-body",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			chunk := strings.Repeat("0123456789abcdef", 64) // 1 KiB
			for range 100 {
				io.WriteString(w, chunk)
			}
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Len(t, o.Body, 100<<10)
			if m == modeHTTP1 {
				assert.Equal(t, []string{"chunked"}, o.TransferEncoding)
			}
		},
	}, {
		name: "ok/trailers",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-T")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "body")
			w.Header().Set("X-T", "declared")
			w.Header().Set(http.TrailerPrefix+"X-U", "undeclared")
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, "body", o.Body)
			assert.Equal(t, "declared", o.Trailer.Get("X-T"))
			if m != modeDirect {
				assert.Equal(t, "undeclared", o.Trailer.Get("X-U"))
			}
		},
	}, {
		name:   "ok/HEAD",
		method: http.MethodHead,
		dt:     long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-A", "1")
			noteWrite(p, w, "write", "not sent")
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusOK, o.Status)
			assert.Equal(t, "1", o.Header.Get("X-A"))
			assert.Equal(t, []string{"write: 8, <nil>"}, o.Notes, "the buffer takes the write")
			if m != modeDirect {
				assert.Empty(t, o.Body)
			}
		},
	}, {
		name: "ok/1xx-is-buffered-as-the-status",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusOK) // superfluous: 103 took the place of the status
			noteWrite(p, w, "write", "x")
		},
		logs: oneLog,
		check: func(t *testing.T, m mode, o outcome) {
			if m == modeDirect {
				assert.Equal(t, http.StatusEarlyHints, o.Status)
			} else {
				assert.Equal(t, http.StatusOK, o.Status, "103, then the implicit 200 of the first Write")
			}
			require.Len(t, o.Log, 1)
			assert.Contains(t, o.Log[0], "superfluous")
		},
	}, {
		name: "ok/headers-merged-over-the-servers",
		dt:   long,
		outer: func(p *probe, w http.ResponseWriter) http.ResponseWriter {
			w.Header().Set("X-Outer", "outer")
			w.Header().Set("X-Both", "outer")
			return w
		},
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			p.note("outer header visible: %q", w.Header().Get("X-Outer"))
			w.Header().Set("X-Both", "inner")
			w.Header().Set("X-Inner", "inner")
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, "outer", o.Header.Get("X-Outer"))
			assert.Equal(t, []string{"inner"}, o.Header.Values("X-Both"))
			assert.Equal(t, "inner", o.Header.Get("X-Inner"))
			assert.Equal(t, []string{`outer header visible: ""`}, o.Notes)
		},
	}, {
		name: "ok/push-passed-on",
		dt:   long,
		outer: func(p *probe, w http.ResponseWriter) http.ResponseWriter {
			return pusher{w, p}
		},
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			p.note("Push: %v", w.(http.Pusher).Push("/style.css", nil))
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, []string{"pushed /style.css", "Push: <nil>"}, o.Notes)
		},
	}, {
		name: "ok/writer-interfaces",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			var names []string
			typ := reflect.TypeOf(w)
			for i := range typ.NumMethod() {
				names = append(names, typ.Method(i).Name)
			}
			p.note("methods: %v", names)
			for _, c := range []struct {
				name string
				ok   bool
			}{
				{"Flusher", is[http.Flusher](w)},
				{"Hijacker", is[http.Hijacker](w)},
				{"Pusher", is[http.Pusher](w)},
				{"ReaderFrom", is[io.ReaderFrom](w)},
				{"StringWriter", is[io.StringWriter](w)},
				{"CloseNotifier", is[interface{ CloseNotify() <-chan bool }](w)},
				{"Unwrap", is[interface{ Unwrap() http.ResponseWriter }](w)},
			} {
				p.note("%s: %v", c.name, c.ok)
			}
			rc := http.NewResponseController(w)
			p.note("Flush: %v", rc.Flush())
			_, _, err := rc.Hijack()
			p.note("Hijack: %v", err)
			p.note("SetReadDeadline: %v", rc.SetReadDeadline(time.Time{}))
			p.note("SetWriteDeadline: %v", rc.SetWriteDeadline(time.Time{}))
			p.note("EnableFullDuplex: %v", rc.EnableFullDuplex())
			p.note("Push: %v", w.(http.Pusher).Push("/style.css", nil))
		},
		check: func(t *testing.T, m mode, o outcome) {
			notes := strings.Join(o.Notes, "\n")
			assert.Contains(t, notes, "methods: [Header Push Write WriteHeader]")
			assert.Contains(t, notes, "Flusher: false")
			assert.Contains(t, notes, "Hijacker: false")
			assert.Contains(t, notes, "Unwrap: false")
			assert.Contains(t, notes, "Flush: feature not supported")
			assert.Contains(t, notes, "SetWriteDeadline: feature not supported")
			// Neither a ResponseRecorder nor an HTTP/1 server can push, and
			// Go's HTTP/2 client turns pushes off.
			assert.Contains(t, notes, "Push: feature not supported")
		},
	}, {
		name: "timeout/msg",
		dt:   short,
		msg:  "too slow",
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Inner", "1")
			w.WriteHeader(http.StatusCreated)
			noteWrite(p, w, "early write", "partial")
			waitTimeout(p, r)
			noteWrite(p, w, "late write", "more")
			w.WriteHeader(http.StatusOK) // no effect, and not logged
			p.note("header map still usable: %v", w.Header().Get("X-Inner"))
			// A bad code still panics; the panic comes too late to matter.
			defer func() { p.note("late panic: %v", recover()) }()
			w.WriteHeader(0)
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusServiceUnavailable, o.Status)
			assert.Equal(t, "too slow", o.Body)
			assert.Empty(t, o.Header.Get("X-Inner"), "the handler's headers are dropped")
			assert.Equal(t, []string{
				"early write: 7, <nil>",
				"ctx err: context deadline exceeded",
				"late write: 0, http: Handler timeout",
				"header map still usable: 1",
				"late panic: invalid WriteHeader code 0",
			}, o.Notes)
			if m != modeDirect {
				assert.Equal(t, "text/plain; charset=utf-8", o.Header.Get("Content-Type"))
			}
		},
	}, {
		name: "timeout/default-body",
		dt:   short,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			waitTimeout(p, r)
			n, err := w.Write([]byte("late"))
			p.note("late write: %d, is ErrHandlerTimeout: %v", n, err == http.ErrHandlerTimeout)
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusServiceUnavailable, o.Status)
			assert.Equal(t, "<html><head><title>Timeout</title></head><body><h1>Timeout</h1></body></html>", o.Body)
			assert.Equal(t, []string{"ctx err: context deadline exceeded", "late write: 0, is ErrHandlerTimeout: true"}, o.Notes)
			if m != modeDirect {
				assert.Equal(t, "text/html; charset=utf-8", o.Header.Get("Content-Type"))
			}
		},
	}, {
		name: "timeout/outer-headers-kept",
		dt:   short,
		outer: func(p *probe, w http.ResponseWriter) http.ResponseWriter {
			w.Header().Set("X-Outer", "outer")
			return w
		},
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Inner", "inner")
			waitTimeout(p, r)
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusServiceUnavailable, o.Status)
			assert.Equal(t, "outer", o.Header.Get("X-Outer"))
			assert.Empty(t, o.Header.Get("X-Inner"))
		},
	}, {
		name:          "timeout/the-incoming-deadline-is-earlier",
		dt:            long,
		msg:           "parent",
		parentTimeout: short,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			if dl, _ := r.Context().Deadline(); p.mode == modeDirect {
				p.note("deadline in %v", dl.Sub(p.start))
			}
			waitTimeout(p, r)
			noteWrite(p, w, "late write", "x")
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusServiceUnavailable, o.Status)
			assert.Equal(t, "parent", o.Body, "the incoming deadline counts as a timeout")
			want := []string{"ctx err: context deadline exceeded", "late write: 0, http: Handler timeout"}
			if m == modeDirect {
				want = slices.Insert(want, 0, "deadline in 20ms")
				assert.Equal(t, short, o.Elapsed)
			}
			assert.Equal(t, want, o.Notes)
		},
	}, {
		name: "ok/largest-dt",
		dt:   math.MaxInt64,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			_, ok := r.Context().Deadline()
			p.note("deadline: %v, ctx err: %v", ok, r.Context().Err())
			io.WriteString(w, "x")
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusOK, o.Status)
			assert.Equal(t, []string{"deadline: true, ctx err: <nil>"}, o.Notes)
		},
	}, {
		name: "timeout/Goexit-waits-for-the-deadline",
		dt:   short,
		msg:  "gone",
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "partial")
			runtime.Goexit()
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusServiceUnavailable, o.Status)
			assert.Equal(t, "gone", o.Body)
			if m == modeDirect {
				assert.Equal(t, short, o.Elapsed)
			}
		},
	}, {
		name: "timeout/panic-after-is-dropped",
		dt:   short,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			waitTimeout(p, r)
			panic(errBoom)
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusServiceUnavailable, o.Status)
			assert.False(t, o.ClientErr)
			assert.Empty(t, o.Panic)
			assert.Empty(t, o.Log)
		},
	}, {
		name: "timeout/push-after-still-passed-on",
		dt:   short,
		outer: func(p *probe, w http.ResponseWriter) http.ResponseWriter {
			return pusher{w, p}
		},
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			waitTimeout(p, r)
			p.note("Push: %v", w.(http.Pusher).Push("/late.css", nil))
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, []string{"ctx err: context deadline exceeded", "pushed /late.css", "Push: <nil>"}, o.Notes)
		},
	}, {
		name: "canceled/client-gone",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "partial")
			p.disconnect()
			waitTimeout(p, r)
			noteWrite(p, w, "late write", "more")
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, []string{"ctx err: context canceled", "late write: 0, context canceled"}, o.Notes)
			if m == modeDirect {
				assert.Equal(t, http.StatusServiceUnavailable, o.Status)
				assert.Empty(t, o.Body, "no message when the client is gone")
			} else {
				assert.True(t, o.ClientErr)
			}
		},
	}, {
		name: "panic/value",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "partial")
			panic(errBoom)
		},
		logs: serverLog,
		check: func(t *testing.T, m mode, o outcome) {
			checkPanic(t, m, o, "*errors.errorString: boom", "boom")
			assert.Empty(t, o.Body, "nothing buffered is sent")
		},
	}, {
		name: "panic/ErrAbortHandler-is-not-logged",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			panic(http.ErrAbortHandler)
		},
		check: func(t *testing.T, m mode, o outcome) {
			checkPanic(t, m, o, "*errors.errorString: net/http: abort Handler", "")
		},
	}, {
		name: "panic/nil",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			panic(nil)
		},
		logs: serverLog,
		check: func(t *testing.T, m mode, o outcome) {
			const v = "panic called with nil argument"
			checkPanic(t, m, o, "*runtime.PanicNilError: "+v, v)
		},
	}, {
		name: "panic/WriteHeader-0",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(0)
		},
		logs: serverLog,
		check: func(t *testing.T, m mode, o outcome) {
			checkPanic(t, m, o, "string: invalid WriteHeader code 0", "invalid WriteHeader code 0")
		},
	}, {
		name: "panic/WriteHeader-1000-after-a-good-one",
		dt:   long,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			w.WriteHeader(1000)
		},
		logs: serverLog,
		check: func(t *testing.T, m mode, o outcome) {
			checkPanic(t, m, o, "string: invalid WriteHeader code 1000", "invalid WriteHeader code 1000")
		},
	},
		expiredAtStart("timeout/zero-dt", 0, "zero"),
		expiredAtStart("timeout/negative-dt", -time.Second, "negative"),
	}
}

// expiredAtStart is the scenario of a time limit that has passed when the
// handler starts, zero or negative: the handler's context is done at once,
// and the reply is the 503 with msg.
func expiredAtStart(name string, dt time.Duration, msg string) scenario {
	return scenario{
		name: name,
		dt:   dt,
		msg:  msg,
		inner: func(p *probe, w http.ResponseWriter, r *http.Request) {
			p.note("ctx err at start: %v", r.Context().Err())
			<-p.served
		},
		check: func(t *testing.T, m mode, o outcome) {
			assert.Equal(t, http.StatusServiceUnavailable, o.Status)
			assert.Equal(t, msg, o.Body)
			assert.Equal(t, []string{"ctx err at start: context deadline exceeded"}, o.Notes)
		},
	}
}

func is[T any](v any) bool {
	_, ok := v.(T)
	return ok
}

// compare checks both outcomes against the scenario's claims and each other.
func compare(t *testing.T, sc scenario, m mode, want, got outcome) {
	t.Helper()
	if sc.check != nil {
		// No subtests: t may be in a synctest bubble.
		for _, c := range []struct {
			name string
			o    outcome
		}{{"net/http's", want}, {"the wheel's", got}} {
			failed := t.Failed()
			sc.check(t, m, c.o)
			if !failed && t.Failed() {
				t.Logf("the failures above are in %s outcome", c.name)
			}
		}
	}
	if m == modeDirect {
		// net/http's runtime timer fires on time; the wheel's context at
		// most one tick (1ms) late, never early.
		assert.GreaterOrEqual(t, got.Elapsed, want.Elapsed, "elapsed")
		assert.LessOrEqual(t, got.Elapsed, want.Elapsed+time.Millisecond, "elapsed")
		if want.Elapsed == 0 {
			assert.Zero(t, got.Elapsed, "elapsed")
		}
	}
	want.Elapsed, got.Elapsed = 0, 0
	assert.Equal(t, want, got, "the wheel's outcome differs from net/http's")
}

func TestEquivalenceDirect(t *testing.T) { testEquivalenceDirect(t, false) }

// TestEquivalenceStoppedTimer: with its SystemTimer stopped, the handler
// falls back to context.WithTimeout and serves as net/http's does, to the
// nanosecond.
func TestEquivalenceStoppedTimer(t *testing.T) { testEquivalenceDirect(t, true) }

// testEquivalenceDirect calls each scenario's handler directly, wrapped by
// net/http and by the wheel (its SystemTimer stopped first if stopped), and
// compares the outcomes; with stopped, to the nanosecond.
func testEquivalenceDirect(t *testing.T, stopped bool) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st, err := timingwheel.New()
				require.NoError(t, err)
				defer st.Stop()
				if stopped {
					st.Stop()
				}
				want := runDirect(t, sc, http.TimeoutHandler)
				got := runDirect(t, sc, wheel(st))
				if stopped {
					assert.Equal(t, want.Elapsed, got.Elapsed, "elapsed")
				}
				compare(t, sc, modeDirect, want, got)
			})
		})
	}
}

func TestEquivalenceHTTP1(t *testing.T) { testEquivalenceServer(t, modeHTTP1) }
func TestEquivalenceHTTP2(t *testing.T) { testEquivalenceServer(t, modeHTTP2) }

func testEquivalenceServer(t *testing.T, m mode) {
	st := wheeltest.New(t)
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			want := runServer(t, m, sc, http.TimeoutHandler)
			got := runServer(t, m, sc, wheel(st))
			compare(t, sc, m, want, got)
		})
	}
}

// runDirect runs the scenario through wrap with a ResponseRecorder. It must
// run in a synctest bubble.
func runDirect(t *testing.T, sc scenario, wrap wrapFunc) outcome {
	p := newProbe(modeDirect)
	logs := newLogBuffer()
	srv := &http.Server{ErrorLog: log.New(logs, "", 0)}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), http.ServerContextKey, srv))
	defer cancel()
	p.disconnect = cancel
	if sc.parentTimeout != 0 {
		var cancelParent context.CancelFunc
		parent, cancelParent = context.WithTimeout(parent, sc.parentTimeout)
		defer cancelParent()
	}
	r := httptest.NewRequestWithContext(parent, cmp.Or(sc.method, http.MethodGet), "http://example.com/", nil)
	rec := httptest.NewRecorder()
	var w http.ResponseWriter = rec
	if sc.outer != nil {
		w = sc.outer(p, w)
	}
	h := wrap(innerHandler(sc, p), sc.dt, sc.msg)

	var o outcome
	p.start = time.Now()
	func() {
		defer func() {
			if v := recover(); v != nil {
				o.Panic = fmt.Sprintf("%T: %v", v, v)
			}
		}()
		h.ServeHTTP(w, r)
	}()
	o.Elapsed = time.Since(p.start)
	close(p.served)
	<-p.finished // in a bubble: a deadlock fails the test
	p.late.Wait()
	if sc.logs != nil {
		logs.waitWrites(t, sc.logs(modeDirect))
	}

	res := rec.Result()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	o.Status, o.Header, o.Body, o.Trailer = res.StatusCode, res.Header, string(body), res.Trailer
	o.Notes, o.Log = p.notes, normalizeLog(logs.String())
	return o
}

// runServer runs the scenario through wrap on a loopback server.
func runServer(t *testing.T, m mode, sc scenario, wrap wrapFunc) outcome {
	p := newProbe(m)
	logs := newLogBuffer()
	h := wrap(innerHandler(sc, p), sc.dt, sc.msg)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(p.served)
		if sc.parentTimeout != 0 {
			ctx, cancel := context.WithTimeout(r.Context(), sc.parentTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		if sc.outer != nil {
			w = sc.outer(p, w)
		}
		h.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = log.New(logs, "", 0)
	if m == modeHTTP2 {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.disconnect = cancel
	req, err := http.NewRequestWithContext(ctx, cmp.Or(sc.method, http.MethodGet), srv.URL, nil)
	require.NoError(t, err)
	p.start = time.Now()

	var o outcome
	res, err := srv.Client().Do(req)
	if err == nil {
		var body []byte
		body, err = io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[m == modeHTTP2], res.Proto)
		o.Status, o.Header, o.Body, o.Trailer = res.StatusCode, res.Header, string(body), res.Trailer
		o.ContentLength, o.TransferEncoding = res.ContentLength, res.TransferEncoding
		o.Header.Del("Date")
	}
	o.ClientErr = err != nil
	testwait.Recv(t, p.served, "ServeHTTP")
	testwait.Recv(t, p.finished, "the handler")
	late := make(chan struct{})
	go func() {
		p.late.Wait()
		close(late)
	}()
	testwait.Recv(t, late, "the handler's goroutines")
	if sc.logs != nil {
		logs.waitWrites(t, sc.logs(m))
	}
	srv.Close()
	o.Notes, o.Log = p.notes, normalizeLog(logs.String())
	return o
}

func innerHandler(sc scenario, p *probe) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(p.finished)
		sc.inner(p, w, r)
	})
}

var addrRE = regexp.MustCompile(`(127\.0\.0\.1|\[::1\]):\d+`)

// normalizeLog returns the first line of each message net/http logged, with
// addresses blanked; the rest is a stack trace.
func normalizeLog(s string) []string {
	var lines []string
	for line := range strings.Lines(s) {
		line = strings.TrimSuffix(line, "\n")
		if (strings.HasPrefix(line, "http: ") || strings.HasPrefix(line, "http2: ")) &&
			!strings.Contains(line, "TLS handshake error") {
			lines = append(lines, addrRE.ReplaceAllString(line, "ADDR"))
		}
	}
	return lines
}
