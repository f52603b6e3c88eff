package timingwheel

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// The time package's channel tests (tick_test.go, sleep_test.go), ported in
// our own words to channel timers made by a SystemTimer. They run in a
// synctest bubble, where time moves only when every goroutine is blocked,
// so "sleep 10ms" and "one tick late" are exact and nothing flakes: where
// the time package retries to ride out a slow builder, these check once.

// resettable is what a ChanTimer and a Ticker share in testChan: the
// Ticker's Stop and Reset return nothing, so tickerTimer keeps track.
type resettable interface {
	Stop() bool
	Reset(time.Duration) bool
}

type tickerTimer struct {
	*Ticker
	stopped bool
}

func (t *tickerTimer) Stop() bool {
	pending := !t.stopped
	t.stopped = true
	t.Ticker.Stop()
	return pending
}

func (t *tickerTimer) Reset(d time.Duration) bool {
	pending := !t.stopped
	t.stopped = false
	t.Ticker.Reset(d)
	return pending
}

// TestChan is the time package's TestChan in its synchronous mode (Go
// 1.23 and later): Stop and Reset of a timer or ticker pending, far off or
// imminent, with receivers blocked on C or not, and no stale value after
// either returns.
func TestChan(t *testing.T) {
	const far = 10000 * time.Second
	for _, c := range []struct {
		name string
		arm  func(t *testing.T, st *SystemTimer) (tim resettable, C <-chan time.Time, isTicker bool)
	}{
		{"Timer", func(t *testing.T, st *SystemTimer) (resettable, <-chan time.Time, bool) {
			tm, err := st.NewTimer(far)
			if err != nil {
				t.Fatal(err)
			}
			return tm, tm.C, false
		}},
		{"Ticker", func(t *testing.T, st *SystemTimer) (resettable, <-chan time.Time, bool) {
			tk, err := st.NewTicker(far)
			if err != nil {
				t.Fatal(err)
			}
			return &tickerTimer{Ticker: tk}, tk.C, true
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := mustNew(t)
				defer st.Stop()
				tim, C, isTicker := c.arm(t, st)
				testChan(t, tim, C, isTicker)
			})
		})
	}
}

func testChan(t *testing.T, tim resettable, C <-chan time.Time, isTicker bool) {
	const sched = 10 * time.Millisecond
	noTick := func() {
		t.Helper()
		synctest.Wait()
		select {
		case <-C:
			t.Errorf("extra tick")
		default:
		}
	}
	assertTick := func() {
		t.Helper()
		synctest.Wait()
		select {
		case <-C:
		default:
			t.Errorf("missing tick")
		}
	}
	notDone := func(done chan bool) {
		t.Helper()
		synctest.Wait()
		select {
		case <-done:
			t.Fatalf("early done")
		default:
		}
	}
	waitDone := func(done chan bool) {
		t.Helper()
		time.Sleep(sched)
		select {
		case <-done:
		default:
			t.Fatalf("never got done")
		}
	}

	// Stop and Reset of a timer far off.
	tim.Stop()
	noTick()
	tim.Reset(10000 * time.Second)
	noTick()

	// Reset to an instant: due within a tick.
	tim.Reset(1)
	time.Sleep(sched)
	assertTick()

	// Long enough that a ticker ticked again: Reset must take that tick
	// back, and nothing comes after.
	time.Sleep(sched)
	tim.Reset(10000 * time.Second)
	noTick()

	// Stop while a goroutine is blocked on C, then Reset far off and to
	// an instant.
	done := make(chan bool)
	go func() {
		<-C
		close(done)
	}()
	time.Sleep(sched)
	notDone(done)
	tim.Reset(20000 * time.Second)
	time.Sleep(sched)
	notDone(done)
	tim.Reset(1)
	waitDone(done)
	if isTicker {
		assertTick() // 1ns apart: one is there by now, the rest dropped
	} else {
		noTick()
	}
	tim.Stop()
	noTick()

	// Two goroutines selecting on C: one value reaches one of them.
	tim.Reset(10000 * time.Second)
	done = make(chan bool, 2)
	done1, done2 := make(chan bool), make(chan bool)
	stop := make(chan bool)
	for _, d := range []chan bool{done1, done2} {
		go func() {
			select {
			case <-C:
				done <- true
			case <-stop:
			}
			close(d)
		}()
	}
	time.Sleep(sched)
	notDone(done)
	tim.Reset(sched / 2)
	time.Sleep(sched)
	waitDone(done)
	tim.Stop()
	close(stop)
	waitDone(done1)
	waitDone(done2)
	if isTicker {
		select { // a second tick may have reached the other goroutine
		case <-done:
		default:
		}
	}
	notDone(done)

	// Receivers blocked on a stopped timer get nothing.
	stop = make(chan bool)
	done = make(chan bool, 2)
	for range 2 {
		go func() {
			select {
			case <-C:
				t.Error("a value from a stopped timer")
			case <-stop:
			}
			done <- true
		}()
	}
	time.Sleep(sched)
	close(stop)
	waitDone(done)
	waitDone(done)

	// Stop and Reset keep old values from being received, and report a
	// value delivered and not received as pending (go.dev/issue/37196).
	tim.Reset(1)
	time.Sleep(sched)
	if pending := tim.Stop(); !pending {
		t.Errorf("Stop with a value not received = false, want true")
	}
	noTick()
	tim.Reset(time.Hour)
	noTick()
	if pending := tim.Reset(1); !pending {
		t.Errorf("Reset of a pending timer = false, want true")
	}
	time.Sleep(sched)
	assertTick()
	time.Sleep(sched)
	if isTicker {
		assertTick()
		time.Sleep(sched)
	} else {
		noTick()
	}
	if pending := tim.Reset(time.Hour); pending != isTicker {
		t.Errorf("Reset after the value was received = %v, want %v", pending, isTicker)
	}
	noTick()
}

// TestChanLenCap pins a documented difference: C has a buffer of one value,
// where the runtime's timer channel reports len and cap 0.
func TestChanLenCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		tm, err := st.NewTimer(time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if l, c := len(tm.C), cap(tm.C); l != 1 || c != 1 {
			t.Fatalf("len, cap of a fired ChanTimer's C = %d, %d; want 1, 1 (see NewTimer)", l, c)
		}
	})
}

// TestAfterTimes and TestTickTimes: the value is the time the timer was
// due, not the time it was sent or received.
func TestAfterTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		start := time.Now()
		c := st.After(10 * time.Millisecond)
		time.Sleep(500 * time.Millisecond)
		if dt := (<-c).Sub(start); dt != 10*time.Millisecond {
			t.Fatalf("After(10ms) read 500ms later gave start+%v, want start+10ms", dt)
		}
	})
}

func TestTickTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		start := time.Now()
		tk, err := st.NewTicker(10 * time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer tk.Stop()
		time.Sleep(505 * time.Millisecond) // not 500: a tick due as the sleep ends may come either side of it
		// The first tick waited in C; the 49 after it were dropped.
		if dt := (<-tk.C).Sub(start); dt != 10*time.Millisecond {
			t.Fatalf("first tick read 505ms later gave start+%v, want start+10ms", dt)
		}
		synctest.Wait()
		select {
		case v := <-tk.C:
			t.Fatalf("a second tick (start+%v) was queued", v.Sub(start))
		default:
		}
		// The series keeps its schedule: the next tick is at 510ms.
		if dt := (<-tk.C).Sub(start); dt != 510*time.Millisecond {
			t.Fatalf("next tick at start+%v, want start+510ms", dt)
		}
		if now := time.Since(start); now < 510*time.Millisecond || now > 511*time.Millisecond {
			t.Fatalf("the tick due at 510ms came at %v: early, or more than a tick late", now)
		}
		if st.Tick(0) != nil || st.Tick(-1) != nil {
			t.Fatal("Tick(d <= 0) is not nil")
		}
	})
}

// TestAfterTick: ten Afters in a row take ten delays, each at most a tick
// late.
func TestAfterTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		const delta = 10 * time.Millisecond
		t0 := time.Now()
		for range 10 {
			<-st.After(delta)
		}
		if d := time.Since(t0); d < 10*delta || d > 10*(delta+time.Duration(st.tick)) {
			t.Fatalf("10 Afters of %v took %v", delta, d)
		}
	})
}

// TestAfterStop: stopped timers, channel and func, do not fire; After does.
func TestAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		if _, err := st.AfterFunc(100*time.Millisecond, func() {}); err != nil {
			t.Fatal(err)
		}
		t0, err := st.NewTimer(50 * time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		c1 := make(chan bool, 1)
		t1, err := st.AfterFunc(150*time.Millisecond, func() { c1 <- true })
		if err != nil {
			t.Fatal(err)
		}
		c2 := st.After(200 * time.Millisecond)
		if !t0.Stop() {
			t.Fatal("failed to stop event 0")
		}
		if !t1.Stop() {
			t.Fatal("failed to stop event 1")
		}
		<-c2
		synctest.Wait()
		select {
		case <-t0.C:
			t.Fatal("event 0 was not stopped")
		case <-c1:
			t.Fatal("event 1 was not stopped")
		default:
		}
		if t0.Stop() || t1.Stop() {
			t.Fatal("Stop returned true twice")
		}
	})
}

// TestAfterQueuing: Afters of different delays deliver in the order of
// their delays, each at its time.
func TestAfterQueuing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		afterQueuing(t, st.After, func(t *testing.T, _ int, got, want time.Duration) {
			if got != want {
				t.Errorf("After(%v) delivered start+%v", want, got)
			}
		})
	})
}

// afterQueuing is the time package's TestAfterQueuing, in a synctest
// bubble: it arms timers with after in a scrambled order of delays, and
// checks that they deliver in the order of their delays; check judges when
// each delivered (got, since the arming) against its delay (want).
func afterQueuing(t *testing.T, after func(time.Duration) <-chan time.Time, check func(t *testing.T, slot int, got, want time.Duration)) {
	t.Helper()
	slots := []int{5, 3, 6, 6, 6, 1, 1, 2, 7, 9, 4, 8, 0}
	const delta = 20 * time.Millisecond
	type result struct {
		slot int
		at   time.Time
	}
	results := make(chan result, len(slots))
	start := time.Now()
	for _, slot := range slots {
		c := after(time.Duration(slot) * delta)
		go func() { results <- result{slot, <-c} }()
	}
	last := -1
	for range slots {
		r := <-results
		if r.slot < last {
			t.Errorf("slot %d delivered after slot %d", r.slot, last)
		}
		last = r.slot
		check(t, r.slot, r.at.Sub(start), time.Duration(r.slot)*delta)
	}
}

// TestChanZeroValues: a ChanTimer not made by NewTimer panics, as a
// time.Timer not made by the time package does; a zero Ticker's Stop does
// nothing and its Reset panics, as time.Ticker's (TestManualTicker).
func TestChanZeroValues(t *testing.T) {
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			t.Helper()
			r := recover()
			if s, ok := r.(string); !ok || !strings.HasPrefix(s, "timingwheel: ") {
				t.Errorf("%s: panic %v, want a timingwheel: message", what, r)
			}
		}()
		f()
	}
	var zt ChanTimer
	mustPanic("zero ChanTimer Stop", func() { zt.Stop() })
	mustPanic("zero ChanTimer Reset", func() { zt.Reset(time.Second) })
	mustPanic("zero ChanTimer TryReset", func() { _, _ = zt.TryReset(time.Second) })
	tk := &Ticker{C: make(chan time.Time)}
	tk.Stop() // does nothing, as time.Ticker's (go.dev/issue/21874)
	mustPanic("zero Ticker Reset", func() { tk.Reset(time.Second) })

	st := mustNew(t)
	defer st.Stop()
	mustPanic("NewTicker(0)", func() { _, _ = st.NewTicker(0) })
	mustPanic("NewTicker(-1)", func() { _, _ = st.NewTicker(-1) })
	tk, err := st.NewTicker(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	mustPanic("Ticker.Reset(0)", func() { tk.Reset(0) })
	mustPanic("Ticker.Reset(-1)", func() { tk.Reset(-1) })
	tk.Stop()
}

// TestNewTimerZero: a timer of d <= 0 has its value there at once.
func TestNewTimerZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		for _, d := range []time.Duration{0, -1, -time.Hour} {
			start := time.Now()
			tm, err := st.NewTimer(d)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case v := <-tm.C:
				if !v.Equal(start) { // the time package sends the call's time for d <= 0
					t.Errorf("NewTimer(%v) delivered start+%v, want start", d, v.Sub(start))
				}
			default:
				t.Errorf("NewTimer(%v): no value at once", d)
			}
			if tm.Stop() {
				t.Errorf("NewTimer(%v): Stop after the value was received = true", d)
			}
			tm.Reset(0)
			if tm.Stop() != true {
				t.Errorf("NewTimer(%v): Stop with Reset(0)'s value not received = false", d)
			}
			synctest.Wait()
			if len(tm.C) != 0 {
				t.Errorf("NewTimer(%v): a value after Stop", d)
			}
		}
	})
}

// TestChanOutliveStop: channel timers outlive their SystemTimer, as the
// time package's never stop. Those pending at SystemTimer.Stop deliver at
// their deadlines, a Ticker ticking goes on on its schedule, and NewTimer,
// NewTicker, After, Tick and the Resets after Stop work, with the same
// semantics (no stale value, the due time as the value); SystemTimer.Stop
// returns none of them.
func TestChanOutliveStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		start := time.Now()
		tm, err := st.NewTimer(time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tk, err := st.NewTicker(10 * time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if v := <-tk.C; v.Sub(start) != 10*time.Millisecond {
			t.Fatalf("first tick at start+%v", v.Sub(start))
		}
		stopped, err := st.NewTimer(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		stopped.Stop()
		f, err := st.AfterFunc(time.Hour, func() {})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		if left := st.Stop(); len(left) != 1 || left[0] != f {
			t.Fatalf("Stop returned %d timers, want the AfterFunc's alone", len(left))
		}
		// The ticker goes on, on its schedule: 20ms, 30ms.
		for _, want := range []time.Duration{20 * time.Millisecond, 30 * time.Millisecond} {
			if v := <-tk.C; v.Sub(start) != want {
				t.Fatalf("tick after SystemTimer.Stop at start+%v, want start+%v", v.Sub(start), want)
			}
			if now := time.Since(start); now != want {
				t.Fatalf("tick due at %v received at %v", want, now)
			}
		}
		tk.Reset(time.Second) // a new period, after Stop
		at := time.Since(start)
		if v := <-tk.C; v.Sub(start) != at+time.Second {
			t.Fatalf("tick after Reset(1s) at start+%v, want start+%v", v.Sub(start), at+time.Second)
		}
		tk.Stop()
		// The timer pending at Stop delivers at its deadline.
		if v := <-tm.C; v.Sub(start) != time.Hour || time.Since(start) != time.Hour {
			t.Fatalf("timer of an hour delivered start+%v at start+%v", v.Sub(start), time.Since(start))
		}
		// New ones, and Resets, work.
		made := time.Now()
		tm2, err := st.NewTimer(time.Second)
		if err != nil {
			t.Fatalf("NewTimer after Stop: %v", err)
		}
		if was, err := tm.TryReset(2 * time.Second); was || err != nil {
			t.Fatalf("TryReset of a fired timer after Stop = %v, %v", was, err)
		}
		if !tm.Stop() {
			t.Fatal("Stop of a pending timer after SystemTimer.Stop = false")
		}
		tm.Reset(0)
		if !tm.Reset(time.Minute) { // Reset(0)'s value was there: taken back
			t.Fatal("Reset with a value not received = false")
		}
		synctest.Wait()
		if len(tm.C) != 0 {
			t.Fatal("a stale value after Reset")
		}
		if v := <-tm2.C; v.Sub(made) != time.Second || time.Since(made) != time.Second {
			t.Fatalf("NewTimer(1s) after Stop delivered made+%v at made+%v", v.Sub(made), time.Since(made))
		}
		if v := <-tm.C; v.Sub(made) != time.Minute {
			t.Fatalf("the timer reset to a minute delivered made+%v", v.Sub(made))
		}
		now := time.Now()
		if v := <-st.After(time.Second); v.Sub(now) != time.Second {
			t.Fatalf("After(1s) after Stop delivered now+%v", v.Sub(now))
		}
		tk2 := st.Tick(time.Second)
		if v := <-tk2; v.Sub(now) != 2*time.Second {
			t.Fatalf("Tick(1s) after Stop ticked at now+%v", v.Sub(now))
		}
		synctest.Wait()
		if len(stopped.C) != 0 {
			t.Fatal("a timer stopped before SystemTimer.Stop delivered")
		}
	})
}

// TestTickerMaxPending: a Ticker holds one place in WithMaxPending's bound
// from NewTicker to Stop, ticks or not, and is never refused a tick.
func TestTickerMaxPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithMaxPending(2))
		defer st.Stop()
		tk, err := st.NewTicker(10 * time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		tm, err := st.NewTimer(time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			<-tk.C // each tick re-arms it: the bound must not refuse it
		}
		if _, err := st.NewTimer(time.Hour); !errors.Is(err, ErrTooManyPending) {
			t.Fatalf("third timer under a bound of 2: %v", err)
		}
		if _, err := st.NewTicker(time.Hour); !errors.Is(err, ErrTooManyPending) {
			t.Fatalf("second ticker under a bound of 2: %v", err)
		}
		tk.Stop()
		if n := st.placesHeld(); n != 1 {
			t.Fatalf("count after the Ticker's Stop = %d, want 1", n)
		}
		tm2, err := st.NewTimer(time.Hour)
		if err != nil {
			t.Fatalf("a place freed by Ticker.Stop: %v", err)
		}
		if err := tk.TryReset(time.Second); !errors.Is(err, ErrTooManyPending) {
			t.Fatalf("Ticker.TryReset with the bound reached: %v", err)
		}
		tm2.Stop()
		if err := tk.TryReset(time.Second); err != nil {
			t.Fatalf("Ticker.TryReset with a place free: %v", err)
		}
		<-tk.C
		tk.Stop()
		tm.Stop()
		if n := st.placesHeld(); n != 0 {
			t.Fatalf("count after every Stop = %d", n)
		}
	})
}

// TestTimerGC is what of the time package's TestTimerGC applies: a
// ChanTimer or Ticker that was stopped, or whose value was received, is
// not kept by the SystemTimer: the garbage collector collects it. (An
// unstopped one that has not fired is kept until it fires: see NewTimer.)
func TestTimerGC(t *testing.T) {
	st := mustNew(t)
	defer st.Stop()
	collected := make(chan string, 4)
	func() {
		tm, err := st.NewTimer(time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tm.Stop()
		runtime.AddCleanup(tm, func(s string) { collected <- s }, "stopped timer")
		tk, err := st.NewTicker(time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tk.Stop()
		runtime.AddCleanup(tk, func(s string) { collected <- s }, "stopped ticker")
		fired, err := st.NewTimer(time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		<-fired.C
		runtime.AddCleanup(fired, func(s string) { collected <- s }, "received timer")
	}()
	got := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < 3 && time.Now().Before(deadline) {
		runtime.GC()
		select {
		case s := <-collected:
			got[s] = true
		default: // cleanups run on a goroutine of their own after the cycle
			runtime.Gosched()
		}
	}
	if len(got) != 3 {
		t.Fatalf("collected %v; want the stopped timer, the stopped ticker and the received timer", got)
	}
}

// TestAfterKeepsPending pins the other side of that difference: an After
// nobody receives from stays pending until it fires.
func TestAfterKeepsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		for range 100 {
			st.After(time.Second)
		}
		if n := st.Len(); n != 100 {
			t.Fatalf("Len after 100 unreceived Afters = %d, want 100 (the wheel keeps them)", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := st.Len(); n != 0 {
			t.Fatalf("Len after they fired = %d", n)
		}
	})
}

// TestChanAllocs pins the allocations: NewTimer+Stop at or below
// time.NewTimer+Stop, Reset and Stop of either kind none.
func TestChanAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	st := mustNew(t)
	defer st.Stop()
	runtimeNew := testing.AllocsPerRun(1000, func() { time.NewTimer(time.Hour).Stop() })
	wheelNew := testing.AllocsPerRun(1000, func() {
		tm, _ := st.NewTimer(time.Hour)
		tm.Stop()
	})
	if wheelNew > runtimeNew {
		t.Errorf("NewTimer+Stop allocates %v times, time.NewTimer+Stop %v", wheelNew, runtimeNew)
	}
	tm, _ := st.NewTimer(time.Hour)
	if a := testing.AllocsPerRun(1000, func() { tm.Reset(time.Hour); tm.Stop() }); a != 0 {
		t.Errorf("ChanTimer Reset+Stop allocates %v times", a)
	}
	tk, _ := st.NewTicker(time.Hour)
	if a := testing.AllocsPerRun(1000, func() { tk.Reset(time.Hour); tk.Stop() }); a != 0 {
		t.Errorf("Ticker Reset+Stop allocates %v times", a)
	}
	t.Logf("NewTimer+Stop: %v allocs, time.NewTimer+Stop: %v", wheelNew, runtimeNew)
}

// TestChanKick: a run that comes while the timer is busy (held by a Stop,
// a Reset or another run) does not wait and does not deliver: it leaves a
// kick, and the holder, leaving busy, delivers if the deadline has passed.
// Without that a run is lost (a one-shot timer never delivers, a Ticker's
// series ends). Driven by hand: the holder here is the test.
func TestChanKick(t *testing.T) {
	for _, ticker := range []bool{false, true} {
		t.Run(fmt.Sprintf("ticker=%v", ticker), func(t *testing.T) {
			st := mustNew(t)
			defer st.Stop()
			var ct *chanTimer
			var c <-chan time.Time
			if ticker {
				tk, err := st.NewTicker(time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				ct, c = &tk.ct, tk.C
			} else {
				tm, err := st.NewTimer(time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				ct, c = &tm.ct, tm.C
			}
			_, gen := ct.take("test")
			due := st.now() - 1
			ct.when.Store(due)
			ct.fire() // a run, while busy
			if s := ct.s.Load(); s&chanKick == 0 || len(c) != 0 {
				t.Fatalf("a run on a busy timer: state %#x, %d values; want a kick and none", s, len(c))
			}
			ct.release(gen, chanArmed)
			if len(c) != 1 {
				t.Fatalf("the holder left busy with a kick and a passed deadline: %d values, want 1", len(c))
			}
			if v := <-c; !v.Equal(st.epoch.Add(time.Duration(due))) {
				t.Fatalf("delivered %v, want the deadline", v)
			}
			want := chanIdle
			if ticker {
				want = chanArmed // and the next tick armed
				if w := ct.when.Load(); w <= due {
					t.Fatalf("the next tick is at %d, not after %d", w, due)
				}
			}
			if s := ct.s.Load(); s&chanPhase != want || s&chanKick != 0 {
				t.Fatalf("state after release %#x, want phase %d", s, want)
			}
		})
	}
}

// TestChanStaleRun: a run handed to the executor for an arming that a
// Reset has since replaced by a later one must not deliver: the value
// would come before the new deadline.
func TestChanStaleRun(t *testing.T) {
	st := mustNew(t)
	defer st.Stop()
	tm, err := st.NewTimer(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tm.Reset(time.Hour)
	tm.ct.fire() // the run of the first arming, come late
	if len(tm.C) != 0 {
		t.Fatal("a stale run delivered an hour early")
	}
	tm.Stop()
	tm.ct.fire() // a run after Stop
	if len(tm.C) != 0 {
		t.Fatal("a run after Stop delivered")
	}
}

// TestStopWhileCallbackWaitsForAQueuedRun: a callback waits on a channel
// timer of the same SystemTimer whose run is due and handed to the
// executor, queued behind the callback itself (one worker), when
// SystemTimer.Stop runs, before the executor's watch finds the callback
// stuck. Stop takes the run back from the executor; it must hand the
// channel timer over (its value delivered) before it waits for the
// callback, or both wait for ever. The channel timer is due with another
// callback, in one bucket of one shard: the driver hands such a bucket to
// the executor whole (it delivers itself only buckets of channel timers).
func TestStopWhileCallbackWaitsForAQueuedRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithWorkers(1), WithTick(time.Millisecond))
		sh0 := &st.shards[0]
		st.placeHook = func() *shard { return sh0 }
		waiting := make(chan struct{})
		got := make(chan bool, 1)
		if _, err := st.AfterFunc(0, func() {
			_, err := st.AfterFunc(time.Millisecond, func() {})
			if err != nil {
				t.Error(err)
				return
			}
			tm, err := st.NewTimer(time.Millisecond)
			if err != nil {
				t.Error(err)
				return
			}
			close(waiting)
			_, ok := <-tm.C
			got <- ok
		}); err != nil {
			t.Fatal(err)
		}
		<-waiting
		// The channel timer is due at 1ms: its run is then queued behind
		// the callback, and the watch looks a quarter of the stall delay
		// (1ms) after it was queued. Stop in between.
		time.Sleep(time.Millisecond + time.Microsecond)
		if backlog, _, _ := st.pool.Load(); backlog != 2 {
			t.Fatalf("backlog %d, want the channel timer's run queued, and the other callback's", backlog)
		}
		st.Stop()
		if !<-got {
			t.Fatal("the channel timer's channel was closed")
		}
	})
}

// TestStopWhileCallbackWaits: SystemTimer.Stop waits for the callbacks
// that run, and one of them waits on a channel timer, or a context, of the
// same SystemTimer. Stop must hand these over (a clock's timer for the
// channel timer, cancellation for the context) before it waits, or it
// waits for ever: a Sleep in a callback, and a shutdown, were enough.
func TestStopWhileCallbackWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		waiting := make(chan struct{}, 2)
		var slept time.Duration
		var ctxErr, ctxCause error
		if _, err := st.AfterFunc(0, func() {
			tm, err := st.NewTimer(time.Hour)
			if err != nil {
				t.Error(err)
				return
			}
			start := time.Now()
			waiting <- struct{}{}
			<-tm.C
			slept = time.Since(start)
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AfterFunc(0, func() {
			ctx, cancel := st.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			waiting <- struct{}{}
			<-ctx.Done()
			ctxErr, ctxCause = ctx.Err(), context.Cause(ctx)
		}); err != nil {
			t.Fatal(err)
		}
		<-waiting
		<-waiting
		start := time.Now()
		st.Stop()
		if slept != time.Hour {
			t.Errorf("the callback's timer of an hour delivered after %v", slept)
		}
		if el := time.Since(start); el != time.Hour {
			t.Errorf("Stop returned after %v, want the hour the callback waited", el)
		}
		if ctxErr != context.Canceled || ctxCause != ErrStopped {
			t.Errorf("the callback's context ended with %v, cause %v; want Canceled, ErrStopped", ctxErr, ctxCause)
		}
	})
}

// TestTickerMaxPendingAfterStop: once the SystemTimer is stopped, a Ticker
// runs on a timer of the clock, not on the wheel (see NewTimer), and takes
// no place in WithMaxPending's bound: not an orphaned Ticker's Reset, nor a
// Ticker made after Stop, or stopped before it and reset after. One that
// took a place would keep it until its own Stop: the stopped SystemTimer's
// count would say a timer is pending when none is (Len is 0), and
// NewTicker would refuse a Ticker that runs on the runtime's timers with
// ErrTooManyPending.
func TestTickerMaxPendingAfterStop(t *testing.T) {
	st := mustNew(t, WithMaxPending(1))
	st.Stop()
	a, err := st.NewTicker(time.Hour)
	if err != nil {
		t.Fatalf("first NewTicker after Stop: %v", err)
	}
	defer a.Stop()
	if n := st.placesHeld(); n != 0 {
		t.Errorf("WithMaxPending's count is %d after Stop with no timer on the wheel (Len %d)", n, st.Len())
	}
	b, err := st.NewTicker(time.Hour)
	if err != nil {
		t.Fatalf("second NewTicker after Stop: %v; the Ticker would run on the clock's timer, not the wheel", err)
	}
	b.Stop()
}
