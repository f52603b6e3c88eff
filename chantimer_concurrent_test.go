package timingwheel

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/testwait"
)

// The concurrency suite of the channel timers' state machine (see
// chanTimer): Stop and Reset raced against the run that delivers, against
// receivers, against each other and against SystemTimer.Stop, with deadlines
// a tick or less away so that runs come in the middle of everything. Each
// body runs in a child process; -tags timingwheel_failpoints widens the
// windows (chan:taken, chan:fire, chan:rearmed, chan:next). The properties
// are those of a sequential order of the calls: a one-shot timer's value is
// received exactly when Stop or Reset did not report it pending, and no
// value from before a Stop or Reset is received after it returns.

// TestConcurrentChanStopFire: one arming, a receiver and a Stop, racing
// the delivery. Exactly one of "a value was received" and "Stop returned
// true" holds, and nothing comes after Stop.
func TestConcurrentChanStopFire(t *testing.T) {
	chanRaceRounds(t, 1, 2, func(t *testing.T, st *SystemTimer, rng *rand.Rand, i int, tm *ChanTimer, d time.Duration) {
		got := make(chan bool)
		quit := make(chan struct{})
		go func() {
			select {
			case <-tm.C:
				got <- true
			case <-quit:
				got <- false
			}
		}()
		spinFor(time.Duration(rng.IntN(2500)) * time.Microsecond)
		stopped := tm.Stop()
		close(quit)
		received := testwait.Recv(t, got, "the receiver")
		if stopped == received {
			t.Fatalf("round %d (d=%v): Stop returned %v and a value was received: %v", i, d, stopped, received)
		}
		waitIdle(t, st)
		if len(tm.C) != 0 {
			t.Fatalf("round %d: a value after Stop returned", i)
		}
	})
}

// TestConcurrentChanResetFire: one arming, a receiver, and a Reset racing
// the delivery. The first arming's value is received exactly when Reset
// reports it not pending; the Reset's own value comes once, not before its
// deadline.
func TestConcurrentChanResetFire(t *testing.T) {
	chanRaceRounds(t, 3, 4, func(t *testing.T, st *SystemTimer, rng *rand.Rand, i int, tm *ChanTimer, _ time.Duration) {
		values := make(chan time.Time, 4)
		quit := make(chan struct{})
		var early atomic.Int64 // values received before the time they carry
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case v := <-tm.C:
					if time.Now().Before(v) {
						early.Add(1)
					}
					values <- v
				case <-quit:
					return
				}
			}
		})
		spinFor(time.Duration(rng.IntN(2500)) * time.Microsecond)
		d2 := time.Duration(rng.IntN(1000)) * time.Microsecond
		before := time.Now()
		pending := tm.Reset(d2)
		want := 2
		if pending {
			want = 1
		}
		var last time.Time
		for range want {
			last = testwait.Recv(t, values, "a value owed")
		}
		waitIdle(t, st)
		close(quit)
		wg.Wait()
		if n := len(values) + len(tm.C); n != 0 {
			t.Fatalf("round %d: Reset returned pending=%v, and %d values came beyond the %d owed", i, pending, n, want)
		}
		if n := early.Load(); n != 0 {
			t.Fatalf("round %d: a value was received before its due time", i)
		}
		if last.Before(before.Add(d2)) {
			t.Fatalf("round %d: the Reset's value is %v after the call, before its deadline %v", i, last.Sub(before), d2)
		}
	})
}

// chanRaceRounds runs round 2000 times (iters: fewer under the race
// detector or failpoints) under stress, on a wheel of 1ms ticks and a PCG
// seeded with seed1, seed2: each round is given i, a fresh ChanTimer and
// its d, due within a tick and a half (0 to 1.5ms at random), so that its
// delivery comes before, during or after what the round races it with.
func chanRaceRounds(t *testing.T, seed1, seed2 uint64, round func(t *testing.T, st *SystemTimer, rng *rand.Rand, i int, tm *ChanTimer, d time.Duration)) {
	stress(t, func(t *testing.T) {
		st := newST(t, WithTick(time.Millisecond))
		rng := rand.New(rand.NewPCG(seed1, seed2))
		for i := range iters(2000) {
			d := time.Duration(rng.IntN(1500)) * time.Microsecond
			tm, err := st.NewTimer(d)
			if err != nil {
				t.Fatal(err)
			}
			round(t, st, rng, i, tm, d)
		}
	})
}

// spin burns a little CPU: a start offset for a race, not a wait.
func spin(n int) {
	var s uint64
	for i := range n {
		s += uint64(i) * uint64(i)
	}
	spinSink.Add(s)
}

var spinSink atomic.Uint64

// spinFor keeps the goroutine running for about d: the moment a call
// comes in a race with the wheel's ticks, not a wait for anything.
func spinFor(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		spin(100)
	}
}

// TestConcurrentChanHammer: goroutines Stop, Reset (later, earlier, to an
// instant) and receive on one ChanTimer and one Ticker at once, while their
// runs deliver. Then each must still work: no crash, hang or race, the
// state machine not stuck busy, a Ticker that keeps ticking.
func TestConcurrentChanHammer(t *testing.T) {
	stress(t, func(t *testing.T) {
		st := mustNew(t, WithTick(time.Millisecond), WithMaxPending(1000))
		tm, err := st.NewTimer(time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		tk, err := st.NewTicker(time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		quit := make(chan struct{})
		for g := range 6 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 9))
				for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
					d := time.Duration(rng.IntN(2000)) * time.Microsecond
					switch rng.IntN(6) {
					case 0:
						tm.Stop()
					case 1:
						tm.Reset(d)
					case 2:
						tm.Reset(0)
					case 3:
						tk.Stop()
					case 4:
						tk.Reset(d + time.Microsecond)
					case 5:
						spin(rng.IntN(5000))
					}
				}
			})
		}
		var receivers sync.WaitGroup
		for _, c := range []<-chan time.Time{tm.C, tk.C} {
			receivers.Go(func() {
				for {
					select {
					case <-c:
					case <-quit:
						return
					}
				}
			})
		}
		wg.Wait()
		close(quit)
		receivers.Wait()

		// Both still work.
		tm.Stop()
		tk.Stop()
		waitIdle(t, st)
		if len(tm.C) != 0 || len(tk.C) != 0 {
			t.Fatal("a value after Stop returned")
		}
		if st.Len() != 0 {
			t.Fatalf("Len = %d after both were stopped", st.Len())
		}
		if n := st.placesHeld(); n != 0 {
			t.Fatalf("WithMaxPending's count = %d after both were stopped", n)
		}
		tm.Reset(time.Millisecond)
		testwait.Recv(t, tm.C, "the timer's value after the race")
		tk.Reset(time.Millisecond)
		for range 3 {
			testwait.Recv(t, tk.C, "a tick after the race")
		}
		tk.Stop()
		if left := st.Stop(); len(left) != 0 {
			t.Fatalf("SystemTimer.Stop returned %d timers", len(left))
		}
	})
}

// TestConcurrentTickerSystemStop: tickers ticking every tick, stopped and
// reset by goroutines, as SystemTimer.Stop comes and moves them to the
// clock's timers (see chanTimer.orphan). Nothing hangs or races; each
// Ticker then still works (a Stop leaves nothing in C, a Reset ticks), and
// WithMaxPending's count is back to zero.
func TestConcurrentTickerSystemStop(t *testing.T) {
	stress(t, func(t *testing.T) {
		for round := range iters(40) {
			st := mustNew(t, WithTick(time.Millisecond), WithMaxPending(100))
			tickers := make([]*Ticker, 8)
			for i := range tickers {
				var err error
				if tickers[i], err = st.NewTicker(time.Duration(1+i%3) * time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			quit := make(chan struct{})
			hammer(&wg, len(tickers), uint64(round), quit, func(i int, rng *rand.Rand) {
				tk := tickers[i]
				select {
				case <-tk.C:
				default:
				}
				switch rng.IntN(3) {
				case 0:
					tk.Stop()
				default:
					tk.Reset(time.Duration(1+rng.IntN(2000)) * time.Microsecond)
				}
			})
			spinFor(time.Duration(round%5+1) * time.Millisecond)
			if left := st.Stop(); len(left) != 0 {
				t.Fatalf("round %d: SystemTimer.Stop returned %d timers", round, len(left))
			}
			spinFor(2 * time.Millisecond) // the goroutines go on, on the clock's timers
			close(quit)
			wg.Wait()
			for _, tk := range tickers {
				tk.Stop()
				if len(tk.C) != 0 {
					t.Fatalf("round %d: a tick after Ticker.Stop", round)
				}
			}
			if n := st.placesHeld(); n != 0 {
				t.Fatalf("round %d: WithMaxPending's count = %d", round, n)
			}
			tk := tickers[round%len(tickers)]
			tk.Reset(time.Millisecond)
			for range 2 {
				testwait.Recv(t, tk.C, "a tick of a Ticker reset after SystemTimer.Stop")
			}
			for _, tk := range tickers {
				tk.Stop()
			}
		}
	})
}

// TestConcurrentTickerRunABA: two runs of one Ticker's Timer that both find
// the same arming (an owed run, handed to the executor before a Reset, and
// the run of the arming after it, on two workers). fire reads the state
// word, then the deadline, then CASes the word to busy. The run that wins
// delivers the due tick, stores the next deadline and releases the timer
// with the next gen: released with the same gen and phase, the word would
// be back to what the loser read, the loser's CAS would succeed (ABA) and
// it would deliver the next tick, stamped with a deadline that has not
// come: early. Here the clock stands still
// between W1 and W2 = W1+p, so exactly one tick may be delivered and the
// deadline must end at W2.
func TestConcurrentTickerRunABA(t *testing.T) {
	stress(t, func(t *testing.T) {
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
	})
}

// TestConcurrentTickerOwedRunABA shows how two runs of one Ticker's Timer meet:
// the Ticker fires, its run waits in the executor's queue, the user Resets
// the Ticker (the run is owed: it stays queued), and the new deadline comes
// before the queue drains, so that the Timer is queued a second time. Two
// workers then run both at once. The driver's side is the real one (turn,
// manual mode); the two workers are two goroutines running what the pool
// handed out. The clock stands at the Reset's deadline W, so one tick, W,
// is due: the next deadline must be W+p.
func TestConcurrentTickerOwedRunABA(t *testing.T) {
	stress(t, func(t *testing.T) {
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
			runs := st.pool.Shut() // what the workers would take
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
	})
}
