package conctest

import (
	"testing"
	"time"
)

// runChanHistories records and checks channel timer histories of cfg's
// kind, as runHistories does Timer histories, with a shorter time budget:
// the histories are of one timer.
func runChanHistories(t *testing.T, cfg chanConfig, n int) {
	runChecks(t, n, 3*time.Second, 4*time.Second, func(t *testing.T, seed uint64, res *checkResult) bool {
		return checkChan(t, recordChan(t, seed, cfg), cfg.ticker, res)
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
