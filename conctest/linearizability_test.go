package conctest

import (
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/isolate"
)

// childTimeout bounds a test's child process: a hang fails the test then.
const childTimeout = 2 * time.Minute

// minChecks is how many partitions a test checks at least, past its time
// budget if need be, before it judges the share that timed out: a check
// that times out takes checkTimeout (2s), and when the first few of a run
// did, the budget was spent after 8 histories, 5 of them unknown, and the
// test failed though unknowns are 10-25% of a longer run (1 run in about
// 30 of the TestLinearizable tests, with failpoints under -race, 2 cores).
// At most n.
func minChecks(n int) int { return min(n, 24) }

// budget returns how many histories a test records at most, and for how
// long: d, or dRace under the race detector. CONCTEST_HISTORIES and
// CONCTEST_BUDGET (a duration) override them, to run longer locally;
// -short runs a tenth.
func budget(n int, d, dRace time.Duration) (int, time.Duration) {
	if raceEnabled {
		d = dRace
	}
	if testing.Short() {
		n, d = max(n/10, 10), d/10
	}
	if v, err := strconv.Atoi(os.Getenv("CONCTEST_HISTORIES")); err == nil && v > 0 {
		n, d = v, time.Hour
	}
	if v, err := time.ParseDuration(os.Getenv("CONCTEST_BUDGET")); err == nil && v > 0 {
		d = v
	}
	return n, d
}

// seedBase returns the first history's seed: CONCTEST_SEED, or random.
// The seed fixes the operations a history makes, not their interleaving.
func seedBase(t *testing.T) uint64 {
	if v, err := strconv.ParseUint(os.Getenv("CONCTEST_SEED"), 0, 64); err == nil {
		return v
	}
	s := rand.Uint64()
	t.Logf("CONCTEST_SEED=%#x", s)
	return s
}

// runHistories records and checks histories of cfg's kind until n are
// checked, the time budget is spent, or three have failed (see runChecks).
func runHistories(t *testing.T, cfg config, n int) {
	runChecks(t, n, 6*time.Second, 10*time.Second, func(t *testing.T, seed uint64, res *checkResult) bool {
		return check(t, record(t, seed, cfg), cfg.maxPending, res)
	})
}

// runChecks records and checks one history after another with checkOne,
// each with a seed of its own, in a child process and with GOMAXPROCS
// above the core count (so the OS preempts goroutines anywhere), until n
// are checked, the time budget (budget's, from short and long) is spent,
// or three have failed.
func runChecks(t *testing.T, n int, short, long time.Duration, checkOne func(t *testing.T, seed uint64, res *checkResult) bool) {
	isolate.Run(t, childTimeout, func(t *testing.T) {
		old := runtime.GOMAXPROCS(8)
		defer runtime.GOMAXPROCS(old)
		n, d := budget(n, short, long)
		seed := seedBase(t)
		deadline := time.Now().Add(d)
		var res checkResult
		failed := 0
		for i := 0; i < n && failed < 3 && (time.Now().Before(deadline) || res.checks < minChecks(n)); i++ {
			if !checkOne(t, seed+uint64(i), &res) {
				failed++
			}
		}
		t.Logf("%d histories, %d partitions checked, %d unknown (timed out); outcomes: %v", res.histories, res.checks, res.unknown, res.seen)
		if res.unknown*2 > res.checks {
			t.Fatalf("%d of %d checks timed out: the histories are too large to check", res.unknown, res.checks)
		}
	})
}

// TestLinearizable: operations on timers, then SystemTimer.Stop.
func TestLinearizable(t *testing.T) {
	runHistories(t, config{}, 400)
}

// TestLinearizableRacingStop: SystemTimer.Stop at a random moment, racing
// the operations and the creation of AfterFunc timers.
func TestLinearizableRacingStop(t *testing.T) {
	runHistories(t, config{raceStop: true}, 400)
}

// TestLinearizableMaxPending: WithMaxPending(1), so that arming one timer
// refuses the others; checked as a whole, since the bound ties the timers.
func TestLinearizableMaxPending(t *testing.T) {
	runHistories(t, config{maxPending: 1}, 300)
}

// TestLinearizableMaxPendingRacingStop: both, with a bound of 2.
func TestLinearizableMaxPendingRacingStop(t *testing.T) {
	runHistories(t, config{maxPending: 2, raceStop: true}, 300)
}
