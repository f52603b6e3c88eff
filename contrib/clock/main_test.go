package twclock_test

import (
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/internal/defaulttimer"
	"go.uber.org/goleak"
)

// The tests drive each adapter through its library's interface, as code
// written against that library does. Most run in a synctest bubble, where
// time moves only when every goroutine is blocked: "10ms later" is exact,
// and a receive that never comes fails at the bubble's deadlock, or at
// the 10s bound of recv, at once. One test per adapter runs on the real
// clock, with the same bound.

// The default SystemTimer (NewK8s(nil), NewClockwork(nil)) never stops in
// a program: it is stopped after the tests, so that goleak reports only
// real leaks.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(defaulttimer.Main(m))
}

// tick is the wheel's tick (timingwheel's default): a timer delivers in
// [deadline, deadline+tick].
const tick = time.Millisecond

// wait bounds every receive the tests wait for.
const wait = 10 * time.Second

// newWheel returns a SystemTimer that is stopped when the test ends.
func newWheel(t *testing.T, opts ...timingwheel.Option) *timingwheel.SystemTimer {
	t.Helper()
	st, err := timingwheel.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Stop() })
	return st
}

// recv receives from c, failing the test if nothing comes within wait.
func recv(t *testing.T, what string, c <-chan time.Time) time.Time {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(wait):
		t.Fatalf("%s: nothing received in %v", what, wait)
		return time.Time{}
	}
}

// empty fails the test if c holds a value.
func empty(t *testing.T, what string, c <-chan time.Time) {
	t.Helper()
	select {
	case v := <-c:
		t.Fatalf("%s: received %v, want nothing", what, v)
	default:
	}
}

// ran fails the test if done is not closed within wait.
func ran(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("%s: the function did not run in %v", what, wait)
	}
}

// notRan fails the test if done is closed.
func notRan(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
		t.Fatalf("%s: the function ran", what)
	default:
	}
}

// due receives from c (as recv) and fails the test unless the value is
// at, and now within a tick of, start+d: a timer's value is the time it
// was due, delivered never early and at most a tick late.
func due(t *testing.T, what string, c <-chan time.Time, start time.Time, d time.Duration) {
	t.Helper()
	v := recv(t, what, c)
	if got := v.Sub(start); got != d {
		t.Errorf("%s: value is start+%v, want start+%v", what, got, d)
	}
	if late := time.Since(start) - d; late < 0 || late > tick {
		t.Errorf("%s: received at start+%v, want [%v, %v]", what, time.Since(start), d, d+tick)
	}
}

// mustPanic fails the test unless f panics.
func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}
