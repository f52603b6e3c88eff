//go:build timingwheel_failpoints

package timingwheel

import (
	"errors"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/testwait"
)

// The window tests: each parks a goroutine inside one window of a state
// transition (parkAt, failpoint_on.go) and puts the racing operation in it,
// so that the race the window allows happens every run, not by luck. Each
// names the defect it guards; scripts/mutants puts such defects in and
// checks that these tests catch them every time.

// wait waits for a goroutine to be parked at p.
func (p *park) wait(t *testing.T) {
	t.Helper()
	testwait.Recv(t, p.arrived, "a goroutine parked at failpoint "+p.name)
}

// letGo releases p's parked goroutines and clears the park.
func (p *park) letGo() { p.unpark() }

// armPark sets a park for the test and clears it when the test ends.
func armPark(t *testing.T, name string, n int) *park {
	p := parkAt(name, n, nil)
	t.Cleanup(p.unpark)
	return p
}

// parkedTryReset parks TryReset(time.Hour) of tm, run on a goroutine of
// its own, at the failpoint window, and returns once it is there: the
// park, and the channel that gets TryReset's error.
func parkedTryReset(t *testing.T, tm *Timer, window string) (*park, <-chan error) {
	t.Helper()
	p := armPark(t, window, 1)
	armed := make(chan error, 1)
	go func() {
		_, err := tm.TryReset(time.Hour)
		armed <- err
	}()
	p.wait(t)
	return p, armed
}

// inBackground runs f on a goroutine of its own and returns a channel
// closed when f returns.
func inBackground(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		f()
		close(done)
	}()
	return done
}

// stopAtEnd stops st when the test ends, after its parks are cleared (a
// parked goroutine may hold a lock Stop takes). If Stop does not return,
// a goroutine holds a shard's lock for good (a deadlock the test found):
// the test fails then instead of hanging, and leaves Stop behind.
func stopAtEnd(t *testing.T, st *SystemTimer) {
	t.Cleanup(func() {
		done := inBackground(func() { st.Stop() })
		select {
		case <-done:
		case <-time.After(testwait.FailAfter):
			t.Error("SystemTimer.Stop did not return: a goroutine holds a shard's lock for good")
		}
	})
}

// newWindowTimer is the SystemTimer of a window test: manual (no driver
// and no workers: the test runs what is due with step), so that nothing
// but the test moves wakeAt. The tests re-arm timers past wakeAt (anchor),
// on the path without the lock, whose windows they open; a driver could
// publish a wakeAt read before the anchor was placed (later, which only
// sends a Reset to the locked path, as is its right) and the Reset would
// miss the window.
func newWindowTimer(t *testing.T, opts ...Option) *SystemTimer {
	t.Helper()
	return mustNew(t, append([]Option{WithTick(time.Millisecond), withManual()}, opts...)...)
}

// runDue runs, on the test's goroutine, what is due on st, a window
// timer, and checks that ran got n runs.
func runDue(t *testing.T, st *SystemTimer, ran chan struct{}, n int) {
	t.Helper()
	st.step()
	if len(ran) != n {
		t.Fatalf("%d runs, want %d", len(ran), n)
	}
	for range n {
		<-ran
	}
}

// TestConcurrentWindowRearmVsSystemStop parks a re-arm (Reset of a timer that
// is not pending) between taking the timer (owned) and pushing it on its
// shard's stack, while SystemTimer.Stop closes every shard; then a second
// goroutine stops or resets the timer, and must wait for the re-arm, which
// then fails: the shard's stack is closed. Guards: a re-arm that publishes
// the timer as queued before its push succeeded (the second goroutine acts
// on a timer that is on no stack, and Stop returns true or Reset arms a
// timer nobody will fire), and SystemTimer.Stop leaving a shard's stack
// open (the push succeeds on a stack nobody takes: the timer is lost).
func TestConcurrentWindowRearmVsSystemStop(t *testing.T) {
	for _, from := range []string{"idle", "stopped", "fired"} {
		for _, other := range []string{"Stop", "Reset"} {
			t.Run(from+"/"+other, func(t *testing.T) {
				st := newWindowTimer(t)
				var tm Timer
				ran := make(chan struct{}, 4)
				st.Bind(&tm, func() { ran <- struct{}{} })
				switch from {
				case "stopped":
					tm.Reset(time.Hour)
					if !tm.Stop() {
						t.Fatal("Stop of a timer armed an hour out returned false")
					}
				case "fired":
					tm.Reset(0)
					runDue(t, st, ran, 1)
				}
				anchor(t, st)
				arming, armed := parkedTryReset(t, &tm, "reset:arming")
				if left := st.Stop(); slices.Contains(left, &tm) {
					t.Fatal("SystemTimer.Stop returned a timer whose arming had not pushed it")
				}
				waiting := armPark(t, "waitOwned", 1)
				res := make(chan error, 1)
				go func() {
					switch other {
					case "Stop":
						if tm.Stop() {
							res <- errors.New("Stop returned true")
						} else {
							res <- nil
						}
					case "Reset":
						_, err := tm.TryReset(time.Minute)
						if !errors.Is(err, ErrStopped) {
							res <- errors.New("TryReset returned " + errString(err) + ", want ErrStopped")
						} else {
							res <- nil
						}
					}
				}()
				select {
				case err := <-res:
					t.Fatalf("%s of a timer being armed finished before the arming did (%v): it must wait for the timer to leave owned", other, err)
				case <-waiting.arrived:
				case <-time.After(testwait.FailAfter):
					t.Fatalf("%s neither finished nor waited", other)
				}
				arming.letGo()
				if err := testwait.Recv(t, armed, "the re-arm"); !errors.Is(err, ErrStopped) {
					t.Fatalf("a re-arm that pushed after SystemTimer.Stop closed the shards returned %v, want ErrStopped", err)
				}
				waiting.letGo()
				if err := testwait.Recv(t, res, "the second operation"); err != nil {
					t.Fatalf("%s after SystemTimer.Stop, racing the re-arm: %v", other, err)
				}
				if _, err := tm.TryReset(time.Millisecond); !errors.Is(err, ErrStopped) {
					t.Fatalf("TryReset after SystemTimer.Stop = %v, want ErrStopped", err)
				}
				if tm.Stop() {
					t.Fatal("Stop after SystemTimer.Stop returned true: something armed the timer")
				}
				if len(ran) != 0 {
					t.Fatal("the timer ran after SystemTimer.Stop")
				}
			})
		}
	}
}

// anchor arms a timer a minute out on every shard, so that each shard's
// driver's next wake (wakeAt) comes before an hour out: a Reset to an hour
// then re-arms a timer that is not pending without the lock, by a push (see
// Timer.resetTo), the path whose windows these tests open.
func anchor(t *testing.T, st *SystemTimer) {
	t.Helper()
	anchorShards(t, st)
	for i := range st.shards {
		if w := st.shards[i].wakeAt.Load(); w > st.now()+int64(time.Minute) {
			t.Fatalf("shard %d's wakeAt is %v out after a timer was armed a minute out", i, time.Duration(w-st.now()))
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// TestConcurrentWindowPushedVsSystemStop parks a re-arm after its push
// succeeded and before it publishes the timer as queued, while
// SystemTimer.Stop takes the stack: Stop must wait for the re-arm and return
// the timer, which was armed before Stop. Guards: Stop that passes over an
// owned timer on the stack (it is lost: neither returned nor ever run).
func TestConcurrentWindowPushedVsSystemStop(t *testing.T) {
	st := newWindowTimer(t)
	var tm Timer
	ran := make(chan struct{}, 4)
	st.Bind(&tm, func() { ran <- struct{}{} })
	anchor(t, st)
	pushed, armed := parkedTryReset(t, &tm, "reset:pushed")
	waiting := armPark(t, "waitOwned", 1)
	stopped := make(chan []*Timer, 1)
	go func() { stopped <- st.Stop() }()
	select {
	case <-stopped:
		t.Fatal("SystemTimer.Stop returned while a timer on a stack it took was still being armed")
	case <-waiting.arrived:
	case <-time.After(testwait.FailAfter):
		t.Fatal("SystemTimer.Stop neither finished nor waited for the arming timer")
	}
	pushed.letGo()
	waiting.letGo()
	if err := testwait.Recv(t, armed, "the re-arm"); err != nil {
		t.Fatalf("a re-arm whose push succeeded returned %v", err)
	}
	left := testwait.Recv(t, stopped, "SystemTimer.Stop")
	if !slices.Contains(left, &tm) {
		t.Fatal("SystemTimer.Stop did not return a timer armed (pushed) before it: lost")
	}
	if _, err := tm.TryReset(time.Millisecond); !errors.Is(err, ErrStopped) {
		t.Fatalf("TryReset of a returned timer = %v, want ErrStopped", err)
	}
	if len(ran) != 0 {
		t.Fatal("a returned timer ran")
	}
}

// TestConcurrentWindowMarkedFired parks the driver between marking a due
// timer fired (under its shard's lock) and handing it to the executor
// (after unlocking). Stop then must return false (the run is owed), the
// test suite's settled must not report the run done, and SystemTimer.Stop
// must wait for the driver, after which the run happens or the timer is
// returned, exactly once. Guards: a Stop that cancels a run already marked
// (it would return true and the run still happen), and SystemTimer.Stop not
// waiting for the driver (the batch is submitted to a closed executor: lost).
func TestConcurrentWindowMarkedFired(t *testing.T) {
	for _, stopFirst := range []bool{true, false} {
		name := "StopThenSystemStop"
		if !stopFirst {
			name = "SystemStop"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := mustNew(t, WithTick(time.Millisecond))
				marked := armPark(t, "replace:marked", 1)
				var tm Timer
				var runs atomic.Int32
				st.Bind(&tm, func() { runs.Add(1) })
				tm.Reset(5 * time.Millisecond)
				marked.wait(t)
				if stopFirst {
					if tm.Stop() {
						t.Fatal("Stop returned true for a timer the driver had marked fired: its run is owed")
					}
					if st.settled() {
						t.Fatal("settled reported every owed run done while the driver held one")
					}
				}
				res := make(chan []*Timer, 1)
				go func() { res <- st.Stop() }()
				synctest.Wait()
				select {
				case <-res:
					t.Fatal("SystemTimer.Stop returned while the driver held a run it had marked fired")
				default:
				}
				marked.letGo()
				left := <-res
				n := int(runs.Load())
				if slices.Contains(left, &tm) {
					n++
				}
				if n != 1 {
					t.Fatalf("a run marked fired before SystemTimer.Stop: ran %d times, returned %v; want exactly one of the two", runs.Load(), slices.Contains(left, &tm))
				}
			})
		})
	}
}

// tickerPeriod is the period of dueTicker's Ticker.
const tickerPeriod = 10 * time.Millisecond

// dueTicker returns a Ticker of a manual SystemTimer whose first tick, at
// w1, is due by the clock and whose second, w1+tickerPeriod, is not.
func dueTicker(t *testing.T) (tk *Ticker, ct *chanTimer, w1 int64) {
	fc := newFakeClock()
	st := newManual(t, fc, WithTick(time.Millisecond))
	tk, err := st.NewTicker(tickerPeriod)
	if err != nil {
		t.Fatal(err)
	}
	ct = &tk.ct
	w1 = ct.when.Load()
	fc.Add(tickerPeriod)
	return tk, ct, w1
}

// oneTickDelivered waits for the parked run of dueTicker's Ticker to end
// (done), then checks that the two runs delivered the tick due at W1 once
// and armed the next, W1 plus a period.
func oneTickDelivered(t *testing.T, tk *Ticker, ct *chanTimer, w1 int64, done <-chan struct{}) {
	t.Helper()
	testwait.Recv(t, done, "the parked run")
	if got := ct.when.Load(); got != w1+int64(tickerPeriod) {
		t.Fatalf("the Ticker's deadline is W1+%d periods, want W1+1", (got-w1)/int64(tickerPeriod))
	}
	if n := len(tk.C); n != 1 {
		t.Fatalf("%d ticks delivered, want 1", n)
	}
}

// TestConcurrentWindowTickerRunABA parks one run of a Ticker's Timer after
// it read the state word and found its deadline due, while a second run of
// the same Ticker delivers that deadline and arms the next: the parked run
// must then find the word changed and deliver nothing. Guards: a run that
// releases the word with the same generation (the parked run's CAS then
// succeeds, ABA, and delivers the next tick early).
func TestConcurrentWindowTickerRunABA(t *testing.T) {
	tk, ct, w1 := dueTicker(t)
	due := armPark(t, "chan:due", 1)
	done := inBackground(ct.fire)
	due.wait(t)
	ct.fire() // the second run: delivers W1, arms W1+p
	due.letGo()
	oneTickDelivered(t, tk, ct, w1, done) // else a run delivered a tick before it was due
}

// TestConcurrentWindowTickerRunWhileBusy parks one run of a Ticker's Timer
// while it holds the state word (busy, delivering), and runs a second run
// of the same Ticker then: the second must leave the delivery to the
// holder (kick), and the holder must deliver once and arm the next tick.
// Guards: a run that delivers although another holds the word (two sends,
// or a deadline moved twice), and a holder that drops a kick.
func TestConcurrentWindowTickerRunWhileBusy(t *testing.T) {
	tk, ct, w1 := dueTicker(t)
	firing := armPark(t, "chan:fire", 1)
	done := inBackground(ct.fire)
	firing.wait(t)
	if ct.s.Load()&chanPhase != chanBusy {
		t.Fatal("a run parked at chan:fire does not hold the state word")
	}
	ct.fire() // the second run, while the first holds the word
	if n := len(tk.C); n != 0 {
		t.Fatalf("a run delivered %d ticks while another run held the Ticker", n)
	}
	firing.letGo()
	oneTickDelivered(t, tk, ct, w1, done)
	if ct.s.Load()&chanPhase != chanArmed {
		t.Fatal("the Ticker is not armed for its next tick")
	}
}

// placeOn makes Resets that re-arm a timer on st move it to *to (see
// SystemTimer.placeHook), for the test's shard-moving windows.
func placeOn(st *SystemTimer, to **shard) {
	st.placeHook = func() *shard { return *to }
}

// moving is the setup of the tests of a timer moving between shards: a
// SystemTimer of 8 shards (stopped when the test ends, after its parks are
// cleared: a parked goroutine may hold a lock Stop takes), whose timers are
// placed on *target, at first shard a.
func moving(t *testing.T) (st *SystemTimer, a, b *shard, target **shard) {
	preempting(t) // 8 processors: 8 shards
	st = newWindowTimer(t)
	stopAtEnd(t, st)
	a, b = &st.shards[0], &st.shards[1]
	to := a
	placeOn(st, &to)
	return st, a, b, &to
}

// stopWaitsForOwner starts a Stop of tm, which another goroutine owns
// (parked in a failpoint), and checks that it waits for the owner in
// waitOwned, parked there in turn, instead of returning; what says what
// the owner is doing, for the failure. The caller lets the owner go, then
// waiting, and receives Stop's result from stopped.
func stopWaitsForOwner(t *testing.T, tm *Timer, what string) (<-chan bool, *park) {
	t.Helper()
	waiting := armPark(t, "waitOwned", 1)
	stopped := make(chan bool, 1)
	go func() { stopped <- tm.Stop() }()
	select {
	case ok := <-stopped:
		t.Fatalf("Stop of a timer %s returned %v before its owner finished", what, ok)
	case <-waiting.arrived:
	case <-time.After(testwait.FailAfter):
		t.Fatal("Stop neither finished nor waited")
	}
	return stopped, waiting
}

// parkMove starts a Reset of tm to an hour out that moves it to shard to,
// and parks it after it took the timer (owned) and before the move; it
// returns the park and a channel closed when the Reset returns.
func parkMove(t *testing.T, st *SystemTimer, tm *Timer, target **shard, to *shard) (*park, <-chan struct{}) {
	anchor(t, st)
	*target = to
	p := armPark(t, "reset:moving", 1)
	armed := inBackground(func() { tm.Reset(time.Hour) })
	p.wait(t)
	return p, armed
}

// movingTimer is moving with a timer bound on st, idle, placed on a; it
// fails the test if it runs.
func movingTimer(t *testing.T) (st *SystemTimer, a, b *shard, target **shard, tm *Timer) {
	st, a, b, target = moving(t)
	tm = new(Timer)
	st.Bind(tm, func() { t.Error("the timer ran") })
	if tm.shard() != a {
		t.Fatal("the hook did not place the timer")
	}
	return st, a, b, target, tm
}

// TestConcurrentWindowMoveVsStop parks a Reset that re-arms a stopped
// timer after it took the timer (owned) and before it moves it to another
// shard; a Stop then must wait for it, and take the timer off the stack of
// the shard it was moved to. Guards: a Stop that acts on the shard it read
// before the move (the timer stays on the new shard's stack, stopped there
// later by a drain, after Stop returned true: the library keeps a pointer
// to a timer its owner may reuse).
func TestConcurrentWindowMoveVsStop(t *testing.T) {
	st, a, b, target, tm := movingTimer(t)
	move, armed := parkMove(t, st, tm, target, b)
	stopped, waiting := stopWaitsForOwner(t, tm, "being moved and armed")
	move.letGo()
	testwait.Recv(t, armed, "the moving Reset")
	waiting.letGo()
	if !testwait.Recv(t, stopped, "Stop") {
		t.Fatal("Stop of a timer armed an hour out returned false")
	}
	if sh := tm.shard(); sh != b {
		t.Fatal("the Reset did not move the timer")
	}
	if _, s := unpack(tm.w.Load()); s != stateStopped {
		t.Fatalf("after Stop returned true the timer is in state %d, not stopped: still on a stack", s)
	}
	for _, sh := range []*shard{a, b} {
		for x := sh.incoming.Load(); x != nil && x != closedStack; x = x.next {
			if x == tm {
				t.Fatal("after Stop returned true the timer is still on an incoming stack")
			}
		}
	}
	if n := st.Len(); n != len(st.shards) {
		t.Fatalf("Len = %d, want %d (the anchors)", n, len(st.shards))
	}
	st.checkInvariants()
}

// TestConcurrentWindowStopVsMove parks a Stop of a pending timer after it
// read the timer's shard and before it locks it; meanwhile the timer is
// stopped, re-armed on another processor's shard (moved) and placed there.
// The parked Stop must then find the timer on its new shard and stop it
// there. Guards: a Stop that locks the shard it read and stops the timer
// under the wrong lock (the old shard's count and the new shard's lists go
// wrong).
func TestConcurrentWindowStopVsMove(t *testing.T) {
	st, a, b, target := moving(t)
	var tm Timer
	st.Bind(&tm, func() { t.Error("the timer ran") })
	anchor(t, st)
	tm.Reset(time.Hour)
	if st.Len(); tm.shard() != a { // Len drains: pending on a
		t.Fatal("the hook did not place the timer")
	}
	reading := armPark(t, "lockShard:read", 1)
	stopped := make(chan bool, 1)
	go func() { stopped <- tm.Stop() }()
	reading.wait(t) // read a, not locked yet
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
	*target = b
	tm.Reset(time.Hour) // re-armed on b: moved
	st.drainShard(b, st.now())
	if _, s := unpack(tm.w.Load()); s != statePending || tm.shard() != b {
		t.Fatalf("the re-armed timer is in state %d on shard %p, want pending on b", s, tm.shard())
	}
	reading.letGo()
	if !testwait.Recv(t, stopped, "the parked Stop") {
		t.Fatal("the parked Stop of a timer pending (on its new shard) returned false")
	}
	st.checkInvariants()
	if n := st.Len(); n != len(st.shards) {
		t.Fatalf("Len = %d, want %d (the anchors)", n, len(st.shards))
	}
}

// TestConcurrentWindowMoveVsResetLocked parks a Reset that re-arms a
// stopped timer after it took the timer (owned) and before it moves it off
// its shard, which takes that shard's lock; a Reset that goes under the
// lock (Reset(0): run now) then comes on the same timer. It must wait for
// the owner without holding the lock, or neither ever finishes. Guards: a
// locked Reset that waits for an owned timer under its shard's lock
// (deadlock with the move).
func TestConcurrentWindowMoveVsResetLocked(t *testing.T) {
	st, _, b, target := moving(t)
	ran := make(chan struct{}, 4)
	var tm Timer
	st.Bind(&tm, func() { ran <- struct{}{} })
	move, armed := parkMove(t, st, &tm, target, b)
	waiting := armPark(t, "waitOwned", 1)
	now := make(chan bool, 1)
	go func() { now <- tm.Reset(0) }()
	waiting.wait(t) // the locked Reset found the timer owned
	move.letGo()
	testwait.Recv(t, armed, "the moving Reset (it takes the old shard's lock)")
	waiting.letGo()
	if !testwait.Recv(t, now, "Reset(0)") {
		t.Fatal("Reset(0) of a timer armed an hour out returned false")
	}
	runDue(t, st, ran, 1)
	st.checkInvariants()
}

// unlinkWindow is the window of the Unlinks tests: op (what) of a timer
// pending an hour out (bound to f), run on a goroutine of its own, parked
// at window inside the shard's lock, after it unlinked the timer. A Reset
// to later then must find the timer still pending (and postpone it in
// place), and op, let go, must find it pending too. It returns the
// SystemTimer and the timer.
func unlinkWindow(t *testing.T, window, what string, f func(), op func(*Timer) bool) (*SystemTimer, *Timer) {
	t.Helper()
	// By address: no move, which would wait for the lock op holds.
	st := newWindowTimer(t, withAddressShards())
	stopAtEnd(t, st)
	tm := new(Timer)
	st.Bind(tm, f)
	anchor(t, st)
	tm.Reset(time.Hour)
	st.Len() // placed: pending
	unlinked := armPark(t, window, 1)
	res := make(chan bool, 1)
	go func() { res <- op(tm) }()
	unlinked.wait(t)
	if !tm.Reset(2 * time.Hour) {
		t.Fatalf("Reset while %s held the pending timer returned false: the timer left pending before it was unlinked", what)
	}
	unlinked.letGo()
	if !testwait.Recv(t, res, what) {
		t.Fatalf("%s of a pending timer returned false", what)
	}
	return st, tm
}

// TestConcurrentWindowStopUnlinks parks a Stop of a pending timer inside
// its shard's lock, between unlinking the timer and moving it out of
// pending; a Reset to later then comes. The timer is still pending for it,
// so it postpones the timer in place and reports true, and Stop then stops
// it. Guards: a Stop that moves the timer out of pending before unlinking
// it (the Reset finds it stopped, re-arms it without the lock and writes
// its link while Stop's unlink still reads it).
func TestConcurrentWindowStopUnlinks(t *testing.T) {
	st, tm := unlinkWindow(t, "stopPending:unlinked", "Stop", func() { t.Error("the timer ran") }, (*Timer).Stop)
	if _, s := unpack(tm.w.Load()); s != stateStopped {
		t.Fatalf("the timer is in state %d after Stop, want stopped", s)
	}
	st.checkInvariants()
	if n := st.Len(); n != len(st.shards) {
		t.Fatalf("Len = %d, want %d (the anchors)", n, len(st.shards))
	}
}

// TestConcurrentWindowRunNowUnlinks is TestConcurrentWindowStopUnlinks for
// Reset(0) of a pending timer, which unlinks the timer and marks it fired
// under the lock: a Reset to later inside that window postpones a timer
// still pending. Guards: marking it fired before unlinking it.
func TestConcurrentWindowRunNowUnlinks(t *testing.T) {
	ran := make(chan struct{}, 4)
	st, _ := unlinkWindow(t, "resetLocked:unlinked", "Reset(0)", func() { ran <- struct{}{} }, func(tm *Timer) bool { return tm.Reset(0) })
	runDue(t, st, ran, 1)
	st.checkInvariants()
	if n := st.Len(); n != len(st.shards) {
		t.Fatalf("Len = %d, want %d (the anchors)", n, len(st.shards))
	}
}

// onStack reports whether tm is on sh's incoming stack.
func onStack(sh *shard, tm *Timer) bool {
	for x := sh.incoming.Load(); x != nil && x != closedStack; x = x.next {
		if x == tm {
			return true
		}
	}
	return false
}

// TestConcurrentWindowRearmStaleShard parks a Reset of a stopped timer
// after it read the state word and before it takes the timer; meanwhile
// another Reset moves the timer to another shard and a Stop stops it
// there, so that the word is what the parked Reset read (ABA). The parked
// Reset then arms the timer where it is now, on its shard's stack, and a
// Reset(0) after it finds it there. Guards: a re-arm that pushes the timer
// on the shard it read before it owned the timer (the timer then sits on
// one shard's stack naming another: the wrong shard's lists and counts,
// and Reset(0) drains the other shard for ever under its lock).
func TestConcurrentWindowRearmStaleShard(t *testing.T) {
	st, a, b, target := moving(t)
	ran := make(chan struct{}, 4)
	var tm Timer
	st.Bind(&tm, func() { ran <- struct{}{} })
	anchor(t, st)
	tm.Reset(time.Hour) // on a
	if !tm.Stop() {
		t.Fatal("Stop of a timer armed an hour out returned false")
	}
	read := armPark(t, "reset:read", 1)
	armed := inBackground(func() { tm.Reset(time.Hour) }) // the parked Reset, on a's processor
	read.wait(t)
	*target = b
	tm.Reset(time.Hour) // moved to b
	if tm.shard() != b {
		t.Fatal("the Reset did not move the timer")
	}
	if !tm.Stop() {
		t.Fatal("Stop of a timer armed an hour out returned false")
	}
	*target = a // the parked Reset runs on a's processor: it moves the timer back
	read.letGo()
	testwait.Recv(t, armed, "the parked Reset")
	sh := tm.shard()
	if onStack(a, &tm) && sh != a || onStack(b, &tm) && sh != b {
		t.Fatalf("the timer is on one shard's stack and names the other")
	}
	now := make(chan bool, 1)
	go func() { now <- tm.Reset(0) }()
	if !testwait.Recv(t, now, "Reset(0) of the re-armed timer") {
		t.Fatal("Reset(0) of a timer armed an hour out returned false")
	}
	runDue(t, st, ran, 1)
	st.checkInvariants()
	if n := st.Len(); n != len(st.shards) {
		t.Fatalf("Len = %d, want %d (the anchors)", n, len(st.shards))
	}
}

// TestConcurrentWindowStopBelowTop stops a timer that is on its shard's
// stack below another (so Stop cannot pop it, and leaves it to a drain
// under the lock): when Stop returns, the timer is stopped and on no stack,
// and a Reset then arms it, and it runs. Guards: a drain that passes over a
// timer stopped on the stack (it stays queued-stopped, on no stack: the
// next Reset makes it queued on no stack, and it never runs).
func TestConcurrentWindowStopBelowTop(t *testing.T) {
	fc := newFakeClock()
	st := newWindowTimer(t, withAddressShards(), WithClock(fc))
	stopAtEnd(t, st)
	anchor(t, st)
	ran := make(chan struct{}, 4)
	var below Timer
	st.Bind(&below, func() { ran <- struct{}{} })
	sh := below.shard()
	below.Reset(time.Hour)
	var above *Timer
	for above == nil || above.shard() != sh {
		var err error
		if above, err = st.AfterFunc(time.Hour, func() {}); err != nil {
			t.Fatal(err)
		}
	}
	if !onStack(sh, &below) || sh.incoming.Load() == &below {
		t.Fatal("the timer is not below the top of its shard's stack: the test no longer tests that path")
	}
	if !below.Stop() {
		t.Fatal("Stop of a timer armed an hour out returned false")
	}
	if _, s := unpack(below.w.Load()); s != stateStopped || onStack(sh, &below) {
		t.Fatalf("after Stop returned true the timer is in state %d, on the stack: %v; want stopped, off it", s, onStack(sh, &below))
	}
	below.Reset(time.Millisecond)
	fc.Add(2 * time.Millisecond)
	runDue(t, st, ran, 1)
}

// TestConcurrentWindowReserveVsSystemStop parks a locked re-arm under
// WithMaxPending in the window where reserveLocked has released the
// shard's lock to collect places (the bound is full: a periodic series
// holds the one place, its run under way), while SystemTimer.Stop closes
// the shards. The re-arm must return ErrStopped. Guards: a re-arm that
// looks again when it finds the shard closed, and the bound still full,
// which loops for as long as the place is held; and a series whose run is
// under way at Stop keeping its place (then for ever).
func TestConcurrentWindowReserveVsSystemStop(t *testing.T) {
	st := mustNew(t, WithMaxPending(1))
	started, gate := periodicHeld(t, st)
	testwait.Recv(t, started, "the series' first run")
	var tm Timer
	st.Bind(&tm, noop)
	unlocked, res := parkedTryReset(t, &tm, "reserve:unlocked")
	stopped := inBackground(func() { st.Stop() })
	for !shardClosed(tm.shard()) {
		runtime.Gosched() // Stop waits for the run: let it close the shards first
	}
	// The timer's shard is closed; the run is still under way, so the
	// series still holds the one place, and the bound is full.
	unlocked.letGo()
	if err := testwait.Recv(t, res, "the re-arm refused across SystemTimer.Stop"); !errors.Is(err, ErrStopped) {
		t.Fatalf("a re-arm that found the bound full while SystemTimer.Stop closed its shard returned %v, want ErrStopped", err)
	}
	close(gate)
	testwait.Recv(t, stopped, "SystemTimer.Stop")
	if n := st.placesHeld(); n != 0 {
		t.Fatalf("%d places held after SystemTimer.Stop, with a series run under way at Stop: want 0", n)
	}
	if tm.Stop() {
		t.Fatal("Stop after SystemTimer.Stop returned true: the refused re-arm armed the timer")
	}
}

// shardClosed reports whether SystemTimer.Stop has closed sh.
func shardClosed(sh *shard) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.closed
}

// TestConcurrentWindowMoveFromClosed parks a Reset that re-arms a stopped
// timer on shard a for shard b (after it took the timer, before the move),
// and SystemTimer.Stop after it closed shard a and before shard b. The
// Reset must fail with ErrStopped and leave the timer on a. Guards: a move
// off a closed shard onto one not closed yet: the timer is then armed, and
// a later operation finds the SystemTimer running, after an earlier one
// (on the closed shard) found it stopped, a history no order of the calls
// gives (conctest's TestLinearizableRacingStop caught it once in CI, at
// 5d61e3a).
func TestConcurrentWindowMoveFromClosed(t *testing.T) {
	st, a, b, target, tm := movingTimer(t)
	anchor(t, st)
	*target = b
	moving, res := parkedTryReset(t, tm, "reset:moving")
	closing := armPark(t, "stop:closed", 1) // after shards[0], a, is closed
	stopped := inBackground(func() { st.Stop() })
	closing.wait(t)
	if !shardClosed(a) || shardClosed(b) {
		t.Fatal("SystemTimer.Stop is not parked between closing shard a and shard b")
	}
	moving.letGo()
	if err := testwait.Recv(t, res, "the moving re-arm"); !errors.Is(err, ErrStopped) {
		t.Fatalf("a re-arm of a timer on a shard SystemTimer.Stop had closed returned %v, want ErrStopped", errString(err))
	}
	if tm.shard() != a {
		t.Fatal("the re-arm moved the timer off the closed shard")
	}
	closing.letGo()
	testwait.Recv(t, stopped, "SystemTimer.Stop")
	if _, err := tm.TryReset(0); !errors.Is(err, ErrStopped) {
		t.Fatalf("TryReset after SystemTimer.Stop = %v, want ErrStopped", errString(err))
	}
}

// following is moving under WithMaxPending: a re-arm takes the locked
// path there (it reserves a place), and follow moves the timer first. The
// timer is bound, armed on shard a and stopped there, and the anchors hold
// wakeAt low.
func following(t *testing.T) (st *SystemTimer, a, b *shard, target **shard, tm *Timer) {
	preempting(t) // 8 processors: 8 shards
	st = newWindowTimer(t, WithMaxPending(1000))
	stopAtEnd(t, st)
	a, b = &st.shards[0], &st.shards[1]
	to := a
	placeOn(st, &to)
	tm = new(Timer)
	st.Bind(tm, func() { t.Error("the timer ran") })
	anchor(t, st)
	if _, err := tm.TryReset(time.Hour); err != nil {
		t.Fatal(err)
	}
	if !tm.Stop() || tm.shard() != a {
		t.Fatal("the hook did not place the timer, or Stop did not stop it")
	}
	return st, a, b, &to, tm
}

// TestConcurrentWindowFollowVsStop parks a Reset under WithMaxPending of a
// stopped timer after it took the timer (owned) and before it moves it to
// the shard of the processor that re-arms it; a Stop must wait for the
// move, and then find the timer, armed, on its new shard. Guards: a move
// made without owning the timer (Stop acts on it meanwhile, under the
// lock of a shard it is leaving).
func TestConcurrentWindowFollowVsStop(t *testing.T) {
	st, a, b, target, tm := following(t)
	*target = b
	move, armed := parkedTryReset(t, tm, "follow:moving")
	stopped, waiting := stopWaitsForOwner(t, tm, "being moved")
	move.letGo()
	if err := testwait.Recv(t, armed, "the following Reset"); err != nil {
		t.Fatalf("the Reset failed: %v", err)
	}
	if sh := tm.shard(); sh != b {
		t.Fatalf("the Reset under WithMaxPending did not move the timer to the processor's shard (on shard %d)", sh.index(st))
	}
	waiting.letGo()
	if !testwait.Recv(t, stopped, "Stop") {
		t.Fatal("Stop of a timer armed an hour out returned false")
	}
	if n := st.Len(); n != len(st.shards) {
		t.Fatalf("Len = %d, want %d (the anchors)", n, len(st.shards))
	}
	_ = a
	st.checkInvariants()
}

// TestConcurrentWindowFollowVsSystemStop parks a Reset under WithMaxPending
// in each window of follow (before the move, and after it, before it gives
// the state back) while SystemTimer.Stop runs: the Reset must then fail
// with ErrStopped, leaving the timer stopped, counted nowhere.
func TestConcurrentWindowFollowVsSystemStop(t *testing.T) {
	for _, window := range []string{"follow:moving", "follow:moved"} {
		t.Run(window, func(t *testing.T) {
			st, _, b, target, tm := following(t)
			*target = b
			p, armed := parkedTryReset(t, tm, window)
			left := st.Stop()
			for _, x := range left {
				if x == tm {
					t.Error("SystemTimer.Stop returned a timer that was stopped")
				}
			}
			p.letGo()
			if err := testwait.Recv(t, armed, "the following Reset"); !errors.Is(err, ErrStopped) {
				t.Fatalf("a Reset under way while SystemTimer.Stop ran returned %v, want ErrStopped", err)
			}
			if _, s := unpack(tm.w.Load()); s != stateStopped {
				t.Fatalf("the timer is in state %d, want stopped", s)
			}
		})
	}
}

// TestConcurrentWindowCollectVsLowArming parks an arming that is about to
// be refused (WithMaxPending's bound reached) inside its collection of the
// places the shards cache, after it has passed shard 0; then 16 timers of
// shard 0 stop and one is armed there. With few places left free, the stops
// give their places straight back to the shared count and the arming takes
// one: the parked arming, let go, finds the 15 left and succeeds. Guards:
// a shard that takes a batch of places into its cache while few are left
// free, or keeps the places its timers give back: the parked arming is
// refused with 25 of 40 pending, a bound that refuses before it is reached.
func TestConcurrentWindowCollectVsLowArming(t *testing.T) {
	const bound = 40
	st, here := boundedOnShards(t, bound)
	timers := make([]*Timer, bound)
	for i := range timers {
		tm, err := st.AfterFunc(time.Hour, func() {})
		if err != nil {
			t.Fatalf("arming %d of %d: %v", i+1, bound, err)
		}
		timers[i] = tm
	}
	p := armPark(t, "collect:passed", 1)
	*here = &st.shards[1]
	refused := make(chan error, 1)
	go func() {
		_, err := st.AfterFunc(time.Hour, func() {})
		refused <- err
	}()
	p.wait(t) // shard 0 collected, shards 1 to 3 not yet
	*here = &st.shards[0]
	for _, tm := range timers[:16] {
		if !tm.Stop() {
			t.Fatal("Stop of a pending timer returned false")
		}
	}
	if _, err := st.AfterFunc(time.Hour, func() {}); err != nil {
		t.Fatalf("arming on shard 0 with 16 places free: %v", err)
	}
	p.letGo()
	if err := testwait.Recv(t, refused, "the parked arming"); err != nil {
		t.Fatalf("the arming parked in its collection was refused with %d of %d pending: %v", st.Len(), bound, err)
	}
}
