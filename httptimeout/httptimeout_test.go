package httptimeout_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
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

func TestNewPanicsOnNil(t *testing.T) {
	st := wheeltest.New(t)
	assert.PanicsWithValue(t, "httptimeout: New: nil Handler", func() { httptimeout.New(st, nil, time.Second, "") })
}

// TestNewNilTimerIsDefault: New(nil, ...) keeps its deadlines on the
// default SystemTimer: the handler's context has the deadline, and a
// handler too slow gets the 503, as with a SystemTimer of one's own.
func TestNewNilTimerIsDefault(t *testing.T) {
	before := timingwheel.Default().Stats().Armed
	release := make(chan struct{})
	h := httptimeout.New(nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Context().Deadline(); !ok {
			t.Error("the handler's context has no deadline")
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}), 10*time.Millisecond, "too slow")
	defer close(release)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "too slow", rec.Body.String())
	assert.Greater(t, timingwheel.Default().Stats().Armed, before, "the deadline was not armed on the default")
}

// TestFastPassesThrough: a handler that returns in time gives the client the
// same response through the timeout handler as without it.
func TestFastPassesThrough(t *testing.T) {
	st := wheeltest.New(t)
	direct := func(h http.Handler, _ time.Duration, _ string) http.Handler { return h }
	for _, m := range []mode{modeHTTP1, modeHTTP2} {
		for _, sc := range scenarios() {
			switch sc.name {
			case "ok/status-headers-body", "ok/implicit-200", "ok/nothing-written",
				"ok/content-type-sniffed", "ok/large-body", "ok/HEAD":
			default:
				continue
			}
			t.Run(m.String()+"/"+sc.name, func(t *testing.T) {
				want := runServer(t, m, sc, direct)
				got := runServer(t, m, sc, wheel(st))
				require.Greater(t, want.Status, 0)
				// The notes differ: only the timeout handler's request has a deadline.
				want.Notes, got.Notes = nil, nil
				assert.Equal(t, want, got)
			})
		}
	}
}

// TestConcurrentRequests serves 1000 requests at once, half of which time
// out, on one SystemTimer.
func TestConcurrentRequests(t *testing.T) {
	const n = 1000
	st := wheeltest.New(t)

	var arrived atomic.Int32
	allIn := make(chan struct{}) // closed when every handler has started
	release := make(chan struct{})
	ctxErrs := make(chan error, n)
	lateErrs := make(chan error, n)
	arrive := func() {
		if arrived.Add(1) == n {
			close(allIn)
		}
	}
	mux := http.NewServeMux()
	// Fast handlers return once all n handlers are running at once; the
	// minute is never reached.
	mux.Handle("/fast", httptimeout.New(st, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrive()
		<-allIn
		id := r.URL.Query().Get("id")
		w.Header().Set("X-Id", id)
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "fast "+id)
	}), time.Minute, ""))
	// Slow handlers wait for their deadline, then for the test to have
	// every response, and write too late.
	mux.Handle("/slow", httptimeout.New(st, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrive()
		<-r.Context().Done()
		ctxErrs <- r.Context().Err()
		<-release
		_, err := io.WriteString(w, "late")
		lateErrs <- err
	}), 20*time.Millisecond, "slow"))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := srv.Client()

	type result struct {
		status int
		id     string
		body   string
		err    error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			path := "/fast"
			if i%2 == 1 {
				path = "/slow"
			}
			res, err := client.Get(fmt.Sprintf("%s%s?id=%d", srv.URL, path, i))
			if err != nil {
				results[i].err = err
				return
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			results[i] = result{res.StatusCode, res.Header.Get("X-Id"), string(body), err}
		})
	}
	wg.Wait()
	close(release)

	for i, r := range results {
		require.NoError(t, r.err, "request %d", i)
		if i%2 == 0 {
			assert.Equal(t, result{http.StatusAccepted, strconv.Itoa(i), "fast " + strconv.Itoa(i), nil}, r)
		} else {
			assert.Equal(t, result{http.StatusServiceUnavailable, "", "slow", nil}, r)
		}
	}
	for range n / 2 {
		assert.Equal(t, context.DeadlineExceeded, testwait.Recv(t, ctxErrs, "a slow handler's context"))
		assert.Equal(t, http.ErrHandlerTimeout, testwait.Recv(t, lateErrs, "a slow handler's late write"))
	}
	srv.Close()
	client.CloseIdleConnections()
	assert.Equal(t, 0, st.Len(), "every request released its wheel entry")
}

// TestStopInFlight: stopping the SystemTimer cancels the contexts of the
// requests in flight; they end as if the client had gone away.
func TestStopInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := timingwheel.New()
		require.NoError(t, err)
		defer st.Stop()
		started, served, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var ctxErr, lateErr error
		h := httptimeout.New(st, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(finished)
			close(started)
			<-r.Context().Done()
			ctxErr = r.Context().Err()
			<-served
			_, lateErr = io.WriteString(w, "late")
		}), time.Hour, "timeout")
		rec := httptest.NewRecorder()
		go func() {
			defer close(served)
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		}()
		<-started
		assert.Equal(t, 1, st.Len())
		st.Stop()
		<-finished
		assert.Equal(t, context.Canceled, ctxErr)
		assert.Equal(t, context.Canceled, lateErr)
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Empty(t, rec.Body.String())
	})
}

// TestDeadlineOnTheWheel: the request's deadline is a timer of st, released
// when the request ends.
func TestDeadlineOnTheWheel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := timingwheel.New()
		require.NoError(t, err)
		defer st.Stop()
		var pending int
		var deadline time.Time
		h := httptimeout.New(st, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			pending = st.Len()
			deadline, _ = r.Context().Deadline()
		}), 3*time.Second, "")
		start := time.Now()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		assert.Equal(t, 1, pending, "the deadline is on the wheel while the handler runs")
		assert.Equal(t, start.Add(3*time.Second), deadline)
		assert.Equal(t, 0, st.Len(), "and released when ServeHTTP returns")
	})
}
