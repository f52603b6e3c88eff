package timingwheel

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// bubbleDefault makes a SystemTimer in the calling synctest bubble and has
// the package-level functions use it until the test ends; then the
// previous default is back and this one is stopped. A default made outside
// the bubble could not be used inside it: its goroutines would send on the
// bubble's channels from outside, which the runtime forbids; and one made
// inside by first use would outlive the bubble, which synctest reports.
func bubbleDefault(t *testing.T) *SystemTimer {
	t.Helper()
	st := mustNew(t)
	defaultTimer.mu.Lock()
	old := defaultTimer.st.Swap(st)
	defaultTimer.mu.Unlock()
	t.Cleanup(func() {
		defaultTimer.mu.Lock()
		defaultTimer.st.Store(old)
		defaultTimer.mu.Unlock()
		st.Stop()
	})
	return st
}

// mustPanic runs f and returns the string it panicked with, failing the
// test if it did not panic or the value does not start with prefix.
func mustPanic(t *testing.T, prefix string, f func()) (msg string) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		s, _ := r.(string)
		if r == nil || !strings.HasPrefix(s, prefix) {
			t.Errorf("panic value %v, want a string starting %q", r, prefix)
		}
		msg = s
	}()
	f()
	return ""
}

// TestDefaultMadeOnce: goroutines that ask for the default at once, before
// it exists, all get the one SystemTimer, and later calls get it too.
func TestDefaultMadeOnce(t *testing.T) {
	stopDefault() // not made yet, whatever ran before
	start := make(chan struct{})
	got := make([]*SystemTimer, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			<-start
			got[i] = Default()
		})
	}
	close(start)
	wg.Wait()
	for i, st := range got {
		if st == nil || st != got[0] {
			t.Fatalf("goroutine %d got %p, goroutine 0 got %p", i, st, got[0])
		}
	}
	if Default() != got[0] {
		t.Fatal("a later Default returned another SystemTimer")
	}
}

// TestDefaultStopPanics: the default cannot be stopped by accident, by any
// package of the program; the panic names the fix, and the default goes on
// running timers afterwards.
func TestDefaultStopPanics(t *testing.T) {
	st := Default()
	msg := mustPanic(t, "timingwheel: Stop called on the default SystemTimer", func() { st.Stop() })
	if !strings.Contains(msg, "New") {
		t.Errorf("the panic %q does not say to make one with New", msg)
	}
	done := make(chan struct{})
	AfterFunc(time.Millisecond, func() { close(done) })
	<-done
	ctx, cancel := WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if err := ctx.Err(); err != context.DeadlineExceeded {
		t.Fatalf("after the refused Stop, a context ended with %v, want DeadlineExceeded", err)
	}
	// A SystemTimer of one's own stops as ever.
	own := mustNew(t)
	own.Stop()
}

// TestDefaultRealClock runs the package-level functions on the real
// default, on the real clock: never early (a guarantee, so the bounds below
// cannot flake), and each kind of timer gets to its end.
func TestDefaultRealClock(t *testing.T) {
	const d = 20 * time.Millisecond
	start := time.Now()
	v := <-After(d)
	if el := time.Since(start); el < d || v.Sub(start) < d {
		t.Errorf("After(%v) delivered %v after %v, the value %v after the start", d, v, el, v.Sub(start))
	}

	start = time.Now()
	Sleep(d)
	if el := time.Since(start); el < d {
		t.Errorf("Sleep(%v) returned after %v", d, el)
	}

	ran := make(chan time.Duration, 1)
	start = time.Now()
	tm := AfterFunc(d, func() { ran <- time.Since(start) })
	if el := <-ran; el < d {
		t.Errorf("AfterFunc(%v) ran after %v", d, el)
	}
	if tm.Stop() {
		t.Error("Stop of an AfterFunc timer that ran reported true")
	}

	tk := NewTicker(d)
	start = time.Now()
	<-tk.C
	<-tk.C
	tk.Stop()
	if el := time.Since(start); el < 2*d {
		t.Errorf("two ticks of %v came in %v", d, el)
	}

	// start before the call, as above: the deadline is read inside it, so
	// it is at least start+d however long the call takes. (Read after
	// the call, with a millisecond allowed, start was once 4ms late under
	// load on 2 cores, and the test saw a context done "early".)
	start = time.Now()
	ctx, cancel := WithTimeoutCause(context.Background(), d, errSlow)
	defer cancel()
	<-ctx.Done()
	if dl, _ := ctx.Deadline(); time.Now().Before(dl) {
		t.Errorf("WithTimeout(%v) was done %v before its deadline", d, time.Until(dl))
	}
	if el := time.Since(start); el < d {
		t.Errorf("WithTimeout(%v) was done after %v", d, el)
	}
	if ctx.Err() != context.DeadlineExceeded || context.Cause(ctx) != errSlow {
		t.Errorf("Err %v, Cause %v; want DeadlineExceeded and %v", ctx.Err(), context.Cause(ctx), errSlow)
	}
}

var errSlow = errors.New("too slow")

// TestDefaultMisuse: the package-level functions panic where the time
// package's do, and where it would crash later (a nil func).
func TestDefaultMisuse(t *testing.T) {
	mustPanic(t, "timingwheel: AfterFunc: nil func", func() { AfterFunc(time.Hour, nil) })
	mustPanic(t, "timingwheel: non-positive interval for NewTicker", func() { NewTicker(0) })
	mustPanic(t, "timingwheel: non-positive interval for NewTicker", func() { NewTicker(-1) })
	tk := NewTicker(time.Hour)
	mustPanic(t, "timingwheel: non-positive interval for Ticker.Reset", func() { tk.Reset(0) })
	tk.Stop()
	if c := Tick(0); c != nil {
		t.Error("Tick(0) is not nil")
	}
	if c := Tick(-1); c != nil {
		t.Error("Tick(-1) is not nil")
	}
	mustPanic(t, "timingwheel: WithDeadline: nil parent context", func() {
		//lint:ignore SA1012 the nil parent is the point
		WithTimeout(nil, time.Second)
	})
	// The errors the default cannot return would panic, naming the error.
	msg := mustPanic(t, "timingwheel: NewTimer on the default SystemTimer", func() { mustArm("NewTimer", ErrStopped) })
	if !strings.Contains(msg, ErrStopped.Error()) {
		t.Errorf("the panic %q does not name the error", msg)
	}
	mustArm("NewTimer", nil) // no error: no panic
}
