package timingwheel

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestReview2TickerRunABA: two runs of one Ticker's Timer that both find
// the same arming (an owed run, handed to the executor before a Reset, and
// the run of the arming after it, on two workers). fire reads the state
// word, then the deadline, then CASes the word to busy. The run that wins
// delivers the due tick, stores the next deadline and releases the timer
// with the SAME gen and phase: the word is back to what the loser read, so
// the loser's CAS succeeds (ABA) and it delivers the next tick, stamped
// with a deadline that has not come: early. Here the clock stands still
// between W1 and W2 = W1+p, so exactly one tick may be delivered and the
// deadline must end at W2.
func TestReview2TickerRunABA(t *testing.T) {
	old := runtime.GOMAXPROCS(8)
	defer runtime.GOMAXPROCS(old)
	mc := newFakeClock()
	st := newManual(t, mc, WithTick(time.Millisecond))
	const p = 10 * time.Millisecond
	// The window is a few instructions wide: a round hits it now and then
	// (about once in 10^4 to 10^5 rounds on the 2-core machine).
	end := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		tk, err := st.NewTicker(p)
		if err != nil {
			t.Fatal(err)
		}
		ct := &tk.ct
		w1 := ct.when.Load()
		mc.Add(p) // now == W1: due, and W2 = W1+p not
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ct.fire()
			}()
		}
		close(start)
		wg.Wait()
		if got := ct.when.Load(); got != w1+int64(p) {
			now := st.now()
			t.Fatalf("round %d: now=%d W1=%d: the Ticker's deadline is %d (W1+%d periods): the tick due at W1+p was delivered at W1, early",
				i, now, w1, got, (got-w1)/int64(p))
		}
		tk.Stop()
	}
}

// TestReview2TickerOwedRunABA shows how two runs of one Ticker's Timer meet:
// the Ticker fires, its run waits in the executor's queue, the user Resets
// the Ticker (the run is owed: it stays queued), and the new deadline comes
// before the queue drains, so that the Timer is queued a second time. Two
// workers then run both at once. The driver's side is the real one (turn,
// manual mode); the two workers are two goroutines running what the pool
// handed out. The clock stands at the Reset's deadline W, so one tick, W,
// is due: the next deadline must be W+p.
func TestReview2TickerOwedRunABA(t *testing.T) {
	old := runtime.GOMAXPROCS(8)
	defer runtime.GOMAXPROCS(old)
	const p = 10 * time.Millisecond
	end := time.Now().Add(3 * time.Second)
	i := 0
	defer func() { t.Logf("%d rounds", i) }()
	for ; time.Now().Before(end); i++ {
		fc := newFakeClock()
		st := newManual(t, fc, WithTick(time.Millisecond))
		tk, err := st.NewTicker(p)
		if err != nil {
			t.Fatal(err)
		}
		ct := &tk.ct
		fc.Add(p)
		for st.turnFirst() { // the driver: the first tick's run is queued, not run
		}
		tk.Reset(p) // the queued run is owed
		w := ct.when.Load()
		fc.Add(p)
		for st.turnFirst() { // the Reset's deadline: queued again
		}
		runs := st.pool.Close() // what the workers would take
		if len(runs) != 2 || runs[0] != &ct.t || runs[1] != &ct.t {
			t.Fatalf("round %d: the executor holds %d runs; want the Ticker's Timer twice", i, len(runs))
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, r := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				chanOf(r).fire()
			}()
		}
		close(start)
		wg.Wait()
		if got := ct.when.Load(); got != w+int64(p) {
			t.Fatalf("round %d: clock at W=%d: the Ticker's next deadline is W+%d periods: the tick due at W+p was delivered at W, early",
				i, w, (got-w)/int64(p))
		}
	}
}
