package timingwheel

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/isolate"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
)

// The concurrency suite for one timer, one shard and the SystemTimer: every
// pair of operations that can run at once, raced from several goroutines
// with GOMAXPROCS above the core count (so the OS preempts anywhere), each
// body in a child process (a crash or a hang fails that test alone). Build
// with -tags timingwheel_failpoints to widen the windows between a state
// change and the writes that follow it (failpoint_on.go); scripts/test runs
// the suite both ways, under -race. The checks are properties, not "it did
// not crash": see settle. The linearizability of the results is checked
// against a sequential model in the conctest module.

// stressTimeout bounds a child process: a hang fails the test then.
const stressTimeout = 2 * time.Minute

// iters scales a loop count: the race detector and the failpoints slow
// every operation down by ten or more.
func iters(n int) int {
	if raceEnabled {
		n /= 4
	}
	if failpointsOn {
		n /= 2
	}
	return max(n, 10)
}

// stress runs body in a child process, bounded by stressTimeout, with
// GOMAXPROCS above the core count (see preempting).
func stress(t *testing.T, body func(t *testing.T)) {
	t.Helper()
	isolate.Run(t, stressTimeout, func(t *testing.T) {
		preempting(t)
		body(t)
	})
}

// preempting raises GOMAXPROCS above the core count for the test: more Ps
// than cores make the OS deschedule goroutines at any instruction.
func preempting(t *testing.T) {
	old := runtime.GOMAXPROCS(8)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// hammer starts n goroutines on wg that call op over and over until quit
// is closed. Goroutine g passes op its index and a random source of its
// own, seeded by seed and g, so that a failing round draws the same
// operations again.
func hammer(wg *sync.WaitGroup, n int, seed uint64, quit <-chan struct{}, op func(g int, rng *rand.Rand)) {
	for g := range n {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for {
				select {
				case <-quit:
					return
				default:
				}
				op(g, rng)
			}
		})
	}
}

// counted is a timer whose runs are counted.
type counted struct {
	t    Timer
	runs atomic.Int64
	ran  chan struct{} // a token per run
}

func newCounted(st *SystemTimer) *counted {
	c := &counted{ran: make(chan struct{}, 1<<16)}
	st.Bind(&c.t, func() {
		c.runs.Add(1)
		c.ran <- struct{}{}
	})
	return c
}

// settle checks that the timers and st came out of a race consistent: it
// stops them all, checks every shard's invariants and that nothing is
// pending, then arms each timer once more, 1ms out, and demands that each
// runs exactly once. A timer lost from a list, stranded on a stack, linked
// twice or stuck in a state would fail here, if not already by a crash or a
// hang.
func settle(t *testing.T, st *SystemTimer, timers []*counted) {
	t.Helper()
	for _, c := range timers {
		c.t.Stop()
	}
	// Runs handed over before the Stops may still be on their way.
	waitIdle(t, st)
	for _, c := range timers {
		for len(c.ran) > 0 {
			<-c.ran
		}
	}
	st.checkInvariants()
	if n := st.Len(); n != 0 {
		t.Fatalf("Len is %d after every timer was stopped", n)
	}
	if n := st.placesHeld(); st.maxPending > 0 && n != 0 {
		t.Fatalf("WithMaxPending's count is %d after every timer was stopped", n)
	}
	for i, c := range timers {
		before := c.runs.Load()
		if was, err := c.t.TryReset(time.Millisecond); was || err != nil {
			t.Fatalf("timer %d: TryReset after Stop = %v, %v; want false, nil", i, was, err)
		}
		testwait.Recv(t, c.ran, fmt.Sprintf("timer %d's run after the race", i))
		if got := c.runs.Load() - before; got != 1 {
			t.Fatalf("timer %d ran %d times for one arming", i, got)
		}
	}
	waitIdle(t, st)
	for i, c := range timers {
		if len(c.ran) != 0 {
			t.Fatalf("timer %d ran again after its last arming ran", i)
		}
	}
	if left := st.Stop(); len(left) != 0 {
		t.Fatalf("Stop returned %d timers; every one had run", len(left))
	}
}

// settled reports whether every run owed so far has finished: a timer
// whose Stop returned false because its run was handed over has run. The
// executor's being idle is not enough: the driver marks a batch of due
// timers fired under a shard's lock and submits it after unlocking
// (handing), and every other path submits under the lock that marked the
// timer, which the barrier waits for. Read in this order, an owed run that
// was marked before settled began is seen, queued or running.
func (st *SystemTimer) settled() bool {
	for i := range st.shards {
		if st.shards[i].handing.Load() != 0 {
			return false
		}
	}
	st.pendingBarrier()
	backlog, _, busy := st.pool.Load()
	return backlog == 0 && busy == 0
}

// waitIdle waits until every run owed so far has finished (settled).
func waitIdle(t *testing.T, st *SystemTimer) {
	t.Helper()
	deadline := time.Now().Add(testwait.FailAfter)
	for !st.settled() {
		if time.Now().After(deadline) {
			t.Fatal("the executor never went idle")
		}
		runtime.Gosched()
	}
}

// An op is one thing a goroutine does to a timer in the pairwise test.
type op struct {
	name string
	do   func(c *counted, rng *rand.Rand)
}

var pairOps = []op{
	{"Stop", func(c *counted, _ *rand.Rand) { c.t.Stop() }},
	{"ResetLater", func(c *counted, rng *rand.Rand) { c.t.Reset(time.Hour + time.Duration(rng.IntN(1000))) }},
	{"ResetEarlier", func(c *counted, rng *rand.Rand) {
		// Later first, so that the second is earlier if nothing
		// comes between; short, so that some fire.
		c.t.Reset(time.Hour)
		c.t.Reset(time.Duration(rng.IntN(3000)) * time.Microsecond)
	}},
	{"ResetZero", func(c *counted, _ *rand.Rand) { c.t.Reset(0) }},
	{"TryReset", func(c *counted, rng *rand.Rand) {
		_, _ = c.t.TryReset(time.Duration(rng.IntN(2000)) * time.Microsecond)
	}},
	{"StopRearm", func(c *counted, rng *rand.Rand) {
		c.t.Stop()
		c.t.Reset(time.Duration(1+rng.IntN(5)) * time.Millisecond)
	}},
}

// TestConcurrentPairs races every pair of timer operations (a pair of an
// operation with itself included) on a few timers of one shard, from four
// goroutines per operation, while the driver places, cascades and fires
// them (short deadlines and 1ms ticks) and a fifth goroutine pushes fresh
// timers on the same shard deep enough that pushers drain the stack
// themselves. Then settle checks what is left.
func TestConcurrentPairs(t *testing.T) {
	for i, a := range pairOps {
		for _, b := range pairOps[i:] {
			t.Run(a.name+"/"+b.name, func(t *testing.T) {
				stress(t, func(t *testing.T) {
					racePair(t, a, b, false, false)
				})
			})
		}
	}
}

// TestConcurrentPairsMigrating is TestConcurrentPairs with the default
// placement: the timers move to the shard of whichever goroutine's
// processor re-arms them, while the others stop, reset and fire them.
// settle checks what is left, on every shard.
func TestConcurrentPairsMigrating(t *testing.T) {
	raceAllPairs(t, false, true)
}

// TestConcurrentPairsMaxPending is TestConcurrentPairs under WithMaxPending,
// where every arming takes the lock and counts against the bound: the
// count must come back to zero.
func TestConcurrentPairsMaxPending(t *testing.T) {
	raceAllPairs(t, true, false)
}

// TestConcurrentPairsMaxPendingMigrating is TestConcurrentPairsMaxPending
// with the timers placed by the processor that arms them: a re-arm under
// the bound moves the timer first (follow), racing the other goroutines'
// operations on it.
func TestConcurrentPairsMaxPendingMigrating(t *testing.T) {
	raceAllPairs(t, true, true)
}

// raceAllPairs races every pair of operations as subtests of t, in one
// child process, bounded or migrating as racePair takes them.
func raceAllPairs(t *testing.T, bounded, migrating bool) {
	stress(t, func(t *testing.T) {
		for i, a := range pairOps {
			for _, b := range pairOps[i:] {
				t.Run(a.name+"/"+b.name, func(t *testing.T) { racePair(t, a, b, bounded, migrating) })
			}
		}
	})
}

// racePair races a and b on three timers. placed by address (one shard,
// so that their links meet), or, if migrating, by the processor that arms
// them, the default: then each Reset that re-arms a timer on a goroutine
// whose processor holds another shard moves it there, racing the other
// goroutines' operations on it.
func racePair(t *testing.T, a, b op, bounded, migrating bool) {
	opts := []Option{WithTick(time.Millisecond)}
	if bounded {
		opts = append(opts, WithMaxPending(1<<20))
	}
	if !migrating {
		opts = append(opts, withAddressShards())
	}
	st := mustNew(t, opts...)
	var timers []*counted
	for len(timers) < 3 {
		c := newCounted(st)
		if migrating || c.t.sh == &st.shards[0] {
			timers = append(timers, c)
		}
	}
	n := iters(400)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 8 {
		o := a
		if g%2 == 1 {
			o = b
		}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range n {
				o.do(timers[rng.IntN(len(timers))], rng)
			}
		})
	}
	// Fresh timers on the same shard, many per drain: the pusher that
	// finds the stack deep drains it.
	pushed := make(chan []*Timer)
	go func() {
		var mine []*Timer
		for {
			select {
			case <-stop:
				pushed <- mine
				return
			default:
			}
			tm, err := st.AfterFunc(time.Hour, func() {})
			if err != nil {
				t.Error(err)
			}
			if migrating || tm.sh == &st.shards[0] {
				mine = append(mine, tm)
			} else {
				tm.Stop()
			}
		}
	}()
	wg.Wait()
	close(stop)
	for _, tm := range <-pushed {
		if !tm.Stop() {
			t.Fatal("a timer armed an hour out was not pending: lost")
		}
	}
	settle(t, st, timers)
}

// TestConcurrentStopResetOneTimer races Stop of a pending timer against
// Reset(d > 0) of it. A Stop that moved the timer to stopped before
// unlinking it would let a Reset that saw it stopped push it on the
// incoming stack and write its next link while Stop's unlink read it: a nil
// dereference, or timers cut off the stack and lost. The other timers on
// the stack must all still be pending at the end.
func TestConcurrentStopResetOneTimer(t *testing.T) {
	stress(t, func(t *testing.T) {
		st := mustNew(t, withAddressShards())
		c := newCounted(st)
		var others []*Timer // the fresh timers on c's shard
		var rest []*Timer
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range iters(2000) {
					if g%2 == 0 {
						c.t.Reset(time.Hour + time.Duration(i))
					} else {
						c.t.Stop()
					}
				}
			})
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range iters(20000) {
				tm, err := st.AfterFunc(time.Hour, func() {})
				if err != nil {
					t.Error(err)
					return
				}
				if tm.sh == c.t.sh {
					others = append(others, tm)
				} else {
					rest = append(rest, tm)
				}
			}
		}()
		wg.Wait()
		<-done
		for i, tm := range others {
			if !tm.Stop() {
				t.Fatalf("timer %d of %d armed an hour out was not pending: lost", i, len(others))
			}
		}
		for _, tm := range rest {
			tm.Stop()
		}
		settle(t, st, []*counted{c})
	})
}

// TestConcurrentResetZeroResetLater races Reset(0) of a pending timer
// against Reset(1h) of it. A Reset(0) that moved the timer to fired before
// unlinking it would let a Reset(1h) that saw it fired corrupt the lists,
// as in TestConcurrentStopResetOneTimer. Every Reset(0) hands a run over,
// whatever the timer's state, and the hour never comes: the runs must equal
// the Reset(0) calls.
func TestConcurrentResetZeroResetLater(t *testing.T) {
	stress(t, func(t *testing.T) {
		st := mustNew(t, withAddressShards())
		c := newCounted(st)
		var zeros atomic.Int64
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range iters(2000) {
					if g%2 == 0 {
						c.t.Reset(0)
						zeros.Add(1)
					} else {
						c.t.Reset(time.Hour + time.Duration(i))
					}
				}
			})
		}
		wg.Wait()
		c.t.Stop()
		for got := int64(0); got < zeros.Load(); got++ {
			testwait.Recv(t, c.ran, "the run of a Reset(0)")
		}
		waitIdle(t, st)
		if got, want := c.runs.Load(), zeros.Load(); got != want {
			t.Fatalf("%d runs for %d calls of Reset(0)", got, want)
		}
		settle(t, st, []*counted{c})
	})
}

// TestConcurrentSystemStopArming races armings against SystemTimer.Stop. A
// pusher that finds its shard's stack deep drains it itself, placing its
// own timer; one that then saw Stop begun and reported ErrStopped would
// fail an arming whose timer Stop returns. Stop must return exactly the
// timers whose AfterFunc or TryReset succeeded (and that were not stopped
// since), each once.
func TestConcurrentSystemStopArming(t *testing.T) {
	stress(t, func(t *testing.T) {
		for round := range iters(40) {
			st := mustNew(t, withAddressShards())
			const goroutines = 6
			armed := make([][]*Timer, goroutines)
			bound := make([][]*Timer, goroutines)
			var started, wg sync.WaitGroup
			started.Add(goroutines)
			for g := range goroutines {
				wg.Go(func() {
					started.Done()
					for i := 0; ; i++ {
						if g%2 == 0 {
							tm, err := st.AfterFunc(time.Hour, func() {})
							if err != nil {
								return
							}
							armed[g] = append(armed[g], tm)
							continue
						}
						tm := new(Timer)
						st.Bind(tm, func() {})
						if _, err := tm.TryReset(time.Hour); err != nil {
							if i > 0 && tm.Stop() {
								t.Errorf("a Timer whose TryReset failed was pending")
							}
							return
						}
						bound[g] = append(bound[g], tm)
					}
				})
			}
			started.Wait()
			for range rand.IntN(20000) {
				runtime.Gosched()
			}
			left := st.Stop()
			wg.Wait()
			var want []*Timer
			for g := range goroutines {
				want = append(want, armed[g]...)
				want = append(want, bound[g]...)
			}
			if msg := sameTimers(left, want); msg != "" {
				t.Fatalf("round %d: Stop returned %d timers for %d armed: %s", round, len(left), len(want), msg)
			}
		}
	})
}

// waitOps waits until n more operations have been counted in ops.
func waitOps(ops *atomic.Int64, n int64) {
	for target := ops.Load() + n; ops.Load() < target; {
		runtime.Gosched()
	}
}

// uniq returns the timers of ts, each once.
func uniq(ts []*Timer) []*Timer {
	seen := make(map[*Timer]bool, len(ts))
	var u []*Timer
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			u = append(u, t)
		}
	}
	return u
}

// sameTimers says how got and want differ as sets, and whether got has a
// timer twice; "" if they are the same.
func sameTimers(got, want []*Timer) string {
	seen := make(map[*Timer]int, len(got))
	for _, t := range got {
		seen[t]++
	}
	missing, twice := 0, 0
	for _, t := range want {
		switch seen[t] {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
		delete(seen, t)
	}
	if missing == 0 && twice == 0 && len(seen) == 0 {
		return ""
	}
	return fmt.Sprintf("%d armed timers missing, %d returned twice, %d returned that were never armed", missing, twice, len(seen))
}

// TestConcurrentRearmSystemStop races re-arming against SystemTimer.Stop. A
// Reset that re-arms a stopped timer pushes it, without the lock, on a
// stack that SystemTimer.Stop may have taken already. Were a Timer.Stop to
// make it queued-stopped before the pusher took it back, it would be left
// on a stack nobody drains: after SystemTimer.Stop returned, TryReset would
// revive it (nil error) and Stop return true, and it would never run nor
// be returned. Each timer has a goroutine looping TryReset and one looping
// Stop; once SystemTimer.Stop has returned, every TryReset must fail and
// every Stop return false, and Stop must have returned each timer at most
// once.
func TestConcurrentRearmSystemStop(t *testing.T) {
	stress(t, func(t *testing.T) {
		for round := range iters(100) {
			st := mustNew(t, withAddressShards())
			timers := make([]*Timer, 32)
			for i := range timers {
				timers[i] = new(Timer)
				st.Bind(timers[i], func() {})
			}
			var over atomic.Bool // SystemTimer.Stop has returned
			var ops atomic.Int64 // operations done so far, to pace the test by
			var wg sync.WaitGroup
			quit := make(chan struct{})
			for _, tm := range timers {
				wg.Go(func() {
					for {
						after := over.Load()
						_, err := tm.TryReset(time.Hour)
						if after && err == nil {
							t.Errorf("TryReset armed a timer after SystemTimer.Stop returned")
						}
						ops.Add(1)
						select {
						case <-quit:
							return
						default:
						}
					}
				})
				wg.Go(func() {
					for {
						after := over.Load()
						if tm.Stop() && after {
							t.Errorf("Stop stopped a pending timer after SystemTimer.Stop returned")
						}
						ops.Add(1)
						select {
						case <-quit:
							return
						default:
						}
					}
				})
			}
			waitOps(&ops, rand.Int64N(5000))
			left := st.Stop()
			over.Store(true)
			waitOps(&ops, 5000) // a stranded timer is revived here
			close(quit)
			wg.Wait()
			if msg := sameTimers(left, uniq(left)); msg != "" {
				t.Fatalf("round %d: Stop returned a timer twice", round)
			}
			if t.Failed() {
				t.Fatalf("round %d failed", round)
			}
		}
	})
}

// placesHeld returns the places of WithMaxPending's bound that timers hold:
// neither free nor cached by a shard (see reserve).
func (st *SystemTimer) placesHeld() int64 {
	n := st.maxPending - st.free.Load()
	for i := range st.shards {
		sh := &st.shards[i]
		sh.mu.Lock()
		n -= sh.places
		sh.mu.Unlock()
	}
	return n
}

// pendingBarrier takes and releases every shard's lock in turn: whatever
// any goroutine did under a shard's lock before it is done (see settled).
// Called with no shard lock held.
func (st *SystemTimer) pendingBarrier() {
	for i := range st.shards {
		st.shards[i].mu.Lock()
		//lint:ignore SA2001 the empty critical section is the point: a barrier
		st.shards[i].mu.Unlock()
	}
}

// anchorShards arms a timer a minute out on each shard, under the shard's
// lock: each becomes its shard's delay queue's head (unless an earlier
// bucket is there) and lowers its wakeAt to a minute. It returns them, by
// shard.
func anchorShards(t testing.TB, st *SystemTimer) []*Timer {
	t.Helper()
	out := make([]*Timer, len(st.shards))
	for i := range st.shards {
		tm := &Timer{f: func() {}}
		tm.sh = &st.shards[i]
		now := st.now()
		if err := st.startLocked(tm, now+int64(time.Minute), now); err != nil {
			t.Fatal(err)
		}
		out[i] = tm
	}
	return out
}

// TestConcurrentPostponeNeverEarly races the lock-free postpone of Reset (a CAS
// of the due tick of a pending timer) against the driver's fire CAS in
// shard.link: timers armed 1ms out are each Reset(1h) once, around the time
// they come due. A Reset that reports true postponed a pending timer: its
// callback must never run. One that reports false found it fired: it ran
// exactly once (the re-arm is an hour out).
func TestConcurrentPostponeNeverEarly(t *testing.T) {
	stress(t, func(t *testing.T) {
		st := newST(t, WithTick(time.Millisecond))
		var postponed, fired int
		for round := range iters(40) {
			const n = 256
			timers := make([]*counted, n)
			for i := range timers {
				timers[i] = newCounted(st)
			}
			for _, c := range timers {
				c.t.Reset(time.Millisecond)
			}
			was := make([]bool, n)
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
					// Spread the Resets over 0-5ms: across the fire.
					start := time.Now()
					for i := g; i < n; i += 4 {
						at := 5*time.Millisecond*time.Duration(i)/n + time.Duration(rng.IntN(20))*time.Microsecond
						for time.Since(start) < at {
							runtime.Gosched()
						}
						was[i] = timers[i].t.Reset(time.Hour)
					}
				})
			}
			wg.Wait()
			// Reset(1h) reported false only for a timer already handed to
			// the executor, so waitIdle is what the counts wait for. The
			// pause is no synchronisation: it gives a postponed timer that
			// the driver fired by its old deadline (1ms, long past) time to
			// show up as a run.
			time.Sleep(5 * time.Millisecond)
			waitIdle(t, st)
			p, f := checkResetRuns(t, round, was, 1, func(i int) int64 { return timers[i].runs.Load() })
			postponed, fired = postponed+p, fired+f
			for _, c := range timers {
				c.t.Stop()
			}
		}
		t.Logf("postponed %d, found fired %d", postponed, fired)
	})
}

// checkResetRuns checks what a Reset's result says of the runs of the timer
// it re-armed: true, it postponed a pending timer, which ran one time fewer
// than it would have had the Reset found it fired (false). fired is that
// count, runs(i) timer i's runs; was[i] is its Reset's result. It returns
// how many Resets postponed, and how many found their timer fired.
func checkResetRuns(t *testing.T, round int, was []bool, fired int64, runs func(i int) int64) (postponed, found int) {
	t.Helper()
	for i, w := range was {
		want := fired
		if w {
			want--
			postponed++
		} else {
			found++
		}
		if got := runs(i); got != want {
			t.Fatalf("round %d, timer %d: Reset reported %v, and the callback ran %d times (want %d)", round, i, w, got, want)
		}
	}
	return postponed, found
}

// TestConcurrentPushBackIntoNextTick races Resets that push pending timers
// back by a fraction of a tick, most of them into the tick after their
// bucket's, against the driver expiring that bucket: shard.place's transit
// case, where a timer pushed back since it was placed is placed again by its
// exact deadline and runs at once if that has passed. Timers armed 1ms out
// are each Reset(100µs-1ms) once, the Resets spread over 1.5ms, across the
// fire. A Reset that reports true postponed a pending timer: it runs once,
// not before the new deadline. One that reports false found it fired and
// armed it again: it runs twice, the later run not before the new deadline.
func TestConcurrentPushBackIntoNextTick(t *testing.T) {
	type rec struct {
		t    Timer
		runs atomic.Int64
		last atomic.Int64 // when the latest run started, ns since the round's base
	}
	stress(t, func(t *testing.T) {
		st := newST(t, WithTick(time.Millisecond))
		var postponed, refired int
		for round := range iters(40) {
			const n = 256
			base := time.Now()
			ran := make(chan struct{}, 2*n)
			timers := make([]*rec, n)
			for i := range timers {
				r := &rec{}
				st.Bind(&r.t, func() {
					now := int64(time.Since(base))
					for l := r.last.Load(); l < now && !r.last.CompareAndSwap(l, now); l = r.last.Load() {
					}
					r.runs.Add(1)
					ran <- struct{}{}
				})
				timers[i] = r
			}
			armed := time.Since(base)
			for _, r := range timers {
				r.t.Reset(time.Millisecond)
			}
			was := make([]bool, n)
			due := make([]time.Duration, n) // the last arming's deadline, since base
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
					for i := g; i < n; i += 4 {
						for at := armed + 1500*time.Microsecond*time.Duration(i)/n; time.Since(base) < at; {
							runtime.Gosched()
						}
						d := time.Duration(100+rng.IntN(900)) * time.Microsecond
						before := time.Since(base)
						was[i] = timers[i].t.Reset(d)
						due[i] = before + d
					}
				})
			}
			wg.Wait()
			runs := 0
			for _, w := range was {
				runs += 2
				if w {
					runs--
				}
			}
			for range runs {
				select {
				case <-ran:
				case <-time.After(testwait.FailAfter):
					t.Fatalf("round %d: fewer than the %d runs the Resets' results call for", round, runs)
				}
			}
			waitIdle(t, st) // an extra run would be under way: counted below
			p, f := checkResetRuns(t, round, was, 2, func(i int) int64 { return timers[i].runs.Load() })
			postponed, refired = postponed+p, refired+f
			for i, r := range timers {
				if last := time.Duration(r.last.Load()); last < due[i] {
					t.Fatalf("round %d, timer %d: ran at %v, before its deadline %v", round, i, last, due[i])
				}
			}
		}
		t.Logf("postponed %d, found fired and armed again %d", postponed, refired)
	})
}

// slowEvery is Every(d) with a Next that yields, to widen rearm's window
// between unlocking and relocking the shard.
type slowEvery time.Duration

func (e slowEvery) Next(prev time.Time) time.Time {
	for range rand.IntN(3) {
		runtime.Gosched()
	}
	return prev.Add(time.Duration(e))
}

// TestConcurrentPeriodicSystemStop races periodic timers' Stop, Reset and
// rearm (Scheduler.Next outside the lock) against SystemTimer.Stop, called
// from outside or from inside a callback. After Stop: no callback starts,
// every Stop reports false, every TryReset ErrStopped, Len is 0, and Stop
// returned each timer at most once.
func TestConcurrentPeriodicSystemStop(t *testing.T) {
	stress(t, func(t *testing.T) {
		for round := range iters(60) {
			st := mustNew(t, WithTick(time.Millisecond))
			var over atomic.Bool
			var late atomic.Int64
			fromCallback := round%2 == 1
			stopped := make(chan []*Timer, 1)
			var stopOnce sync.Once
			var timers []*Timer
			for i := range 16 {
				tm, err := st.ScheduleFunc(slowEvery(time.Duration(200+i*50)*time.Microsecond), func() {
					if over.Load() {
						late.Add(1)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				timers = append(timers, tm)
			}
			if fromCallback {
				// A once-timer whose callback stops the SystemTimer.
				if _, err := st.AfterFunc(time.Duration(1+rand.IntN(3))*time.Millisecond, func() {
					stopOnce.Do(func() { stopped <- st.Stop() })
				}); err != nil {
					t.Fatal(err)
				}
			}
			quit := make(chan struct{})
			var wg sync.WaitGroup
			hammer(&wg, 4, uint64(round), quit, func(_ int, rng *rand.Rand) {
				tm := timers[rng.IntN(len(timers))]
				if rng.IntN(2) == 0 {
					tm.Stop()
				} else {
					_, _ = tm.TryReset(time.Duration(rng.IntN(1500)) * time.Microsecond)
				}
			})
			var left []*Timer
			if fromCallback {
				left = <-stopped
			} else {
				time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
				left = st.Stop()
			}
			over.Store(true)
			close(quit)
			wg.Wait()
			if msg := sameTimers(left, uniq(left)); msg != "" {
				t.Fatalf("round %d: Stop returned a timer twice", round)
			}
			for i, tm := range timers {
				if tm.Stop() {
					t.Fatalf("round %d: periodic %d: Stop reported true after SystemTimer.Stop", round, i)
				}
				if _, err := tm.TryReset(time.Millisecond); !errors.Is(err, ErrStopped) {
					t.Fatalf("round %d: periodic %d: TryReset after SystemTimer.Stop: %v", round, i, err)
				}
			}
			if n := st.Len(); n != 0 {
				t.Fatalf("round %d: Len %d after Stop", round, n)
			}
			time.Sleep(3 * time.Millisecond)
			if n := late.Load(); n != 0 && !fromCallback {
				t.Fatalf("round %d: %d callbacks started after Stop returned", round, n)
			}
		}
	})
}
