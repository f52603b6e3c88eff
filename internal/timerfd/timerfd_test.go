//go:build linux && !faketime

package timerfd

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// liveness bounds how long a test waits for a signal that must come; it
// is not a measure of promptness.
const liveness = 10 * time.Second

func wait(t *testing.T, w *Waker) {
	t.Helper()
	select {
	case <-w.C:
	case <-time.After(liveness):
		t.Fatal("no signal")
	}
}

// TestNeverEarly: the signal never comes before d has passed since Arm was
// called, measured on the clock time.Since reads.
func TestNeverEarly(t *testing.T) {
	w := New()
	defer w.Close()
	for i := range 50 {
		d := time.Duration(i%5+1) * 200 * time.Microsecond
		start := time.Now()
		w.Arm(d)
		wait(t, w)
		if got := time.Since(start); got < d {
			t.Fatalf("armed for %v, signaled after %v", d, got)
		}
	}
}

// TestArmReplaces: a later Arm cancels the one before, whichever is sooner.
func TestArmReplaces(t *testing.T) {
	w := New()
	defer w.Close()
	w.Arm(time.Hour)
	w.Arm(time.Millisecond)
	wait(t, w) // the hour was replaced, or this waits out liveness

	start := time.Now()
	w.Arm(50 * time.Millisecond)
	w.Arm(time.Hour)
	if time.Since(start) >= 50*time.Millisecond {
		t.Skip("the machine took 50ms between two calls: the first arming may have fired")
	}
	// Had the first arming stayed, its signal would be due long before
	// the wait ends; a late reader can only make the test pass.
	time.Sleep(150 * time.Millisecond) // not a sync point: waiting for nothing to happen
	select {
	case <-w.C:
		t.Fatal("signaled for an arming that was replaced")
	default:
	}
}

// TestArmAtOnce: d <= 0 signals as soon as the goroutine reads.
func TestArmAtOnce(t *testing.T) {
	w := New()
	defer w.Close()
	w.Arm(0)
	wait(t, w)
	w.Arm(-time.Second)
	wait(t, w)
}

// TestCloseEndsTheGoroutine: Close returns after the reader has, armed or
// not (goleak checks the rest at exit).
func TestCloseEndsTheGoroutine(t *testing.T) {
	for _, armed := range []bool{false, true} {
		w := New()
		if armed {
			w.Arm(time.Hour)
		}
		w.Close()
		select {
		case <-w.done:
		default:
			t.Fatal("Close returned before the reading goroutine")
		}
	}
}
