package httptimeout_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/httptimeout"
	"github.com/go-timingwheel/timingwheel/internal/wheeltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nopWriter is a ResponseWriter that keeps nothing.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(int)             {}

var hello = []byte("hello, world\n")

func helloHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(hello)
	})
}

// handlers returns net/http's timeout handler and the wheel's, for
// helloHandler with a deadline never reached.
func handlers(st *timingwheel.SystemTimer) map[string]http.Handler {
	return map[string]http.Handler{
		"stdlib": http.TimeoutHandler(helloHandler(), time.Minute, ""),
		"wheel":  httptimeout.New(st, helloHandler(), time.Minute, ""),
	}
}

// serverRequest returns a request whose context is, like a server's, a
// cancelable one.
func serverRequest(tb testing.TB) *http.Request {
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	return httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
}

// TestAllocs pins the promise that the wheel's handler allocates no more
// than net/http's per request.
func TestAllocs(t *testing.T) {
	st := wheeltest.New(t)
	r := serverRequest(t)
	allocs := map[string]float64{}
	for name, h := range handlers(st) {
		w := &nopWriter{h: make(http.Header)}
		allocs[name] = testing.AllocsPerRun(1000, func() {
			clear(w.h)
			h.ServeHTTP(w, r)
		})
	}
	t.Logf("allocations per request: %v", allocs)
	require.NotZero(t, allocs["stdlib"])
	assert.LessOrEqual(t, allocs["wheel"], allocs["stdlib"])
}

// BenchmarkServeHTTP compares the cost of a request that returns in time,
// without the network, on all cores.
func BenchmarkServeHTTP(b *testing.B) {
	st := wheeltest.New(b)
	for _, name := range []string{"stdlib", "wheel"} {
		h := handlers(st)[name]
		b.Run(name, func(b *testing.B) {
			r := serverRequest(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := &nopWriter{h: make(http.Header)}
				for pb.Next() {
					clear(w.h)
					h.ServeHTTP(w, r)
				}
			})
		})
	}
}
