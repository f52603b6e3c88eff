package debugpage

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/purgatory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// get serves a GET of target and returns the recorder.
func get(h http.Handler, target string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	return w
}

// sampling reports whether h's sampler runs.
func (h *Handler) sampling() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running
}

// An op waits until ready, or times out.
type op struct {
	purgatory.Op
	ready *atomic.Bool
}

func (o *op) TryComplete() bool {
	if !o.ready.Load() {
		return false
	}
	return o.ForceComplete()
}
func (o *op) OnExpiration() {}
func (o *op) OnComplete()   {}

// fixture is a SystemTimer holding timers on three levels, a purgatory on
// it holding operations under three keys, and a Handler of both.
type fixture struct {
	st    *timingwheel.SystemTimer
	p     *purgatory.Purgatory[string]
	h     *Handler
	ready atomic.Bool
}

var fixtureDelays = []struct {
	d time.Duration
	n int
}{{2500 * time.Millisecond, 30}, {10 * time.Minute, 20}, {3 * time.Hour, 10}}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{}
	var err error
	f.st, err = timingwheel.New()
	require.NoError(t, err)
	f.p, err = purgatory.New[string](purgatory.WithTimer(f.st))
	require.NoError(t, err)
	for _, g := range fixtureDelays {
		for range g.n {
			_, err := f.st.AfterFunc(g.d, func() {})
			require.NoError(t, err)
		}
	}
	for i, key := range []string{"a", "b", "c"} {
		for range 3 - i {
			_, err := f.p.TryCompleteElseWatch(&op{Op: purgatory.Op{Timeout: time.Minute}, ready: &f.ready}, key)
			require.NoError(t, err)
		}
	}
	f.h, err = New()
	require.NoError(t, err)
	f.h.AddTimer("timers", f.st)
	AddPurgatory(f.h, "fetches", f.p)
	return f
}

func (f *fixture) close() {
	f.h.Close()
	f.p.Close()
	f.st.Stop()
}

// decode checks that w is a 200 of JSON of the schema, and decodes it.
func decode(t *testing.T, w *httptest.ResponseRecorder) jsonPage {
	t.Helper()
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, "application/json", w.Header().Get("Content-Type"))
	return checkSchema(t, w.Body.Bytes())
}

// TestPage serves the page and its JSON for a SystemTimer and a
// Purgatory, and checks every chart and figure against the sources.
func TestPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		defer f.close()

		w := get(f.h, "/debug/timingwheel/")
		require.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
		body := w.Body.String()
		assert.Contains(t, body, `<meta http-equiv="refresh" content="5">`)
		for _, c := range []string{"due", "lateness", "callbacks", "pending", "executor", "lag", "shards", "keys", "outcomes"} {
			assert.Equal(t, 1, strings.Count(body, fmt.Sprintf(`<figure data-chart="%s">`, c)), c)
		}
		assert.Contains(t, body, "SystemTimer timers")
		assert.Contains(t, body, "Purgatory fetches")
		assert.Contains(t, body, "sampling: the history fills in")
		assert.NotContains(t, body, "<script")

		d := decode(t, get(f.h, "/debug/timingwheel/json"))
		require.Len(t, d.Timers, 1)
		tm := d.Timers[0]
		assert.Equal(t, "timers", tm.Name)
		assert.Equal(t, 66, tm.Stats.Pending) // and the purgatory's 6 timeouts
		sum := 0
		for _, n := range tm.Shards {
			sum += n
		}
		assert.Equal(t, 66, sum)
		require.Len(t, tm.Due, len(dueBounds)+1)
		// Nothing stopped: each group counts within its bucket's width,
		// which the bounds around each delay take in.
		bin := func(lo, hi time.Duration) (n float64) {
			for i, c := range tm.Due[:len(dueBounds)] {
				if dueBounds[i] > lo && dueBounds[i] <= hi {
					n += c
				}
			}
			return n
		}
		assert.InDelta(t, 30, bin(time.Second, 5*time.Second), 1e-6, "%v", tm.Due)
		assert.InDelta(t, 20, bin(5*time.Minute, 30*time.Minute), 1e-6, "%v", tm.Due)
		assert.InDelta(t, 10, bin(2*time.Hour, 6*time.Hour), 1e-6, "%v", tm.Due)
		assert.Empty(t, tm.History)

		require.Len(t, d.Purgatories, 1)
		pg := d.Purgatories[0]
		assert.Equal(t, 6, pg.Stats.Delayed)
		require.Len(t, pg.TopKeys, 3)
		assert.Equal(t, "a", pg.TopKeys[0].Key)
		assert.Equal(t, []int{3, 2, 1}, []int{pg.TopKeys[0].Watched, pg.TopKeys[1].Watched, pg.TopKeys[2].Watched})

		// Four intervals: the 2.5s timers fire in the third, with a GC
		// cycle and three completions in the fourth.
		time.Sleep(time.Second)
		synctest.Wait()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		runtime.GC()
		f.ready.Store(true)
		_, err := f.p.CheckAndComplete("a")
		require.NoError(t, err)
		time.Sleep(time.Second)
		synctest.Wait()

		d = decode(t, get(f.h, "/debug/timingwheel/json?name=timers"))
		require.Len(t, d.Timers, 1)
		assert.Empty(t, d.Purgatories)
		h := d.Timers[0].History
		require.Len(t, h, 4)
		var fired, gc uint64
		for _, p := range h {
			fired += p.Callbacks
			gc += p.GCCycles
			if p.Callbacks > 0 {
				assert.Positive(t, p.P50Seconds)
				assert.GreaterOrEqual(t, p.MaxSeconds, p.P50Seconds)
			}
		}
		assert.Equal(t, uint64(30), fired, "%+v", h)
		assert.Equal(t, d.Timers[0].Stats.Fired, fired, "%s", get(f.h, "/debug/timingwheel/json?name=timers").Body.String()[:400])
		assert.Positive(t, gc)
		assert.Equal(t, []int{66, 66, 36, 33}, []int{h[0].Pending, h[1].Pending, h[2].Pending, h[3].Pending})

		d = decode(t, get(f.h, "/debug/timingwheel/json?name=fetches"))
		assert.Empty(t, d.Timers)
		require.Len(t, d.Purgatories, 1)
		var completed uint64
		for _, p := range d.Purgatories[0].History {
			completed += p.Completed
		}
		assert.Equal(t, uint64(3), completed)

		body = get(f.h, "/debug/timingwheel/").Body.String()
		assert.NotContains(t, body, "sampling: the history fills in")
		assert.Contains(t, body, `class="gc"`)
		assert.Contains(t, body, `data-series="p99" data-points="1"`) // one interval with callbacks
	})
}

// TestSamplerLifetime checks that nothing runs until someone looks, that
// the sampler stops, its history dropped, once nobody has for the idle
// time, and that the next request starts it again.
func TestSamplerLifetime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		defer f.close()
		assert.False(t, f.h.sampling())

		// Error paths start nothing.
		assert.Equal(t, http.StatusNotFound, get(f.h, "/debug/timingwheel/?name=nope").Code)
		assert.Equal(t, http.StatusNotFound, get(f.h, "/debug/timingwheel/other").Code)
		assert.False(t, f.h.sampling())
		assert.Nil(t, f.h.done, "no sampler was ever started")

		get(f.h, "/debug/timingwheel/")
		assert.True(t, f.h.sampling())
		done := f.h.done

		// A request 50s later keeps it running for another minute.
		time.Sleep(50 * time.Second)
		get(f.h, "/debug/timingwheel/json")
		time.Sleep(50 * time.Second)
		synctest.Wait()
		assert.True(t, f.h.sampling())
		assert.Len(t, decode(t, get(f.h, "/debug/timingwheel/json")).Timers[0].History, 100)

		time.Sleep(f.h.idle + f.h.interval)
		synctest.Wait()
		assert.False(t, f.h.sampling())
		select {
		case <-done: // the goroutine has returned
		default:
			t.Fatal("the sampler is still running")
		}

		get(f.h, "/debug/timingwheel/")
		synctest.Wait()
		assert.True(t, f.h.sampling())
		time.Sleep(f.h.interval)
		synctest.Wait()
		assert.Len(t, decode(t, get(f.h, "/debug/timingwheel/json")).Timers[0].History, 1, "the old history was dropped")

		// Close stops it at once, without waiting for the idle time.
		done = f.h.done
		f.h.Close()
		assert.False(t, f.h.sampling())
		select {
		case <-done:
		default:
			t.Fatal("Close returned before the sampler exited")
		}
		f.h.Close() // again: nothing to stop
	})
}

func TestErrors(t *testing.T) {
	h, err := New()
	require.NoError(t, err)
	for _, c := range []struct {
		method, target string
		code           int
	}{
		{http.MethodPost, "/debug/timingwheel/", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/debug/timingwheel/json", http.StatusMethodNotAllowed},
		{http.MethodGet, "/debug/timingwheel/?name=nope", http.StatusNotFound},
		{http.MethodGet, "/debug/timingwheel/json?name=nope", http.StatusNotFound},
		{http.MethodGet, "/debug/timingwheel/index.html", http.StatusNotFound},
		{http.MethodHead, "/debug/timingwheel/?name=nope", http.StatusNotFound},
	} {
		t.Run(c.method+" "+c.target, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(c.method, c.target, nil))
			assert.Equal(t, c.code, w.Code)
			if c.code == http.StatusMethodNotAllowed {
				assert.Equal(t, "GET, HEAD", w.Header().Get("Allow"))
			}
		})
	}
	assert.False(t, h.sampling())

	_, err = New(WithInterval(0))
	assert.EqualError(t, err, "debugpage: WithInterval(0s): the interval must be positive")
	_, err = New(nil)
	assert.EqualError(t, err, "debugpage: nil Option")
	_, err = New(WithClock(nil))
	assert.EqualError(t, err, "debugpage: WithClock(nil)")
	st, err := timingwheel.New()
	require.NoError(t, err)
	defer st.Stop()
	h.AddTimer("x", st)
	assert.PanicsWithValue(t, "debugpage: x added twice", func() { h.AddTimer("x", st) })
	assert.PanicsWithValue(t, "debugpage: empty name", func() { h.AddTimer("", st) })
	assert.PanicsWithValue(t, "debugpage: AddTimer(y, nil)", func() { h.AddTimer("y", nil) })
}

// TestEmpty serves a Handler with nothing added.
func TestEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, err := New()
		require.NoError(t, err)
		assert.Contains(t, get(h, "/x/").Body.String(), "Nothing added")
		d := decode(t, get(h, "/x/json"))
		assert.Empty(t, d.Timers)
		assert.Empty(t, d.Purgatories)
		h.Close()
	})
}

// mounted returns the pattern that http.DefaultServeMux serves the page
// at, "" if none.
func mounted() string {
	_, pattern := http.DefaultServeMux.Handler(httptest.NewRequest(http.MethodGet, "/debug/timingwheel/", nil))
	return pattern
}

// TestRegister: Default mounts nothing; Register mounts the Default
// handler on http.DefaultServeMux.
func TestRegister(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := timingwheel.New()
		require.NoError(t, err)
		defer st.Stop()
		p, err := purgatory.New[int](purgatory.WithTimer(st))
		require.NoError(t, err)
		defer p.Close()
		if mounted() == "" { // the first run in this process (-count)
			Default().AddTimer("own mux", st)
			assert.Empty(t, mounted(), "Default mounted itself")
			Default().mu.Lock()
			Default().timers = nil
			Default().mu.Unlock()
		}
		Register("registered", st)
		assert.Equal(t, "/debug/timingwheel/", mounted())
		RegisterPurgatory("registered-p", p)
		d := decode(t, get(http.DefaultServeMux, "/debug/timingwheel/json"))
		require.Len(t, d.Timers, 1)
		assert.Equal(t, "registered", d.Timers[0].Name)
		require.Len(t, d.Purgatories, 1)
		assert.Equal(t, "registered-p", d.Purgatories[0].Name)
		h := Default()
		h.Close()
		h.mu.Lock() // so that -count=2 can add them again
		h.timers, h.purgs = nil, nil
		h.mu.Unlock()
	})
}

// TestWithClock takes samples on a mock clock: each at the time the test
// moves the clock to, none between.
func TestWithClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		defer f.close()
		mock := clock.NewMock()
		start := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
		mock.Set(start)
		h, err := New(WithClock(mock))
		require.NoError(t, err)
		defer h.Close()
		h.AddTimer("timers", f.st)

		get(h, "/x/json") // starts the sampler, which primes at once
		synctest.Wait()
		time.Sleep(time.Hour) // the real clock, here the bubble's, moves the sampler not
		synctest.Wait()
		assert.Empty(t, decode(t, get(h, "/x/json")).Timers[0].History)
		for i := range 120 {
			mock.Add(time.Second)
			synctest.Wait()
			if i%30 == 0 { // a refresh, so that the sampler does not find it idle
				get(h, "/x/json")
			}
		}
		d := decode(t, get(h, "/x/json"))
		hist := d.Timers[0].History
		require.Len(t, hist, 120)
		assert.True(t, hist[0].Time.Equal(start.Add(time.Second)), "%v", hist[0].Time)
		assert.True(t, hist[119].Time.Equal(start.Add(120*time.Second)), "%v", hist[119].Time)
		assert.True(t, d.Time.Equal(start.Add(120*time.Second)), "%v", d.Time)
		assert.Contains(t, get(h, "/x/").Body.String(), "the charts show the last 1m59s\n")

		// Idle by the mock clock: a minute without a request stops it. The
		// last request was at 2m, after the sample then.
		for range 61 {
			mock.Add(time.Second)
			synctest.Wait()
		}
		assert.False(t, h.sampling())
	})
}
