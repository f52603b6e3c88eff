package conctest

import (
	"runtime"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/isolate"
)

// runChanHistories records and checks channel timer histories of cfg's
// kind, as runHistories does Timer histories: GOMAXPROCS above the core
// count, in a child process, until n are checked, the time budget (shorter
// than the Timers': the histories are of one timer) is spent, or three have
// failed.
func runChanHistories(t *testing.T, cfg chanConfig, n int) {
	isolate.Run(t, childTimeout, func(t *testing.T) {
		old := runtime.GOMAXPROCS(8)
		defer runtime.GOMAXPROCS(old)
		n, d := budget(n, 3*time.Second, 4*time.Second)
		seed := seedBase(t)
		deadline := time.Now().Add(d)
		var res checkResult
		failed := 0
		for i := 0; i < n && failed < 3 && (time.Now().Before(deadline) || res.checks < minChecks(n)); i++ {
			if !checkChan(t, recordChan(t, seed+uint64(i), cfg), cfg.ticker, &res) {
				failed++
			}
		}
		t.Logf("%d histories checked, %d unknown (timed out); outcomes: %v", res.histories, res.unknown, res.seen)
		if res.unknown*2 > res.checks {
			t.Fatalf("%d of %d checks timed out: the histories are too large to check", res.unknown, res.checks)
		}
	})
}

// TestLinearizableChan: Stop, Reset, TryReset and receives on one
// ChanTimer, and SystemTimer.Stop among them or after.
func TestLinearizableChan(t *testing.T) {
	runChanHistories(t, chanConfig{}, 1000)
}

// TestLinearizableTicker: the same on one Ticker.
func TestLinearizableTicker(t *testing.T) {
	runChanHistories(t, chanConfig{ticker: true}, 1000)
}
