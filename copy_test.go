package timingwheel

import (
	"strings"
	"testing"
	"time"
)

// assign copies *src into *dst, as a program does when it assigns a struct
// that holds a Timer (go vet's copylocks check does not look through the
// type parameter, as it would not through a struct of the program's own
// built by reflection or by a generic helper).
func assign[T any](dst, src *T) { *dst = *src }

// copied checks the error of making orig, and returns a copy of *orig
// made by assign.
func copied[T any](t *testing.T, orig *T, err error) *T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	c := new(T)
	assign(c, orig)
	return c
}

// mustPanicCopy runs f and checks that it panics with a message that
// names the method and says the value is a copy.
func mustPanicCopy(t *testing.T, method string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		msg, _ := r.(string)
		if !strings.HasPrefix(msg, "timingwheel: "+method+" called on a copy") {
			t.Fatalf("%s on a copy: recovered %v, want a panic naming the copy", method, r)
		}
	}()
	f()
}

// TestCopiedTimerPanics: a bound Timer copied by value (its struct
// assigned to another variable) panics at the first Stop, Reset or
// TryReset of the copy, with a message that says so, and the original is
// untouched: before, both Stops returned true, the callback still ran, and
// Len went to -1.
func TestCopiedTimerPanics(t *testing.T) {
	type session struct {
		id      int
		timeout Timer
	}
	for _, state := range []string{"pending", "idle", "stopped"} {
		t.Run(state, func(t *testing.T) {
			fc := newFakeClock()
			st := newManual(t, fc)
			defer st.Stop()
			ran := 0
			a := session{id: 1}
			st.Bind(&a.timeout, func() { ran++ })
			switch state {
			case "pending":
				a.timeout.Reset(time.Second)
			case "stopped":
				a.timeout.Reset(time.Second)
				a.timeout.Stop()
			}
			var b session
			assign(&b, &a)
			if b.id != a.id {
				t.Fatalf("copy holds id %d, want %d", b.id, a.id)
			}
			mustPanicCopy(t, "Stop", func() { b.timeout.Stop() })
			mustPanicCopy(t, "Reset", func() { b.timeout.Reset(time.Minute) })
			mustPanicCopy(t, "TryReset", func() { _, _ = b.timeout.TryReset(time.Minute) })
			if got := a.timeout.Stop(); got != (state == "pending") {
				t.Fatalf("the original's Stop = %v", got)
			}
			fc.Add(time.Hour)
			st.step()
			if ran != 0 || st.Len() != 0 {
				t.Fatalf("after the original's Stop: %d runs, Len %d", ran, st.Len())
			}
		})
	}
}

// TestCopiedAfterFuncTimerPanics: the value behind AfterFunc's *Timer,
// copied, panics the same way.
func TestCopiedAfterFuncTimerPanics(t *testing.T) {
	st := newManual(t, newFakeClock())
	defer st.Stop()
	tm, err := st.AfterFunc(time.Second, noop)
	c := copied(t, tm, err)
	mustPanicCopy(t, "Stop", func() { c.Stop() })
	if !tm.Stop() {
		t.Fatal("the original's Stop returned false")
	}
}

// TestCopiedChanTimerPanics: a ChanTimer or Ticker copied by value panics
// at the copy's Stop and Reset.
func TestCopiedChanTimerPanics(t *testing.T) {
	st := newManual(t, newFakeClock())
	defer st.Stop()
	ct, err := st.NewTimer(time.Second)
	c := copied(t, ct, err)
	mustPanicCopy(t, "ChanTimer.Stop", func() { c.Stop() })
	mustPanicCopy(t, "ChanTimer.Reset", func() { c.Reset(time.Second) })
	if !ct.Stop() {
		t.Fatal("the original's Stop returned false")
	}
	tk, err := st.NewTicker(time.Second)
	k := copied(t, tk, err)
	mustPanicCopy(t, "Ticker.Stop", func() { k.Stop() })
	tk.Stop()
}

// TestCopyBeforeBindIsFine: copying a Timer before it is bound, or after
// the struct holding it was zeroed, is not misuse: the copy is bound where
// it lies.
func TestCopyBeforeBindIsFine(t *testing.T) {
	st := newManual(t, newFakeClock())
	defer st.Stop()
	var a, b Timer
	assign(&b, &a)
	st.Bind(&b, noop)
	b.Reset(time.Second)
	if !b.Stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
	b = Timer{}
	st.Bind(&b, noop)
	b.Reset(time.Second)
	if !b.Stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
}
