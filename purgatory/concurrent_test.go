package purgatory

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/internal/isolate"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The concurrency suite of the purgatory on the real clock: completion
// (TryComplete through CheckAndComplete, ForceComplete from outside) racing
// expiry, CancelForKey and Close, from many goroutines with GOMAXPROCS
// above the core count, each body in a child process (a crash or a hang
// fails that test alone). TestMain's goleak check fails the child if a
// goroutine is left. Unlike TestStressEveryOperationEndsOnce, which runs in
// a synctest bubble, the goroutines here are preempted anywhere, and Close
// comes in the middle.

// concTimeout bounds a child process: a hang fails the test then.
const concTimeout = 2 * time.Minute

// numKeys is the number of keys the operations share, in both suites.
const numKeys = 8

// concOp completes once need events have happened on its keys since it was
// submitted. It counts its calls and notices the calls that break the
// order the purgatory promises.
type concOp struct {
	Op
	keyWatch
	tryGuard
	start time.Time     // a clock reading before TryCompleteElseWatch
	done  chan struct{} // closed by the first OnComplete

	tries, completes, expirations atomic.Int32
	endDuringTry, early           atomic.Bool
	completeBeforeExpire          atomic.Bool
	canceled                      atomic.Bool  // returned by CancelForKey
	closedOut                     atomic.Int32 // times Close returned it
	refused                       bool         // TryCompleteElseWatch returned an error
}

// keyWatch is what the operations of both suites share: the keys an
// operation is watched on, the events counted on every key, and how many
// it needs after baseline, the count on its keys when it was submitted.
type keyWatch struct {
	keys     []int
	events   *[numKeys]atomic.Int64
	baseline int64
	need     int64
}

func (w *keyWatch) seen() int64 {
	n := int64(0)
	for _, k := range w.keys {
		n += w.events[k].Load()
	}
	return n
}

// ready reports whether need events have happened since baseline.
func (w *keyWatch) ready() bool { return w.seen()-w.baseline >= w.need }

// randomKeys returns one to three keys, drawn from rng.
func randomKeys(rng *rand.Rand) []int {
	return []int{rng.IntN(numKeys), rng.IntN(numKeys), rng.IntN(numKeys)}[:1+rng.IntN(3)]
}

// event counts an event on a key drawn from rng, and returns the key.
func event(rng *rand.Rand, events *[numKeys]atomic.Int64) int {
	k := rng.IntN(numKeys)
	events[k].Add(1)
	return k
}

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

func (o *concOp) TryComplete() bool {
	o.enterTry()
	defer o.exitTry()
	o.tries.Add(1)
	if !o.ready() {
		return false
	}
	return o.ForceComplete()
}

func (o *concOp) OnExpiration() {
	if o.inTry.Load() != 0 {
		o.endDuringTry.Store(true)
	}
	// start was read before the timeout was armed: if less than Timeout
	// has passed since, the expiry is early.
	if time.Since(o.start) < o.Timeout {
		o.early.Store(true)
	}
	if o.completes.Load() != 0 {
		o.completeBeforeExpire.Store(true)
	}
	o.expirations.Add(1)
}

func (o *concOp) OnComplete() {
	if o.inTry.Load() != 0 {
		o.endDuringTry.Store(true)
	}
	if o.completes.Add(1) == 1 {
		close(o.done)
	}
}

// TestConcurrentCompleteExpireCancelClose races, on a purgatory with the
// caller's SystemTimer (its own in the Close variant), two submitters (timeouts of 0 to 5ms, one to three keys
// each), four goroutines that make events and call CheckAndComplete, now
// and then CancelForKey and ForceComplete, and, in the Close variant, a
// Close at a random moment. Checks: every operation ends exactly once
// (OnComplete once, OnExpiration at most once and before it, never while a
// TryComplete runs, tries never overlapping), and once everything returned
// nothing is left running: a completed operation has had its OnComplete,
// and ForceComplete ends each of the others at once; no expiry is early,
// none comes to an operation CancelForKey or Close returned; Close returns
// each operation at most once; Stats counts every expiry; Watched and
// NumDelayed come back to 0, and, without Close racing, the counters match
// the watch lists (checkInvariants) once every operation not canceled has
// ended.
func TestConcurrentCompleteExpireCancelClose(t *testing.T) {
	for _, closeRaces := range []bool{false, true} {
		name := "CompleteVsExpiryVsCancelForKey"
		if closeRaces {
			name = "CompleteVsExpiryVsCancelForKeyVsClose"
		}
		t.Run(name, func(t *testing.T) {
			isolate.Run(t, concTimeout, func(t *testing.T) {
				old := runtime.GOMAXPROCS(8)
				defer runtime.GOMAXPROCS(old)
				end := time.Now().Add(1500 * time.Millisecond)
				for round := 0; round < 3 || time.Now().Before(end); round++ {
					purgatoryRound(t, closeRaces, uint64(round))
					if t.Failed() {
						t.Fatalf("round %d failed", round)
					}
				}
			})
		})
	}
}

func purgatoryRound(t *testing.T, closeRaces bool, seed uint64) {
	opts := []Option{WithPurgeInterval(int(seed % 20))}
	var st *timingwheel.SystemTimer // the caller's, without Close racing: see below
	if !closeRaces {
		var err error
		if st, err = timingwheel.New(); err != nil {
			t.Fatal(err)
		}
		defer st.Stop()
		opts = append(opts, WithTimer(st))
	}
	p, err := New[int](opts...)
	if err != nil {
		t.Fatal(err)
	}
	perSubmitter := 400
	if raceEnabled {
		perSubmitter = 150
	}
	var events [numKeys]atomic.Int64
	var mu sync.Mutex
	var ops []*concOp      // guarded by mu
	var closed atomic.Bool // set before Close is called: ErrClosed is expected from then on
	var closeLeft []Operation
	stop := make(chan struct{})
	var submitters, workers sync.WaitGroup

	for s := range 2 {
		submitters.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(s)))
			for range perSubmitter {
				keys := randomKeys(rng)
				o := &concOp{
					Op:       Op{Timeout: time.Duration(rng.IntN(5000)) * time.Microsecond},
					keyWatch: keyWatch{keys: keys, events: &events, need: int64(rng.IntN(40))},
					done:     make(chan struct{}),
				}
				o.baseline = o.seen()
				o.start = time.Now()
				if _, err := p.TryCompleteElseWatch(o, keys...); err != nil {
					if err != ErrClosed || !closed.Load() {
						t.Errorf("TryCompleteElseWatch: %v", err)
					}
					o.refused = true
				}
				mu.Lock()
				ops = append(ops, o)
				mu.Unlock()
				if rng.IntN(8) == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	for w := range 4 {
		workers.Go(func() {
			rng := rand.New(rand.NewPCG(seed, 10+uint64(w)))
			for !stopped(stop) {
				k := event(rng, &events)
				if _, err := p.CheckAndComplete(k); err != nil && (err != ErrClosed || !closed.Load()) {
					t.Errorf("CheckAndComplete: %v", err)
				}
				switch rng.IntN(64) {
				case 0:
					canceled, err := p.CancelForKey(k)
					if err != nil && (err != ErrClosed || !closed.Load()) {
						t.Errorf("CancelForKey: %v", err)
					}
					for _, op := range canceled {
						op.(*concOp).canceled.Store(true)
					}
				case 1, 2:
					mu.Lock()
					var o *concOp
					if len(ops) > 0 {
						o = ops[rng.IntN(len(ops))]
					}
					mu.Unlock()
					if o != nil {
						o.ForceComplete()
					}
				}
				if rng.IntN(4) == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	closer := make(chan struct{})
	go func() {
		defer close(closer)
		if closeRaces {
			spin := time.Duration(rand.New(rand.NewPCG(seed, 99)).IntN(20_000)) * time.Microsecond
			for start := time.Now(); time.Since(start) < spin; {
				runtime.Gosched()
			}
			closed.Store(true) // before: Close refuses calls from its start
			closeLeft = p.Close()
		}
	}()
	submitters.Wait()
	close(stop)
	workers.Wait()
	<-closer

	delayed := 0 // NumDelayed after Close
	if !closeRaces {
		// Every operation that still has its timeout ends within its
		// 5ms, by the timer; those CancelForKey returned wait for
		// ForceComplete. Then stopping the SystemTimer waits for the
		// expiries' callbacks, which purge after OnComplete: nothing
		// runs, and the counters must match the lists. A timer Stop
		// returns never runs: it was handed over too late for its
		// operation's cancel to stop it, and stays counted.
		for _, o := range ops {
			if !o.canceled.Load() {
				testwait.Recv(t, o.done, "an operation's end")
			}
		}
		delayed = len(st.Stop())
		checkInvariants(t, p)
		if n := p.NumDelayed(); n != delayed {
			t.Errorf("NumDelayed is %d with every timeout fired or canceled, %d never run", n, delayed)
		}
		closeLeft = p.Close()
	}
	if p.Close() != nil {
		t.Error("a second Close returned operations")
	}
	for _, op := range closeLeft {
		op.(*concOp).closedOut.Add(1)
	}
	if n := p.Watched(); n != 0 {
		t.Errorf("Watched is %d after Close", n)
	}
	if n := p.NumDelayed(); n != delayed {
		t.Errorf("NumDelayed is %d after Close; want %d", n, delayed)
	}

	// Close stopped the SystemTimer, waiting for its callbacks, and every
	// goroutine that tried operations has returned: nothing runs. A
	// completed operation has had its OnComplete; ForceComplete ends any
	// other one now, on this goroutine.
	var expired uint64
	for i, o := range ops {
		if o.IsCompleted() {
			if n := o.completes.Load(); n != 1 {
				t.Errorf("op %d: completed, and OnComplete ran %d times once everything returned", i, n)
			}
		} else if !o.ForceComplete() {
			t.Errorf("op %d: not completed, and ForceComplete failed once everything returned", i)
		}
		switch {
		case o.completes.Load() != 1:
			t.Errorf("op %d: OnComplete ran %d times", i, o.completes.Load())
		case o.expirations.Load() > 1:
			t.Errorf("op %d: OnExpiration ran %d times", i, o.expirations.Load())
		case o.overlap.Load():
			t.Errorf("op %d: two TryComplete calls at once", i)
		case o.endDuringTry.Load():
			t.Errorf("op %d: OnExpiration or OnComplete ran during a TryComplete", i)
		case o.completeBeforeExpire.Load():
			t.Errorf("op %d: OnComplete before OnExpiration", i)
		case o.early.Load():
			t.Errorf("op %d: expired before its timeout of %v", i, o.Timeout)
		case o.expirations.Load() != 0 && o.canceled.Load():
			t.Errorf("op %d: expired, though CancelForKey returned it", i)
		case o.expirations.Load() != 0 && o.closedOut.Load() != 0:
			t.Errorf("op %d: expired, though Close returned it", i)
		case o.closedOut.Load() > 1:
			t.Errorf("op %d: Close returned it %d times", i, o.closedOut.Load())
		case o.refused && (o.closedOut.Load() != 0 || o.expirations.Load() != 0):
			t.Errorf("op %d: refused, yet returned by Close or expired", i)
		}
		expired += uint64(o.expirations.Load())
	}
	if s := p.Stats(); s.Expired != expired || s.Lateness.Count() != expired {
		t.Errorf("Stats: Expired %d, Lateness.Count %d; %d operations expired", s.Expired, s.Lateness.Count(), expired)
	}
}

// ---- in a synctest bubble ----

// stressOp completes once need events have happened on its keys since it
// was submitted. It counts how it ended: wins are the ForceComplete calls
// that returned true, whoever made them. It notices a TryComplete that
// runs while or after OnExpiration or OnComplete does.
type stressOp struct {
	Op
	keyWatch
	tryGuard
	start time.Time
	ended *sync.WaitGroup

	wins, completes, expirations atomic.Int32
	early, afterEnd              atomic.Bool
	ending                       atomic.Int32
}

func (o *stressOp) TryComplete() bool {
	o.enterTry()
	defer o.exitTry()
	o.checkNotEnded()
	if !o.ready() {
		return false
	}
	done := o.win()
	o.checkNotEnded()
	return done
}

// checkNotEnded notes whether OnExpiration or OnComplete has started.
func (o *stressOp) checkNotEnded() {
	if o.ending.Load() != 0 {
		o.afterEnd.Store(true)
	}
}

// ends marks OnExpiration or OnComplete as started, noting whether a
// TryComplete is running.
func (o *stressOp) ends() {
	o.ending.Store(1)
	if o.inTry.Load() != 0 {
		o.afterEnd.Store(true)
	}
}

func (o *stressOp) win() bool {
	if o.ForceComplete() {
		o.wins.Add(1)
		return true
	}
	return false
}

func (o *stressOp) OnExpiration() {
	o.ends()
	o.expirations.Add(1)
	if time.Since(o.start) < o.Timeout {
		o.early.Store(true)
	}
}

func (o *stressOp) OnComplete() {
	o.ends()
	if o.completes.Add(1) == 1 {
		o.ended.Done()
	}
}

// TestStressEveryOperationEndsOnce has goroutines make events on shared keys
// and call CheckAndComplete, CancelForKey (force-completing what it
// returns) and ForceComplete, while operations are submitted and time out.
// Every operation must end exactly once: one OnComplete, and either one
// winning ForceComplete (through TryComplete or not) or one OnExpiration,
// never early; no TryComplete may overlap another of its operation, or run
// while or after OnExpiration or OnComplete does.
func TestStressEveryOperationEndsOnce(t *testing.T) {
	stress(t)
}

// stress runs the test of TestStressEveryOperationEndsOnce on a purgatory
// made with opts.
func stress(t *testing.T, opts ...Option) {
	n := 20_000
	if raceEnabled || testing.Short() {
		n = 5000
	}
	synctest.Test(t, func(t *testing.T) {
		p := newP[int](t, append([]Option{WithPurgeInterval(50)}, opts...)...)
		var events [numKeys]atomic.Int64
		var ended sync.WaitGroup
		ended.Add(n)
		ops := make([]*stressOp, n)
		submitted := make(chan *stressOp, n)
		stop := make(chan struct{})
		var workers sync.WaitGroup

		// The submitter.
		workers.Go(func() {
			defer close(submitted)
			rng := rand.New(rand.NewPCG(1, 1))
			for i := range ops {
				keys := randomKeys(rng)
				op := &stressOp{
					Op:       Op{Timeout: time.Duration(rng.IntN(30)) * time.Millisecond},
					keyWatch: keyWatch{keys: keys, events: &events, need: int64(rng.IntN(60))},
					start:    time.Now(),
					ended:    &ended,
				}
				op.baseline = op.seen()
				ops[i] = op
				if _, err := p.TryCompleteElseWatch(op, keys...); err != nil {
					t.Errorf("op %d: %v", i, err)
					ended.Done()
					continue
				}
				submitted <- op
				if rng.IntN(8) == 0 {
					time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
				}
			}
		})

		// Checkers: an event on a key, then CheckAndComplete of it.
		for w := range 6 {
			workers.Go(func() {
				rng := rand.New(rand.NewPCG(2, uint64(w)))
				for !stopped(stop) {
					k := event(rng, &events)
					if _, err := p.CheckAndComplete(k); err != nil {
						t.Error(err)
					}
					switch rng.IntN(200) {
					case 0:
						canceled, err := p.CancelForKey(k)
						if err != nil {
							t.Error(err)
						}
						for _, op := range canceled {
							op.(*stressOp).win()
						}
					default:
						time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
					}
				}
			})
		}

		// A canceller: force-completes some operations from outside.
		workers.Go(func() {
			rng := rand.New(rand.NewPCG(3, 3))
			for op := range submitted {
				if rng.IntN(10) == 0 {
					op.win()
				}
			}
		})

		allEnded := make(chan struct{})
		go func() {
			ended.Wait()
			close(allEnded)
		}()
		select {
		case <-allEnded:
		case <-time.After(2 * time.Second): // of fake time; every timeout is shorter
			stuck := 0
			for _, op := range ops {
				if op != nil && op.completes.Load() == 0 {
					stuck++
				}
			}
			t.Errorf("%d operations never ended", stuck)
			ended.Add(-stuck)
			<-allEnded
		}
		close(stop)
		workers.Wait()

		expired, watched := 0, 0
		for i, op := range ops {
			require.Equal(t, int32(1), op.completes.Load(), "op %d: OnComplete calls", i)
			require.Equal(t, int32(1), op.wins.Load()+op.expirations.Load(),
				"op %d: %d winning ForceCompletes, %d expirations", i, op.wins.Load(), op.expirations.Load())
			require.False(t, op.early.Load(), "op %d expired early", i)
			require.False(t, op.overlap.Load(), "op %d: TryComplete overlapped", i)
			require.False(t, op.afterEnd.Load(), "op %d: TryComplete ran while or after OnExpiration or OnComplete", i)
			expired += int(op.expirations.Load())
			if op.ref(0).l != nil { // watched under a key before it completed
				watched++
			}
		}
		t.Logf("%d operations, %d expired", n, expired)
		s := p.Stats()
		assert.Equal(t, uint64(watched), s.Completed, "Stats.Completed: the operations completed after being watched")
		assert.Equal(t, uint64(expired), s.Expired, "Stats.Expired")
		assert.Positive(t, expired, "no operation expired: the test does not test expiry")
		assert.Less(t, expired, n, "every operation expired: the test does not test completion")
		assert.Zero(t, p.NumDelayed())
		checkInvariants(t, p)
		for k := range numKeys {
			_, err := p.CheckAndComplete(k)
			require.NoError(t, err)
		}
		assert.Zero(t, p.Watched())
	})
}
