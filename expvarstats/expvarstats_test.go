package expvarstats_test

import (
	"encoding/json"
	"expvar"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/expvarstats"
	"github.com/go-timingwheel/timingwheel/purgatory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var runs atomic.Int64

// unique returns name with a number of its own: expvar's names are for
// the process's life, and a test may run again in it (-count).
func unique(name string) string { return fmt.Sprintf("%s_%d", name, runs.Add(1)) }

// read returns the published variable name, as /debug/vars serves it,
// decoded into v.
func read(t *testing.T, name string, v any) {
	t.Helper()
	rec := httptest.NewRecorder()
	expvar.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/vars", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var vars map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &vars), "/debug/vars is not JSON")
	raw, ok := vars[name]
	require.True(t, ok, "%q not in /debug/vars", name)
	require.NoError(t, json.Unmarshal(raw, v), "%s", raw)
}

// TestPublishTimer: the published figures are taken at each read, so they
// move as timers fire and are stopped.
func TestPublishTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		name := unique("expvarstats_test_timer")
		st := publishTimer(t, name)

		type stats struct {
			Pending               int
			Armed, Fired, Stopped uint64
			Lag                   string
			Lateness              struct{ Count uint64 }
		}
		var s stats
		read(t, name, &s)
		assert.Equal(t, stats{Lag: "0s"}, s)

		var tms []*timingwheel.Timer
		for i := range 5 {
			tm, err := st.AfterFunc(time.Duration(i+1)*time.Second, func() {})
			require.NoError(t, err)
			tms = append(tms, tm)
		}
		tms[4].Stop()
		time.Sleep(2*time.Second + time.Millisecond)
		synctest.Wait()
		read(t, name, &s)
		assert.Equal(t, 2, s.Pending)
		assert.Equal(t, uint64(5), s.Armed)
		assert.Equal(t, uint64(2), s.Fired)
		assert.Equal(t, uint64(1), s.Stopped)
	})
}

// TestPublishTimerExecutorLateness needs the executor's figures in Stats: the
// lateness of every callback that ran.
func TestPublishTimerExecutorLateness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		name := unique("expvarstats_test_timer_lateness")
		st := publishTimer(t, name)
		for i := range 3 {
			_, err := st.AfterFunc(time.Duration(i+1)*time.Millisecond, func() {})
			require.NoError(t, err)
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		var s struct {
			Fired    uint64
			Lateness struct {
				Count uint64
				P99   string
			}
		}
		read(t, name, &s)
		assert.Equal(t, uint64(3), s.Fired)
		assert.Equal(t, uint64(3), s.Lateness.Count, "the lateness of each callback")
		_, err := time.ParseDuration(s.Lateness.P99)
		assert.NoError(t, err, "p99 %q", s.Lateness.P99)
	})
}

// publishTimer publishes the Stats of a new SystemTimer, stopped when the
// test ends, as name.
func publishTimer(t *testing.T, name string) *timingwheel.SystemTimer {
	t.Helper()
	st, err := timingwheel.New()
	require.NoError(t, err)
	t.Cleanup(func() { st.Stop() })
	expvarstats.Publish(name, st.Stats)
	return st
}

type op struct {
	purgatory.Op
}

func (o *op) TryComplete() bool { return false }
func (o *op) OnComplete()       {}
func (o *op) OnExpiration()     {}

func TestPublishPurgatory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := purgatory.New[string]()
		require.NoError(t, err)
		defer p.Close()
		name := unique("expvarstats_test_purgatory")
		expvarstats.Publish(name, p.Stats)

		forced := &op{Op: purgatory.Op{Timeout: time.Hour}}
		for _, o := range []*op{forced, {Op: purgatory.Op{Timeout: time.Second}}} {
			_, err := p.TryCompleteElseWatch(o, "a", "b")
			require.NoError(t, err)
		}
		var s struct {
			Delayed, Watched   int
			Completed, Expired uint64
			Lateness           struct{ Count uint64 }
		}
		read(t, name, &s)
		assert.Equal(t, 2, s.Delayed)
		assert.Equal(t, 4, s.Watched)
		assert.Zero(t, s.Completed)

		forced.ForceComplete()
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		read(t, name, &s)
		assert.Zero(t, s.Delayed)
		assert.Equal(t, uint64(2), s.Completed)
		assert.Equal(t, uint64(1), s.Expired)
		assert.Equal(t, uint64(1), s.Lateness.Count)
	})
}

func TestPublishTwicePanics(t *testing.T) {
	f := func() int { return 1 }
	name := unique("expvarstats_test_twice")
	expvarstats.Publish(name, f)
	assert.Equal(t, "1", expvar.Get(name).String())
	assert.Panics(t, func() { expvarstats.Publish(name, f) })
	assert.PanicsWithValue(t, "expvarstats: Publish(x, nil)", func() { expvarstats.Publish[int]("x", nil) })
}
