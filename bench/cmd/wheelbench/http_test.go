package main

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestHTTPRun runs a small case of every kind against each implementation
// with a context API, and checks that it counts what it should and leaves
// no socket open and none of its goroutines running.
func TestHTTPRun(t *testing.T) {
	pr := newProgress(os.Stderr, true)
	base := httpConfig{conns: 8, n: 100, ctxs: 1, timeout: 30 * time.Second, slowTimeout: 2 * time.Millisecond}
	nested, layered, slow := base, base, base
	nested.ctxs, nested.nested = 3, true
	layered.ctxs, layered.layered = 3, true
	slow.slowEvery = 4
	goroutines := map[string]float64{} // goroutines/req of the layered case, by implementation
	for _, cfg := range []httpConfig{base, nested, layered, slow} {
		for _, spec := range []*ImplSpec{timingwheelSpec, runtimeSpec} {
			t.Run(cfg.label()+"/"+spec.Name, func(t *testing.T) {
				fds := httpOpenFDs()
				c := configCase(cfg, 0, runHTTP)
				r := runCase(c, spec, Tiny, pr, testTimeout)
				if r.Err != nil || r.Skipped != "" || len(r.Warnings) > 0 {
					t.Fatalf("error %v, skipped %q, warnings %q", r.Err, r.Skipped, r.Warnings)
				}
				if got, _ := r.metric("in flight"); got != float64(cfg.conns) {
					t.Errorf("in flight = %v, want %d", got, cfg.conns)
				}
				want := 0.0
				if cfg.slowEvery > 0 {
					want = float64(cfg.n / cfg.slowEvery)
				}
				if got, _ := r.metric("timed out"); got != want {
					t.Errorf("timed out = %v, want %v", got, want)
				}
				checkPositive(t, &r, "req/s", "p99", "CPU/req", "ctx p50")
				g, ok := r.metric("goroutines/req")
				if !ok || g < 0 {
					t.Errorf("goroutines/req = %v, %v", g, ok)
				}
				if cfg.layered {
					goroutines[spec.Name] = g
				}
				checkLeftNothing(t, fds, "main.(*httpServer)", "main.(*httpLoadGen)", "main.runHTTP")
			})
		}
	}
	// The contexts derived from the request's through a value layer start
	// no goroutine of their own under either implementation: a goroutine
	// per derived context would add ctxs-1+1 per request.
	t.Logf("layered case, goroutines/req: %v", goroutines)
	if w, rt := goroutines[timingwheelSpec.Name], goroutines[runtimeSpec.Name]; w > rt+0.5 {
		t.Errorf("layered case: %.2f goroutines/req with the wheel, %.2f with context.WithTimeout", w, rt)
	}
}

// checkPositive fails the test unless r has each of the metrics, above 0.
func checkPositive(t *testing.T, r *Result, metrics ...string) {
	t.Helper()
	for _, m := range metrics {
		if v, ok := r.metric(m); !ok || v <= 0 {
			t.Errorf("%s = %v, %v", m, v, ok)
		}
	}
}

// checkLeftNothing fails t unless the file descriptors open are fds, as
// before the run, and no goroutine is in one of funcs (prefixes of function
// names in a stack).
func checkLeftNothing(t *testing.T, fds int, funcs ...string) {
	t.Helper()
	if got := httpOpenFDs(); got != fds {
		t.Errorf("%d file descriptors open after the run, %d before", got, fds)
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, f := range funcs {
		if strings.Contains(stacks, f) {
			t.Errorf("a goroutine is still in %s:\n%s", f, stacks)
		}
	}
}

// TestHTTPSkipsWithoutContexts: go-zero has no context API, and the table
// says so.
func TestHTTPSkipsWithoutContexts(t *testing.T) {
	cfg := httpConfig{conns: 2, n: 10, ctxs: 1, timeout: time.Second}
	c := configCase(cfg, 0, runHTTP)
	r := runCase(c, gozeroSpec, Tiny, newProgress(os.Stderr, true), testTimeout)
	if r.Err != nil || !strings.HasPrefix(r.Skipped, "no context API") {
		t.Fatalf("error %v, skipped %q", r.Err, r.Skipped)
	}
}

// TestHTTPHoldQueue steps a queue of limit 3 through arrivals, slow
// requests and the last arrival.
func TestHTTPHoldQueue(t *testing.T) {
	var q httpHoldQueue
	q.init(3, 8)
	released := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	check := func(step string, chs []<-chan struct{}, want ...bool) {
		t.Helper()
		for i, ch := range chs {
			if got := released(ch); got != want[i] {
				t.Errorf("%s: request %d released = %v, want %v", step, i, got, want[i])
			}
		}
	}

	a, b, c := q.arrive(), q.arrive(), q.arrive()
	check("3 held", []<-chan struct{}{a, b, c}, false, false, false)
	d := q.arrive()
	check("a 4th releases the oldest", []<-chan struct{}{a, b, c, d}, true, false, false, false)
	q.arriveSlow()
	check("a slow one counts", []<-chan struct{}{b, c, d}, true, false, false)
	q.slowDone()
	e := q.arrive()
	check("back within the limit", []<-chan struct{}{c, d, e}, false, false, false)
	f := q.arrive()
	check("c released", []<-chan struct{}{c, d, e, f}, true, false, false, false)
	g := q.arrive() // the 8th and last
	check("the last releases all", []<-chan struct{}{d, e, f, g}, true, true, true, true)
	if got := q.arrivals(); got != 8 {
		t.Errorf("arrivals = %d, want 8", got)
	}
	if h := q.arrive(); !released(h) {
		t.Errorf("an arrival after the last was held")
	}

	q.init(2, 100)
	a, b = q.arrive(), q.arrive()
	q.releaseAll()
	check("releaseAll", []<-chan struct{}{a, b, q.arrive()}, true, true, true)
}

func TestHTTPFitConns(t *testing.T) {
	for _, tt := range []struct {
		want, limit, open int
		fit               int
		why               string // a part of the message; "" for none
	}{
		{10_000, 1_000_000, 10, 10_000, ""},
		{100, 20_000, 10, 100, ""},
		{9979, 20_000, 10, 9979, ""},
		{10_000, 20_000, 10, 9979, "c=10k needs 20,042 file descriptors (2 a connection, 10 open, 32 spare); the open-file limit (ulimit -n) is 20,000: ran c=9,979"},
		{10, 40, 10, 0, "no room for a connection"},
	} {
		fit, why := httpFitConns(tt.want, tt.limit, tt.open)
		if fit != tt.fit || (tt.why == "") != (why == "") || !strings.Contains(why, tt.why) {
			t.Errorf("httpFitConns(%d, %d, %d) = %d, %q; want %d, %q", tt.want, tt.limit, tt.open, fit, why, tt.fit, tt.why)
		}
	}
}
