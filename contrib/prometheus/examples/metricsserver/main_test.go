package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// get returns the body of url.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	var b strings.Builder
	_, err = bufio.NewReader(resp.Body).WriteTo(&b)
	require.NoError(t, err)
	return b.String()
}

// sample returns the value of the sample named name in a /metrics text.
func sample(t *testing.T, text, name string) float64 {
	t.Helper()
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, line)
			return f
		}
	}
	t.Fatalf("no sample %s in\n%s", name, text)
	return 0
}

// debugVars is what the test reads of /debug/vars.
type debugVars struct {
	Timers struct {
		Armed, Fired, Stopped uint64
		Pending, Workers      int
		Lateness              struct{ Count uint64 }
	} `json:"timers"`
	Fetches struct {
		Completed, Expired uint64
		Delayed            int
		Lateness           struct {
			Count uint64
			P99   string
		}
	} `json:"fetches"`
}

// TestMetricsServer runs two rounds, scrapes both endpoints while the
// server still serves, and checks the figures add up: a round fires 750
// timers and stops 250, and 100 of its 200 fetches complete while 100
// expire.
func TestMetricsServer(t *testing.T) {
	var out strings.Builder
	err := run(context.Background(), "127.0.0.1:0", 2, &out, func(base string) {
		metrics := get(t, base+"/metrics")
		const want = `
# HELP timingwheel_timers_armed_total Armings of timers that entered the wheel.
# TYPE timingwheel_timers_armed_total counter
timingwheel_timers_armed_total 2000
# HELP timingwheel_timers_fired_total Timers that came due and ran, or were handed to the executor.
# TYPE timingwheel_timers_fired_total counter
timingwheel_timers_fired_total 1500
# HELP timingwheel_timers_stopped_total Timers stopped before they fired.
# TYPE timingwheel_timers_stopped_total counter
timingwheel_timers_stopped_total 500
# HELP timingwheel_timers_pending Timers pending.
# TYPE timingwheel_timers_pending gauge
timingwheel_timers_pending 0
# HELP fetch_operations_completed_total Operations completed after being watched, whichever way.
# TYPE fetch_operations_completed_total counter
fetch_operations_completed_total 400
# HELP fetch_operations_expired_total Operations completed by their timeout.
# TYPE fetch_operations_expired_total counter
fetch_operations_expired_total 200
# HELP fetch_delayed_operations Operations whose timeout is armed (Kafka's NumDelayedOperations).
# TYPE fetch_delayed_operations gauge
fetch_delayed_operations 0
`
		assert.NoError(t, testutil.ScrapeAndCompare(base+"/metrics", strings.NewReader(want),
			"timingwheel_timers_armed_total", "timingwheel_timers_fired_total",
			"timingwheel_timers_stopped_total", "timingwheel_timers_pending",
			"fetch_operations_completed_total", "fetch_operations_expired_total",
			"fetch_delayed_operations"))
		assert.Equal(t, 200.0, sample(t, metrics, "fetch_expiry_lateness_seconds_count"))
		assert.Equal(t, 200.0, sample(t, metrics, `fetch_expiry_lateness_seconds_bucket{le="+Inf"}`))
		assert.Positive(t, sample(t, metrics, "fetch_expiry_lateness_seconds_sum"))

		var vars debugVars
		require.NoError(t, json.Unmarshal([]byte(get(t, base+"/debug/vars")), &vars))
		assert.Equal(t, uint64(2000), vars.Timers.Armed)
		assert.Equal(t, uint64(1500), vars.Timers.Fired)
		assert.Equal(t, uint64(500), vars.Timers.Stopped)
		assert.Zero(t, vars.Timers.Pending)
		assert.Equal(t, uint64(400), vars.Fetches.Completed)
		assert.Equal(t, uint64(200), vars.Fetches.Expired)
		assert.Zero(t, vars.Fetches.Delayed)
		assert.Equal(t, uint64(200), vars.Fetches.Lateness.Count)
		assert.NotEmpty(t, vars.Fetches.Lateness.P99)

		// The operator's page, and its JSON, of both.
		page := get(t, base+"/debug/timingwheel/")
		assert.Contains(t, page, "SystemTimer timers")
		assert.Contains(t, page, "Purgatory fetches")
		assert.Contains(t, page, `<figure data-chart="due">`)
		var pageData struct {
			Timers []struct {
				Name  string
				Stats struct{ Fired uint64 }
			}
			Purgatories []struct {
				Name  string
				Stats struct{ Expired uint64 }
			}
		}
		require.NoError(t, json.Unmarshal([]byte(get(t, base+"/debug/timingwheel/json")), &pageData))
		require.Len(t, pageData.Timers, 1)
		assert.Equal(t, uint64(1500), pageData.Timers[0].Stats.Fired)
		require.Len(t, pageData.Purgatories, 1)
		assert.Equal(t, uint64(200), pageData.Purgatories[0].Stats.Expired)

		// These need the executor's figures in Stats.
		t.Run("executor figures", func(t *testing.T) {
			assert.Equal(t, 1500.0, sample(t, metrics, "timingwheel_callback_lateness_seconds_count"))
			assert.Positive(t, sample(t, metrics, "timingwheel_executor_workers"))
			assert.Equal(t, uint64(1500), vars.Timers.Lateness.Count)
			assert.Positive(t, vars.Timers.Workers)
		})
	})
	require.NoError(t, err)
	http.DefaultClient.CloseIdleConnections() // for goleak: the client's keep-alive goroutines
	assert.Contains(t, out.String(), "2 rounds: 2000 timers armed, 1500 fired, 500 stopped, 0 pending")
	assert.Contains(t, out.String(), "fetches: 400 completed, 200 of them expired, 0 delayed")
	t.Log(out.String())
}
