package timingwheel

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The promises at the edges: each test here reproduces a defect that was
// found and fixed, and fails without the fix.

// TestOneNanosecondTickLargestDelays: with a 1ns tick the wheels reach
// 2^63 ticks only through a level whose span saturates; the largest delays
// (AfterFunc, Reset, a deadline past 2262) made place skip past the top
// level, and the driver panicked with "no level above the top one". They
// are now due at the horizon, which never comes, for every wheel size.
func TestOneNanosecondTickLargestDelays(t *testing.T) {
	for _, size := range []int{2, 3, defaultWheelSize, maxWheelSize} {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			fc := newFakeClock()
			st := newManual(t, fc, WithTick(time.Nanosecond), WithWheelSize(size))
			var ran atomic.Int32
			far, err := st.AfterFunc(math.MaxInt64, func() { ran.Add(1) })
			require.NoError(t, err)
			near, err := st.AfterFunc(time.Second, func() { ran.Add(1) })
			require.NoError(t, err)
			require.True(t, near.Reset(math.MaxInt64))
			ctx, cancel := st.WithDeadline(context.Background(), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC))
			defer cancel()
			other, err := st.AfterFunc(40*365*24*time.Hour, func() { ran.Add(1) }) // past 2^60 ns
			require.NoError(t, err)
			st.step()
			assert.Equal(t, 4, st.Len())
			// A clock moved past the 2^60-tick horizon fires none of them
			// (their deadlines are later still) and does not spin.
			fc.Add(50 * 365 * 24 * time.Hour)
			st.step()
			assert.Zero(t, ran.Load())
			assert.NoError(t, ctx.Err())
			assert.True(t, other.Stop())
			assert.ElementsMatch(t, []*Timer{far, near}, st.Stop())
		})
	}
}

// TestPushedBackIntoTheNextTickRunsAfterItsTick: two timers due at a
// tick's end share a bucket, which expires at that deadline; one of them,
// pushed back by a Reset into the next tick, still sits in the bucket. It
// must run after the other, in deadline order, not in the order they were
// armed; and at once if its deadline has passed, not at the end of its
// tick. (Deadlines on a tick's end are the rule with a mock clock.)
func TestPushedBackIntoTheNextTickRunsAfterItsTick(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	var order []string
	a, err := st.AfterFunc(time.Millisecond, func() { order = append(order, "a") })
	require.NoError(t, err)
	_, err = st.AfterFunc(time.Millisecond, func() { order = append(order, "b") })
	require.NoError(t, err)
	require.True(t, a.Reset(1500*time.Microsecond)) // later: a stays in the bucket
	fc.Add(1700 * time.Microsecond)                 // past a's deadline, not its tick's end
	st.step()
	assert.Equal(t, []string{"b", "a"}, order)
}

// TestHorizonNeverEarly: a deadline beyond the horizon of a 1ns tick
// (2^60 ticks, 36 years) is kept for ever, never fired at the horizon.
func TestHorizonNeverEarly(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc, WithTick(time.Nanosecond))
	defer st.Stop()
	var ran atomic.Int32
	_, err := st.AfterFunc(37*365*24*time.Hour, func() { ran.Add(1) })
	require.NoError(t, err)
	_, err = st.AfterFunc(35*365*24*time.Hour, func() { ran.Add(10) })
	require.NoError(t, err)
	fc.Add(36*365*24*time.Hour + 200*24*time.Hour) // past the horizon, before 37 years
	st.step()
	assert.Equal(t, int32(10), ran.Load(), "only the 35-year timer is due")
}

// TestTickBounds: a tick from 1ns to a minute is accepted; a larger one
// would make every timer up to that late and is refused.
func TestTickBounds(t *testing.T) {
	for _, tick := range []time.Duration{time.Nanosecond, time.Minute} {
		st, err := New(WithTick(tick))
		require.NoError(t, err, "tick %v", tick)
		st.Stop()
	}
	for _, tick := range []time.Duration{time.Minute + 1, time.Hour, math.MaxInt64} {
		_, err := New(WithTick(tick))
		require.ErrorContains(t, err, "WithTick", "tick %v", tick)
	}
}

// TestZeroValuesPanic: a Timer or SystemTimer not made by the package is
// misuse, and says so, as time.Timer does, instead of doing nothing (a
// zero Timer's Reset returned false and never ran) or failing with an
// index out of range.
func TestZeroValuesPanic(t *testing.T) {
	var tm Timer
	assert.PanicsWithValue(t, "timingwheel: Reset called on an unbound Timer", func() { tm.Reset(time.Second) })
	assert.PanicsWithValue(t, "timingwheel: TryReset called on an unbound Timer", func() { _, _ = tm.TryReset(time.Second) })
	assert.PanicsWithValue(t, "timingwheel: Stop called on an unbound Timer", func() { tm.Stop() })

	var st SystemTimer
	for name, f := range map[string]func(){
		"AfterFunc":    func() { _, _ = st.AfterFunc(time.Second, func() {}) },
		"ScheduleFunc": func() { _, _ = st.ScheduleFunc(Every(time.Second), func() {}) },
		"WithTimeout":  func() { st.WithTimeout(context.Background(), time.Second) },
		"WithDeadline": func() { st.WithDeadline(context.Background(), time.Now()) },
		"Bind":         func() { st.Bind(&tm, func() {}) },
		"Len":          func() { st.Len() },
		"Stop":         func() { st.Stop() },
	} {
		assert.PanicsWithValue(t, "timingwheel: "+name+" called on a SystemTimer not made by New", f, name)
	}
}

// TestNilPanics: every exported method called on a nil *SystemTimer, and
// Bind given a nil *Timer, is misuse that says so with the package's
// prefix and the call, instead of a bare nil dereference from deep inside
// the method. The methods are found by reflection, so one added later is
// covered too; each gets zero arguments, which it must not reach.
func TestNilPanics(t *testing.T) {
	var st *SystemTimer
	v := reflect.ValueOf(st)
	require.Positive(t, v.NumMethod())
	for i := range v.NumMethod() {
		name := v.Type().Method(i).Name
		m := v.Method(i)
		args := make([]reflect.Value, m.Type().NumIn())
		for j := range args {
			args[j] = reflect.Zero(m.Type().In(j))
		}
		assert.Equal(t, "timingwheel: "+name+" called on a nil *SystemTimer",
			panicValue(func() { m.Call(args) }), name)
	}

	made := mustNew(t, withManual())
	defer made.Stop()
	assert.Equal(t, "timingwheel: Bind: nil *Timer", panicValue(func() { made.Bind(nil, func() {}) }))
}

// panicValue returns what f panicked with, or nil if it returned.
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// TestPeriodicResetDuringRunNoOverlap: Reset of a periodic timer while its
// run is in progress, from outside or from the run itself, moves the next
// run and never starts it before the current one returns. It started a
// second run at once, overlapping the first.
func TestPeriodicResetDuringRunNoOverlap(t *testing.T) {
	for _, self := range []bool{false, true} {
		t.Run(fmt.Sprintf("self=%v", self), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := mustNew(t)
				defer st.Stop()
				start := time.Now()
				var running atomic.Int32
				var tm atomic.Pointer[Timer]
				starts := make(chan time.Duration, 8)
				inRun := make(chan struct{}, 8)
				var runs atomic.Int32
				p, err := st.ScheduleFunc(Every(time.Second), func() {
					if running.Add(1) != 1 {
						t.Error("runs overlap")
					}
					starts <- time.Since(start)
					if runs.Add(1) == 1 {
						if self {
							tm.Load().Reset(10 * time.Millisecond)
						} else {
							inRun <- struct{}{}
						}
						time.Sleep(100 * time.Millisecond)
					}
					running.Add(-1)
				})
				require.NoError(t, err)
				tm.Store(p)
				if !self {
					<-inRun
					assert.False(t, p.Reset(10*time.Millisecond), "a running series is not pending")
				}
				assert.Equal(t, time.Second, <-starts)
				// Due 10ms after the Reset, during the run: it starts as
				// soon as the run returns, and the series goes on from
				// the time Reset gave.
				assert.Equal(t, 1100*time.Millisecond, <-starts)
				assert.Equal(t, 2010*time.Millisecond, <-starts)
				synctest.Wait() // the run that reported has returned
				assert.True(t, p.Stop())
			})
		})
	}
}

// TestPeriodicStopThenResetDuringRun: Stop, then Reset, both during a run:
// the series goes on after the run, never beside it.
func TestPeriodicStopThenResetDuringRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		start := time.Now()
		in, out := make(chan struct{}), make(chan struct{})
		starts := make(chan time.Duration, 4)
		var runs atomic.Int32
		p, err := st.ScheduleFunc(Every(time.Second), func() {
			starts <- time.Since(start)
			if runs.Add(1) == 1 {
				in <- struct{}{}
				<-out
			}
		})
		require.NoError(t, err)
		<-in
		assert.False(t, p.Stop())
		assert.False(t, p.Reset(time.Millisecond))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Len(t, starts, 1, "a run started beside the first")
		out <- struct{}{}
		assert.Equal(t, time.Second, <-starts)
		assert.Equal(t, 2*time.Second, <-starts, "right after the run: its Reset time has passed")
		// The series goes on from the time Reset gave, 1.001s: no drift.
		assert.Equal(t, 2*time.Second+time.Millisecond, <-starts)
		synctest.Wait()
		assert.True(t, p.Stop())
	})
}

// TestPeriodicResetZero: Reset(d <= 0) of a periodic timer runs it now and
// continues the series from now. It ran at once but kept the old schedule,
// and lost the run after (Every(1s), Reset(0) at 100ms ran at 100ms and
// 2s); Reset(1ns) was right, and stays so: it runs at its deadline.
func TestPeriodicResetZero(t *testing.T) {
	for _, c := range []struct {
		d             time.Duration
		first, second time.Duration
	}{
		{0, 100 * time.Millisecond, 1100 * time.Millisecond},
		{-time.Second, 100 * time.Millisecond, 1100 * time.Millisecond},
		{time.Nanosecond, 100*time.Millisecond + 16, 1100*time.Millisecond + 16}, // rounded up to a deadline's unit, 16ns
	} {
		t.Run(fmt.Sprintf("d=%v", c.d), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := mustNew(t)
				defer st.Stop()
				start := time.Now()
				starts := make(chan time.Duration, 4)
				p, err := st.ScheduleFunc(Every(time.Second), func() { starts <- time.Since(start) })
				require.NoError(t, err)
				time.Sleep(100 * time.Millisecond)
				assert.True(t, p.Reset(c.d))
				assert.Equal(t, c.first, <-starts)
				assert.Equal(t, c.second, <-starts)
				synctest.Wait() // the run that reported has returned
				assert.True(t, p.Stop())
			})
		})
	}
}

// TestRetainedStoppedTimerPinsNothing: a timer stopped while on its
// shard's incoming stack kept its link to the timers below it, so one such
// timer kept by its owner kept all of them and their closures alive, after
// the drain and after SystemTimer.Stop alike.
func TestRetainedStoppedTimerPinsNothing(t *testing.T) {
	for _, how := range []string{"drain", "SystemTimer.Stop"} {
		t.Run(how, func(t *testing.T) {
			fc := newFakeClock()
			st := newManual(t, fc)
			// A bucket due first on every shard makes wakeAt low, so
			// that later timers are pushed on the stack instead of placed.
			anchorShards(t, st)
			st.step()
			const n = 200
			var kept *Timer
			payloads := make([]weak.Pointer[[1 << 16]byte], n)
			func() {
				for i := range n {
					buf := new([1 << 16]byte)
					payloads[i] = weak.Make(buf)
					tm, err := st.AfterFunc(time.Hour, func() { buf[0]++ })
					require.NoError(t, err)
					require.Equal(t, stateQueued, stateOf(tm), "not on the stack")
					require.True(t, tm.Stop())
					kept = tm // the last pushed: on top of the others
				}
			}()
			if how == "drain" {
				assert.Equal(t, len(st.shards), st.Len())
				defer st.Stop()
			} else {
				st.Stop()
			}
			runtime.GC()
			alive := 0
			for _, p := range payloads[:n-1] {
				if p.Value() != nil {
					alive++
				}
			}
			assert.Zero(t, alive, "closures of stopped timers kept alive by the one kept")
			runtime.KeepAlive(kept)
		})
	}
}

func stateOf(t *Timer) uint32 {
	_, s := unpack(t.w.Load())
	return s
}

// TestMaxPendingHoldsForEveryWayToPending: Reset of a stopped or fired
// timer, and a periodic series re-arming after its run, exceeded the bound.
// Now TryReset reports ErrTooManyPending, and a series holds its place from
// ScheduleFunc to its end.
func TestMaxPendingHoldsForEveryWayToPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithMaxPending(10))
		defer st.Stop()
		var tms []*Timer
		for range 20 {
			tm, err := st.AfterFunc(time.Hour, func() {})
			if err != nil {
				require.ErrorIs(t, err, ErrTooManyPending)
				continue
			}
			tms = append(tms, tm)
		}
		require.Len(t, tms, 10)
		var stopped []*Timer
		for i := range 10 {
			tm := &Timer{}
			st.Bind(tm, func() {})
			stopped = append(stopped, tm)
			if i%2 == 0 {
				_, err := tm.TryReset(time.Hour)
				require.ErrorIs(t, err, ErrTooManyPending)
			} else {
				assert.False(t, tm.Reset(time.Hour))
			}
			assert.Equal(t, stateIdle, stateOf(tm))
		}
		assert.Equal(t, 10, st.Len())
		// A pending timer moves freely at the bound.
		was, err := tms[0].TryReset(2 * time.Hour)
		assert.True(t, was)
		assert.NoError(t, err)
		was, err = tms[1].TryReset(time.Minute)
		assert.True(t, was)
		assert.NoError(t, err)
		// Fired timers free their places, and re-arming them takes one.
		require.True(t, tms[2].Reset(time.Millisecond))
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 9, st.Len())
		_, err = stopped[0].TryReset(time.Hour)
		assert.NoError(t, err)
		_, err = tms[2].TryReset(time.Hour)
		assert.ErrorIs(t, err, ErrTooManyPending, "re-arming a fired timer")
		assert.Equal(t, 10, st.Len())
	})

	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithMaxPending(1))
		defer st.Stop()
		p, runs, release := heldSeries(t, st)
		// The series is in its run: its place is still taken.
		_, err := st.AfterFunc(time.Hour, func() {})
		assert.ErrorIs(t, err, ErrTooManyPending, "a running series lost its place")
		release <- struct{}{}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.LessOrEqual(t, st.Len(), 1)
		assert.Equal(t, int32(11), runs.Load())
		assert.True(t, p.Stop())
		// Ended: the place is free, and a Reset of the series takes it.
		tm, err := st.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		_, err = p.TryReset(time.Second)
		assert.ErrorIs(t, err, ErrTooManyPending)
		require.True(t, tm.Stop())
		_, err = p.TryReset(time.Second)
		assert.NoError(t, err)
		assert.Equal(t, 1, st.Len())
	})
}

// TestBind: a Timer in the caller's struct, bound once, armed and disarmed
// over and over; binding twice or with a nil func is misuse.
func TestBind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		type conn struct {
			idle  Timer
			fired chan time.Duration
		}
		start := time.Now()
		c := &conn{fired: make(chan time.Duration, 4)}
		st.Bind(&c.idle, func() { c.fired <- time.Since(start) })
		assert.False(t, c.idle.Stop(), "bound, not armed")
		assert.False(t, c.idle.Reset(time.Second))
		time.Sleep(500 * time.Millisecond)
		assert.True(t, c.idle.Reset(time.Second), "pushed back")
		assert.Equal(t, 1500*time.Millisecond, <-c.fired)
		assert.False(t, c.idle.Reset(time.Second), "fired")
		assert.True(t, c.idle.Stop())
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Empty(t, c.fired)

		assert.PanicsWithValue(t, "timingwheel: Bind: the Timer is bound already", func() { st.Bind(&c.idle, func() {}) })
		var other Timer
		assert.PanicsWithValue(t, "timingwheel: Bind: nil func", func() { st.Bind(&other, nil) })
	})
}

// TestResetLaterTakesNoLock: pushing a pending timer back completes while
// its shard's lock is held elsewhere, and touches no bucket: the timer
// stays where it was placed until that bucket is due.
func TestResetLaterTakesNoLock(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	tm, err := st.AfterFunc(time.Second, func() {})
	require.NoError(t, err)
	st.Len() // placed
	require.Equal(t, statePending, stateOf(tm))
	prev, next := tm.prev, tm.next
	sh := tm.sh
	sh.mu.Lock()
	done := make(chan bool)
	go func() { done <- tm.Reset(time.Minute) }()
	var was bool
	select {
	case was = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Reset to a later deadline waited for the shard's lock")
	}
	assert.Same(t, prev, tm.prev, "the timer moved")
	assert.Same(t, next, tm.next, "the timer moved")
	sh.mu.Unlock()
	assert.True(t, was)
}

// TestResetLaterNeverAtOldDeadline: a timer pushed back is never run at its
// old deadline, whether its old bucket is due in level 0 or cascades from
// above, and runs once at the new one, within a tick.
func TestResetLaterNeverAtOldDeadline(t *testing.T) {
	for _, c := range []struct{ first, later time.Duration }{
		{100 * time.Millisecond, 50 * time.Millisecond},    // level 0, same bucket turn
		{100 * time.Millisecond, 10 * time.Second},         // level 0 to level 1
		{10 * time.Second, 3 * time.Minute},                // level 1 to level 1
		{time.Minute, time.Hour},                           // level 1 to level 2
		{time.Second, 512 * time.Millisecond},              // one level-0 turn later
		{time.Millisecond, time.Millisecond / 3},           // same tick
		{5 * time.Minute, 5*time.Minute + time.Nanosecond}, // a cascading bucket
	} {
		t.Run(fmt.Sprintf("%v+%v", c.first, c.later), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := mustNew(t)
				defer st.Stop()
				time.Sleep(time.Millisecond / 3) // off the tick grid
				start := time.Now()
				fired := make(chan time.Duration, 2)
				tm, err := st.AfterFunc(c.first, func() { fired <- time.Since(start) })
				require.NoError(t, err)
				// Push it back just before its deadline, then once more.
				time.Sleep(c.first - time.Nanosecond)
				require.True(t, tm.Reset(c.later))
				want := c.first - time.Nanosecond + c.later
				got := <-fired
				assert.GreaterOrEqual(t, got, want, "early")
				assert.LessOrEqual(t, got, want+time.Millisecond, "late")
				time.Sleep(time.Hour)
				synctest.Wait()
				assert.Empty(t, fired, "ran twice")
			})
		})
	}
}

// TestResetRacesDriver pushes timers back, and re-arms fired ones, from
// several goroutines while the driver fires and cascades them: each arming
// runs exactly once or is replaced (Reset true), Stop's result agrees, and
// nothing runs before the deadline of the arming it belongs to.
func TestResetRacesDriver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick = time.Millisecond
		st := mustNew(t, WithWheelSize(4))
		const goroutines, timers, rounds = 4, 64, 40
		type rec struct {
			mu       sync.Mutex
			deadline []time.Time // of the armings that must run, in order
			runs     []time.Time
		}
		recs := make([]*rec, goroutines*timers)
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []*Timer
				for i := range timers {
					r := &rec{}
					recs[g*timers+i] = r
					d := time.Duration(1+(g*timers+i)%7) * tick
					r.mu.Lock()
					r.deadline = append(r.deadline, time.Now().Add(d))
					tm, err := st.AfterFunc(d, func() {
						r.mu.Lock()
						r.runs = append(r.runs, time.Now())
						r.mu.Unlock()
					})
					r.mu.Unlock()
					require.NoError(t, err)
					mine = append(mine, tm)
				}
				for k := range rounds {
					for i, tm := range mine {
						r := recs[g*timers+i]
						d := time.Duration(1+(k*i+g)%50) * tick / 3
						r.mu.Lock()
						dl := time.Now().Add(d)
						if tm.Reset(d) {
							r.deadline[len(r.deadline)-1] = dl // replaced
						} else {
							r.deadline = append(r.deadline, dl)
						}
						r.mu.Unlock()
					}
					time.Sleep(time.Duration(k%3) * tick)
				}
			}()
		}
		wg.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Empty(t, st.Stop())
		for i, r := range recs {
			require.Equal(t, len(r.deadline), len(r.runs), "timer %d: armings and runs", i)
			for k := range r.runs {
				require.False(t, r.runs[k].Before(r.deadline[k]), "timer %d run %d early", i, k)
				require.LessOrEqual(t, r.runs[k].Sub(r.deadline[k]), tick, "timer %d run %d late", i, k)
			}
		}
	})
}

// TestFarCascadeStaysPacedWhenANearListJoins: a level-2 bucket expires a
// quarter of its width (65s) early and its list, hundreds of thousands of
// timers in the soak, is re-placed at a pace. Level-1 lists, due within
// 128ms, are re-placed back to back. Both went into one cascade list per
// shard, so the first level-1 bucket to expire after a level-2 one made the
// whole merged list urgent: the driver re-placed every far timer back to
// back before the next due bucket, and callbacks ran 130–350ms late at
// every level-2 expiry of the 10-minute soak while the runtime's own
// timers were 12–16ms late.
func TestFarCascadeStaysPacedWhenANearListJoins(t *testing.T) {
	// Two shards, whatever the machine: a shard's list is re-placed a
	// chunk at a time, and with many shards each one's share of the far
	// timers would fit in a chunk.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	fc := newFakeClock()
	st := newManual(t, fc)
	require.Len(t, st.shards, 2)
	const far = 3000
	var fired atomic.Int64
	start := fc.Now()
	// Level-2 bucket 1: [262.144s, 524.288s), expiring at 196.608s.
	for i := range far {
		d := 300*time.Second + time.Duration(i)*50*time.Millisecond
		_, err := st.AfterFunc(d, func() {
			require.False(t, fc.Now().Before(start.Add(d)), "early")
			fired.Add(1)
		})
		require.NoError(t, err)
	}
	// A level-1 bucket, [197.12s, 197.632s), expiring 128ms early.
	const near = 10
	for range near {
		_, err := st.AfterFunc(197500*time.Millisecond, func() { fired.Add(1) })
		require.NoError(t, err)
	}
	st.step()
	require.Zero(t, st.Stats().Cascaded)

	// Each shard's driver paces its own far list: a chunk per shard per
	// millisecond at most (where the timers went depends on the
	// processor, or, under -race, on sync.Pool's whims).
	perStep := uint64(len(st.shards) * replaceChunk)
	fc.Add(196609 * time.Millisecond) // the level-2 bucket expires
	st.step()
	afterFar := st.Stats().Cascaded
	assert.LessOrEqual(t, afterFar, perStep, "the far list is paced")

	fc.Add(390 * time.Millisecond) // 196.999s: the level-1 bucket expires
	st.step()
	cascaded := st.Stats().Cascaded
	assert.GreaterOrEqual(t, cascaded-afterFar, uint64(near), "the near list is re-placed at once")
	assert.LessOrEqual(t, cascaded-afterFar, near+perStep, "the far list stays paced when a near one joins")

	fc.Add(time.Second) // 197.999s: the near timers are due
	st.step()
	assert.Equal(t, int64(near), fired.Load())
	// The pace: a chunk a millisecond, to the end.
	steps := 0
	for st.Stats().Cascaded < far+near && steps < 2*far/replaceChunk {
		fc.Add(time.Millisecond)
		st.step()
		steps++
	}
	assert.Equal(t, uint64(far+near), st.Stats().Cascaded, "paced to the end")
	assert.LessOrEqual(t, steps, far/replaceChunk+len(st.shards), "a chunk a step")
	for fc.Now().Sub(start) < 460*time.Second {
		fc.Add(10 * time.Second)
		st.step()
	}
	assert.Equal(t, int64(near+far), fired.Load())
	assert.Zero(t, st.Len())
}

// TestCascadeGate: a cascade list due within a second but not within
// cascadeUrgent is re-placed back to back by at most st.cascaders drivers
// at once (enterCascade); a driver refused looks again a tick later, and a
// list that comes within cascadeUrgent of its first deadline is re-placed
// whatever the others do. Without the gate, the drivers of every shard
// cascaded a storm's level-1 buckets at once, on every processor, and
// left the workers none (storm p99 8–20ms on two cores, against 3–4ms).
func TestCascadeGate(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	const n = 100
	var fired atomic.Int64
	for range n {
		// Level 1: bucket [512ms, 1024ms), expiring a quarter early.
		_, err := st.AfterFunc(700*time.Millisecond, func() { fired.Add(1) })
		require.NoError(t, err)
	}
	st.step()
	st.cascading.Store(st.cascaders) // every cascading place taken
	fc.Add(384 * time.Millisecond)   // the level-1 bucket expires
	st.step()
	require.Zero(t, st.Stats().Cascaded, "a driver cascaded a list due in 316ms while the others held every place")
	fc.Add(300 * time.Millisecond) // 684ms: the list is due within cascadeUrgent
	st.step()
	require.Equal(t, uint64(n), st.Stats().Cascaded, "an urgent list waited for a place")
	require.Zero(t, fired.Load(), "early")
	fc.Add(16 * time.Millisecond) // 700ms
	st.step()
	require.Equal(t, int64(n), fired.Load())

	// With a place free, the list goes at once.
	st.cascading.Store(0)
	for range n {
		_, err := st.AfterFunc(700*time.Millisecond, func() { fired.Add(1) })
		require.NoError(t, err)
	}
	fc.Add(500 * time.Millisecond) // 1.2s: their level-1 bucket expired at 896ms; due at 1.4s
	st.step()
	require.Equal(t, uint64(2*n), st.Stats().Cascaded, "with a place free, the list waited")
	require.Zero(t, st.cascading.Load(), "a place was not given back")
}

// shardedManual returns a manual SystemTimer with two shards at least,
// whatever the machine, stopped when the test ends, and its clock.
func shardedManual(t *testing.T) (*SystemTimer, *fakeClock) {
	t.Helper()
	if runtime.GOMAXPROCS(0) < 2 {
		old := runtime.GOMAXPROCS(2)
		t.Cleanup(func() { runtime.GOMAXPROCS(old) })
	}
	fc := newFakeClock()
	st := newManual(t, fc)
	t.Cleanup(func() { st.Stop() })
	return st, fc
}

// armOn arms a timer d out on shard i, under its lock, whichever processor
// the test runs on.
func armOn(t *testing.T, st *SystemTimer, i int, d time.Duration, f func()) *Timer {
	t.Helper()
	tm := &Timer{f: f}
	tm.sh = &st.shards[i]
	now := st.now()
	require.NoError(t, st.startLocked(tm, now+int64(d), now))
	return tm
}

// TestDriverWakeSeen: a driver that queues a ref only to wake itself (the
// cascade gate refused it, or a far list's pace) lowers its wakeAt to the
// ref's time: settle published wakeAt before the push, and the workers,
// which yield their processor only when a sleeping driver is past its
// wakeAt (driverDue), would otherwise leave the driver asleep until the
// next preemption, 10ms: wakeAt must not stay at "never" with the gate's
// ref at the head.
func TestDriverWakeSeen(t *testing.T) {
	st, fc := shardedManual(t)
	sh := &st.shards[0]
	headBound := func(what string) {
		t.Helper()
		at, ok := sh.dq.Peek()
		require.True(t, ok, "%s: nothing queued", what)
		require.LessOrEqual(t, sh.wakeAt.Load(), int64(at.Sub(st.epoch)), "%s: the driver's wakeAt is after its queue's head", what)
	}
	for range 10 {
		armOn(t, st, 0, 700*time.Millisecond, func() {}) // level 1, expiring at 384ms
	}
	for range 2 * replaceChunk {
		armOn(t, st, 0, 10*time.Minute, func() {}) // level 2, a far list: two chunks
	}
	for sh.turn() {
	}
	st.cascading.Store(st.cascaders) // other drivers hold every place
	fc.Add(450 * time.Millisecond)
	for sh.turn() {
	}
	require.NotEqual(t, int64(math.MaxInt64), sh.cascadeDue[0], "the near list was re-placed: the test no longer tests the gate")
	headBound("refused by the gate")
	st.cascading.Store(0)

	fc.Add(10*time.Minute - 450*time.Millisecond - 65*time.Second) // the level-2 bucket has expired
	for sh.turn() {
	}
	require.True(t, sh.paceQueued, "the far list is not paced: the test no longer tests the pace")
	headBound("pacing a far list")
}

// TestStatsLagIsTheLatest: Stats.Lag is the lag of the latest expiry of
// any shard, not the largest shard's last: a shard that expired a bucket
// late and then went quiet must not pin it for ever.
func TestStatsLagIsTheLatest(t *testing.T) {
	st, fc := shardedManual(t)
	armOn(t, st, 0, 10*time.Millisecond, func() {})
	fc.Add(510 * time.Millisecond) // shard 0 expires its bucket 500ms late
	st.step()
	require.Equal(t, 500*time.Millisecond, st.Stats().Lag)
	for range 10 { // on time, on shard 1
		armOn(t, st, 1, 10*time.Millisecond, func() {})
		fc.Add(10 * time.Millisecond)
		st.step()
	}
	require.Zero(t, st.Stats().Lag, "Lag still shows shard 0's late expiry after shard 1 expired buckets on time")
}

// TestCascadeGateOrder: with the cascade gate full, the refused driver
// whose list is due first goes next: a driver whose list is due later
// steps aside for it, and gets in once that one is served. Without the
// order, a driver leaving the gate came back at once for its next chunk
// while a refused one looked again a tick later, so an earlier list could
// wait until cascadeUrgent before its deadline.
func TestCascadeGateOrder(t *testing.T) {
	st, fc := shardedManual(t)
	late, early := &st.shards[0], &st.shards[1]
	const n = 10
	for range n {
		armOn(t, st, 0, 900*time.Millisecond, func() {}) // level 1, bucket expiring at 384ms
		armOn(t, st, 1, 700*time.Millisecond, func() {})
	}
	for late.turn() || early.turn() {
	}
	st.cascading.Store(st.cascaders) // every place taken
	fc.Add(450 * time.Millisecond)
	for late.turn() {
	}
	for early.turn() {
	}
	require.Zero(t, st.Stats().Cascaded, "a driver cascaded while the others held every place")
	st.cascading.Store(0) // the places are given back
	fc.Add(time.Millisecond)
	for late.turn() { // its wake-up ref, then the gate
	}
	require.Zero(t, st.Stats().Cascaded, "the driver whose list is due later did not step aside for the one due earlier")
	for early.turn() {
	}
	require.Equal(t, uint64(n), st.Stats().Cascaded, "the driver whose list is due first did not get in")
	fc.Add(time.Millisecond) // the later one looks again
	for late.turn() {
	}
	require.Equal(t, uint64(2*n), st.Stats().Cascaded, "the driver whose list is due later did not get in once the earlier was served")
	require.Zero(t, st.cascading.Load(), "a place was not given back")
}

// TestManyTimersSameInstant: a million timers due at one instant all fire,
// once each; the wheel is then empty.
func TestManyTimersSameInstant(t *testing.T) {
	n := 1_000_000
	if raceEnabled || testing.Short() {
		n = 200_000
	}
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		deadline := time.Now().Add(time.Second)
		var fired, early, late atomic.Int64
		var wg sync.WaitGroup
		wg.Add(n)
		cb := func() {
			switch now := time.Now(); {
			case now.Before(deadline):
				early.Add(1)
			case now.After(deadline.Add(time.Millisecond)):
				late.Add(1)
			}
			fired.Add(1)
			wg.Done()
		}
		for range n {
			_, err := st.AfterFunc(time.Until(deadline), cb)
			require.NoError(t, err)
		}
		wg.Wait()
		assert.Equal(t, int64(n), fired.Load())
		assert.Zero(t, early.Load())
		assert.Zero(t, late.Load())
		assert.Equal(t, 0, st.Len())
	})
}
