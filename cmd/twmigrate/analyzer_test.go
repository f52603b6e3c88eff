package main

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"
)

// TestAnalyzer checks each package of testdata/src: the diagnostics its
// "// want" comments expect, and, where it has them, the .golden files
// its fixes must produce. The packages are shaped after how servers keep
// their timers: an idle timer per connection (idle), a debounce worker's
// channel timer with its drains (debounce), tickers in heartbeat loops
// (heartbeat), retries with time.After (retry), a job scheduler's map of
// timers (scheduler); refuse and timerutil hold what stays, each with its
// reason. (owntests, whose own test files use its timers, is checked by
// TestOwnTests.)
func TestAnalyzer(t *testing.T) {
	t.Parallel()
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), analyzer,
		"idle", "debounce", "heartbeat", "retry", "scheduler",
		"refuse", "timerutil", "generated", "aliased", "bubbled", "leaky")
}
