package timingwheel

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A Timer bound into the caller's struct is reused: a pooled session is
// zeroed once its timer is stopped, and bound again. So once Stop has
// returned true the library must keep no pointer to the timer. It kept one:
// a timer stopped while still on its shard's incoming stack stayed there,
// queued-stopped, until the next drain; zeroing it cut the stack below it
// off (those timers never ran, and SystemTimer.Stop never returned them),
// and the drainer's read of the zeroed state raced with the caller's write
// (TestResetAllocs under -race).

func noop() {}

type reusable struct {
	t Timer
}

// stackingManual returns a SystemTimer without a driver on which timers
// armed an hour out are pushed on the incoming stack and stay there: a
// timer a minute out on each shard, placed under the lock, makes every
// shard's wakeAt a minute out. It returns those timers too.
func stackingManual(t *testing.T) (*SystemTimer, []*Timer) {
	t.Helper()
	st := mustNew(t, withManual(), withAddressShards())
	anchors := anchorShards(t, st)
	st.step()
	for i := range st.shards {
		if w := st.shards[i].wakeAt.Load(); w > int64(time.Minute) {
			t.Fatalf("shard %d's wakeAt is %v after step, want at most a minute", i, time.Duration(w))
		}
	}
	return st, anchors
}

// onShard returns a reusable whose timer hashes to sh.
func onShard(st *SystemTimer, sh *shard) *reusable {
	for {
		r := new(reusable)
		if st.shardOf(&r.t) == sh {
			return r
		}
	}
}

func TestStopLeavesNoPointer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		onTop bool // nothing armed on the shard between the Reset and the Stop
	}{{"on top of the stack", true}, {"below another timer", false}} {
		t.Run(tc.name, func(t *testing.T) {
			// Without the driver nothing drains: every timer armed an hour
			// out stays on the stack, in the order armed.
			st, anchors := stackingManual(t)
			below, err := st.AfterFunc(time.Hour, noop)
			if err != nil {
				t.Fatal(err)
			}
			r := onShard(st, below.sh)
			st.Bind(&r.t, noop)
			r.t.Reset(time.Hour)
			if below.sh.incoming.Load() != &r.t {
				t.Fatal("the timer is not on top of the stack: this test no longer tests the stack")
			}
			want := append(anchors, below)
			if !tc.onTop {
				above, err := st.AfterFunc(time.Hour, noop)
				if err != nil {
					t.Fatal(err)
				}
				for above.sh != below.sh {
					above.Stop()
					if above, err = st.AfterFunc(time.Hour, noop); err != nil {
						t.Fatal(err)
					}
				}
				want = append(want, above)
			}
			if !r.t.Stop() {
				t.Fatal("Stop of a timer armed an hour out returned false")
			}
			*r = reusable{} // the caller reuses its memory
			st.Bind(&r.t, noop)
			if msg := sameTimers(st.Stop(), want); msg != "" {
				t.Fatalf("SystemTimer.Stop after a stopped timer was reused: %s", msg)
			}
		})
	}
}

// TestStatsCountUnstacked: a timer that Stop pops off the stack was armed
// and stopped, and Stats says so.
func TestStatsCountUnstacked(t *testing.T) {
	st, anchors := stackingManual(t)
	defer st.Stop()
	tm, err := st.AfterFunc(time.Hour, noop)
	if err != nil {
		t.Fatal(err)
	}
	if !tm.Stop() {
		t.Fatal("Stop returned false")
	}
	if n := tm.sh.unstacked.Load(); n != 1 {
		t.Fatalf("the timer was not popped by its Stop (unstacked = %d): this test no longer tests that path", n)
	}
	s := st.Stats()
	if a := uint64(len(anchors)); s.Armed != a+1 || s.Stopped != 1 || s.Pending != int(a) {
		t.Fatalf("Stats: Armed %d, Stopped %d, Pending %d; want %d, 1, %d (with the anchors)", s.Armed, s.Stopped, s.Pending, a+1, a)
	}
}

// TestConcurrentStopReuse: goroutines arm, stop and zero timers in their
// own structs, all on one shard, while another arms timers there (so that
// a Stop finds its timer on top of the stack, below others, or taken by a
// drainer), the driver drains, and a pusher drains the stack when it is
// deep. The race detector reports any access of the library to a timer
// after its Stop returned true; a stack cut off by a zeroed link loses the
// other goroutine's timers, which SystemTimer.Stop must return.
func TestConcurrentStopReuse(t *testing.T) {
	stress(t, func(t *testing.T) {
		st := mustNew(t, withAddressShards())
		first, err := st.AfterFunc(time.Hour, noop)
		if err != nil {
			t.Fatal(err)
		}
		sh := first.sh
		var stopFalse atomic.Int64
		var wg sync.WaitGroup
		for range 6 {
			r := onShard(st, sh)
			wg.Go(func() {
				for i := range iters(20000) {
					st.Bind(&r.t, noop)
					r.t.Reset(time.Hour + time.Duration(i))
					if !r.t.Stop() {
						stopFalse.Add(1)
					}
					*r = reusable{}
				}
			})
		}
		armed := []*Timer{first}
		wg.Go(func() {
			for range iters(40000) {
				tm, err := st.AfterFunc(time.Hour, noop)
				if err != nil {
					t.Error(err)
					return
				}
				if tm.sh == sh {
					armed = append(armed, tm)
				} else {
					tm.Stop()
				}
			}
		})
		wg.Wait()
		if n := stopFalse.Load(); n != 0 {
			t.Errorf("Stop of a timer armed an hour out returned false %d times", n)
		}
		st.checkInvariants()
		if msg := sameTimers(st.Stop(), armed); msg != "" {
			t.Fatalf("SystemTimer.Stop: %s", msg)
		}
	})
}

// TestConcurrentUnstackSystemStop races Stops that pop their timers off the
// stack against pushers and SystemTimer.Stop: every timer armed and not
// stopped (Stop returned false) is returned once, and no stopped one is.
func TestConcurrentUnstackSystemStop(t *testing.T) {
	stress(t, func(t *testing.T) {
		for round := range iters(40) {
			st := mustNew(t, withAddressShards())
			var mu sync.Mutex
			var kept []*Timer // armed, and Stop returned false
			var wg sync.WaitGroup
			start := make(chan struct{})
			for g := range 6 {
				wg.Go(func() {
					<-start
					var mine []*Timer
					for i := 0; ; i++ {
						tm, err := st.AfterFunc(time.Hour, noop)
						if err != nil {
							break // stopped
						}
						if (i+g)%3 == 0 {
							mine = append(mine, tm) // left armed
							continue
						}
						if !tm.Stop() {
							mine = append(mine, tm)
						}
					}
					mu.Lock()
					kept = append(kept, mine...)
					mu.Unlock()
				})
			}
			close(start)
			want := kept[:0:0] // this goroutine's timers, and kept
			for range 100 * (round%5 + 1) {
				tm, err := st.AfterFunc(time.Hour, noop)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, tm)
			}
			left := st.Stop()
			wg.Wait()
			if msg := sameTimers(left, append(want, kept...)); msg != "" {
				t.Fatalf("round %d: %s", round, msg)
			}
		}
	})
}

// TestPostponeKeepsALaterDeadline: Postpone moves a timer's deadline only
// later: on the incoming stack (queued) or placed (pending), an earlier
// deadline leaves the later one, a later one moves it; a timer not pending
// is armed, as by Reset.
func TestPostponeKeepsALaterDeadline(t *testing.T) {
	st, _ := stackingManual(t)
	defer st.Stop()
	r := new(reusable)
	st.Bind(&r.t, noop)
	word := func() (int64, uint32) { return unpack(r.t.w.Load()) }
	if r.t.Postpone(2 * time.Hour) {
		t.Fatal("Postpone of a timer never armed returned true")
	}
	for _, s := range []uint32{stateQueued, statePending} {
		v0, got := word()
		if got != s {
			t.Fatalf("state %d, want %d: this test no longer tests that state", got, s)
		}
		if !r.t.Postpone(time.Hour) {
			t.Fatalf("state %d: Postpone returned false", s)
		}
		if v, _ := word(); v != v0 {
			t.Fatalf("state %d: Postpone to an earlier deadline moved it (%d -> %d)", s, v0, v)
		}
		r.t.Postpone(5 * time.Hour)
		if v, _ := word(); v <= v0 {
			t.Fatalf("state %d: Postpone to a later deadline left it (%d -> %d)", s, v0, v)
		}
		st.Len() // drains the stack: the timer is placed
	}
	v0, _ := word()
	if !r.t.Postpone(0) {
		t.Fatal("Postpone(0) of a pending timer returned false")
	}
	if v, s := word(); v != v0 || s != statePending {
		t.Fatalf("Postpone(0) of a pending timer moved it (%d -> %d, state %d)", v0, v, s)
	}
	if !r.t.Stop() || r.t.Postpone(time.Hour) || !r.t.Stop() {
		t.Fatal("a stopped timer's Postpone did not arm it")
	}
	if r.t.Postpone(0) {
		t.Fatal("Postpone(0) of a stopped timer returned true")
	}
	if _, s := word(); s != stateFired {
		t.Fatalf("Postpone(0) of a stopped timer: state %d, want fired (handed to the executor at once)", s)
	}
}
