package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/examples/internal/runtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs the example on loopback, in both modes and with and
// without closing on expiry. An active client's pauses are a sixteenth of
// the idle time, so no active connection is cut however loaded the machine;
// every idle one is, no earlier than the idle time after its last message.
func TestRun(t *testing.T) {
	const idle = 500 * time.Millisecond
	for _, args := range [][]string{
		{},
		{"-slack", "50ms"},
		{"-close=false"},
	} {
		t.Run(fmtArgs(args), func(t *testing.T) {
			rep, out := runtest.Run(t, run, append([]string{
				"-clients", "7", "-msgs", "4", "-every", "30ms", "-idle-every", "3", "-idle", idle.String(), "-maxtime", "1m",
			}, args...)...)
			require.Len(t, rep.results, 7)
			for _, r := range rep.results {
				assert.NoError(t, r.err, "client %d", r.client)
				assert.Equal(t, r.client%3 == 0, r.idle, "client %d", r.client)
				if r.idle {
					assert.Equal(t, 1, r.echoed)
					assert.True(t, r.cut, "client %d was not cut", r.client)
					assert.GreaterOrEqual(t, r.after, idle, "client %d was cut early", r.client)
				} else {
					assert.Equal(t, 4, r.echoed)
					assert.False(t, r.cut)
				}
			}
			assert.Equal(t, 5, rep.closedByClient)
			assert.Equal(t, 2, rep.cutIdle)
			assert.Zero(t, rep.otherErrs)
			assert.Contains(t, out, "client 3  idle    1 echoed; cut by the server ")
			assert.Contains(t, out, "client 1  active  4 echoed; hung up")
			assert.Contains(t, out, "server: 5 connections closed by their clients, 2 cut after 500ms idle, 0 other errors")
		})
	}
}

func fmtArgs(args []string) string {
	if len(args) == 0 {
		return "default"
	}
	var b bytes.Buffer
	for _, a := range args {
		b.WriteString(a)
	}
	return b.String()
}

// TestRunMaxTime: the clients are bounded by -maxtime, however long the
// idle timeout.
func TestRunMaxTime(t *testing.T) {
	start := time.Now()
	rep, _ := runtest.Run(t, run, "-clients", "2", "-idle-every", "1", "-idle", "1h", "-maxtime", "200ms")
	assert.Less(t, time.Since(start), 10*time.Second)
	for _, r := range rep.results {
		assert.Error(t, r.err, "client %d: the server cut nothing: the client gives up at -maxtime", r.client)
		assert.False(t, r.cut)
	}
	assert.Equal(t, 2, rep.closedByClient)
}

func TestRunBadFlags(t *testing.T) {
	runtest.BadFlags(t, run,
		[]string{"-clients", "0"},
		[]string{"-msgs", "0"},
		[]string{"-idle-every", "-1"},
		[]string{"-idle", "0s"},
		[]string{"-every", "-1s"},
		[]string{"-slack", "-1ms"},
		[]string{"-maxtime", "0s"},
		[]string{"extra"},
		[]string{"-nope"},
	)
}
