package main

import (
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/examples/internal/runtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs the example at a tiny size. The time limit is long enough
// that no fast request reaches it, however loaded the machine: exactly the
// slow ones time out.
func TestRun(t *testing.T) {
	results, out := runtest.Run(t, run,
		"-n", "40", "-c", "4", "-timeout", "1s", "-slow-every", "10", "-warmup", "4", "-maxtime", "1m")
	require.Len(t, results, 2)
	for i, name := range []string{"httptimeout.New (wheel)", "http.TimeoutHandler (stdlib)"} {
		r := results[i]
		assert.Equal(t, name, r.name)
		assert.Equal(t, 40, r.sent)
		assert.Equal(t, 4, r.slow)
		assert.Equal(t, 36, r.ok)
		assert.Equal(t, 4, r.timeouts)
		assert.Zero(t, r.errs)
		assert.False(t, r.cut)
		assert.GreaterOrEqual(t, r.p99, time.Second, "the slowest requests took the time limit")
		assert.Less(t, r.p50, time.Second)
		assert.GreaterOrEqual(t, r.late, time.Second, "a 503 comes no earlier than the limit")
		assert.LessOrEqual(t, r.late, r.p99)
		assert.Positive(t, r.cpu)
		assert.Contains(t, out, name)
	}
	assert.Contains(t, out, "CPU per request, wheel / stdlib: ")
}

// TestRunMaxTime: the run stops at -maxtime however many requests are left.
func TestRunMaxTime(t *testing.T) {
	start := time.Now()
	results, out := runtest.Run(t, run,
		"-n", "1000000", "-c", "2", "-timeout", "1h", "-slow-every", "1", "-warmup", "0", "-maxtime", "200ms")
	assert.Less(t, time.Since(start), 10*time.Second)
	require.Len(t, results, 2)
	for _, r := range results {
		assert.True(t, r.cut)
		assert.Zero(t, r.sent, "every request waits for the 1h limit: none completes")
	}
	assert.Contains(t, out, "cut short by -maxtime")
}

func TestRunBadFlags(t *testing.T) {
	runtest.BadFlags(t, run,
		[]string{"-n", "0"},
		[]string{"-c", "-1"},
		[]string{"-timeout", "0s"},
		[]string{"-slow-every", "-1"},
		[]string{"extra"},
		[]string{"-nope"},
	)
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for _, c := range []struct {
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{nil, 50, 0},
		{d[:1], 50, 1},
		{d[:1], 99, 1},
		{d, 50, 50},
		{d, 99, 99},
		{d, 100, 100},
		{d[:10], 99, 10},
		{d[:10], 50, 5},
	} {
		assert.Equal(t, c.want, percentile(c.in, c.p), "p%d of %d", c.p, len(c.in))
	}
}
