//go:build timingwheel_failpoints

package timingwheel

import (
	"context"
	"errors"
	"testing"
	"time"
)

// ctxTree is the tree of the context window tests: a standard cancelable
// parent P, a wheel context A made on it (P's cancel reaches A through
// AfterFunc), a wheel context B on A, a standard context S on A and a wheel
// context C on S (A's end reaches C through S). A is on the SystemTimer
// st, B and C on another, kin, with A's deadline: A's deadline and st's
// Stop end A alone, and B and C only through A.
type ctxTree struct {
	p       context.Context
	cancelP context.CancelCauseFunc
	a, b, s context.Context
	c       context.Context
	cancelA context.CancelFunc
	doneA   <-chan struct{} // A's Done, taken before anything ends
}

func newCtxTree(t *testing.T, st, kin *SystemTimer) *ctxTree {
	tr := &ctxTree{}
	tr.p, tr.cancelP = context.WithCancelCause(context.Background())
	tr.a, tr.cancelA = st.WithTimeout(tr.p, time.Hour)
	dl, _ := tr.a.Deadline()
	b, cancelB := kin.WithDeadline(tr.a, dl)
	s, cancelS := context.WithCancel(tr.a)
	c, cancelC := kin.WithDeadline(s, dl)
	tr.b, tr.s, tr.c = b, s, c
	for _, ctx := range []context.Context{b, c} {
		if _, ok := ctx.(*timerCtx); !ok {
			t.Fatalf("%v is not a wheel context", ctx)
		}
	}
	tr.doneA = tr.a.Done()
	t.Cleanup(func() {
		cancelC()
		cancelS()
		cancelB()
		tr.cancelA()
		tr.cancelP(nil)
	})
	return tr
}

// TestConcurrentWindowContextEndBeforeKids parks the goroutine that ends a
// wheel context A inside its end: after it has set A's reason (and, in the
// second window, canceled A's Done channel) but before it has ended the
// contexts derived from A. Every way of ending A is tried: its standard
// parent's cancel (through AfterFunc's goroutine), its deadline, its
// CancelFunc and SystemTimer.Stop. Readers then look at the tree in every
// order: whoever sees A ended, or whose parent's cancel has returned, must
// see every context derived from A ended too, with A's error, as under the
// context package, where a cancel ends the whole subtree before any reader
// can see it returned. Guards: a reader that finishes A's own end (its
// Done) but leaves its kids live, and a kid whose Err does not look at the
// ancestors that are still ending.
func TestConcurrentWindowContextEndBeforeKids(t *testing.T) {
	type reader struct {
		name string
		read func(t *testing.T, tr *ctxTree, want, cause error)
	}
	errOf := func(t *testing.T, name string, ctx context.Context, want error) {
		t.Helper()
		if err := ctx.Err(); !errors.Is(err, want) {
			t.Fatalf("%s.Err() = %v, want %v", name, err, want)
		}
	}
	readers := []reader{
		{"A then B", func(t *testing.T, tr *ctxTree, want, cause error) {
			errOf(t, "A", tr.a, want)
			errOf(t, "B", tr.b, want)
		}},
		{"B first", func(t *testing.T, tr *ctxTree, want, cause error) {
			errOf(t, "B", tr.b, want)
			errOf(t, "A", tr.a, want)
		}},
		{"C first", func(t *testing.T, tr *ctxTree, want, cause error) {
			errOf(t, "C", tr.c, want)
			errOf(t, "S", tr.s, want)
		}},
		{"Cause of B", func(t *testing.T, tr *ctxTree, want, cause error) {
			if got := context.Cause(tr.b); got != cause {
				t.Fatalf("context.Cause(B) = %v, want %v", got, cause)
			}
			errOf(t, "B", tr.b, want)
		}},
		{"Done of B", func(t *testing.T, tr *ctxTree, want, cause error) {
			select {
			case <-tr.b.Done():
			default:
				t.Fatal("B.Done() not closed")
			}
		}},
		{"A's Done, then B and C", func(t *testing.T, tr *ctxTree, want, cause error) {
			select {
			case <-tr.a.Done():
			default:
				t.Fatal("A.Done() not closed")
			}
			errOf(t, "B", tr.b, want)
			errOf(t, "C", tr.c, want)
		}},
	}
	type ender struct {
		name        string
		want, cause error
		end         func(st *SystemTimer, tr *ctxTree, fc *fakeClock)
	}
	enders := []ender{
		{"parent canceled", context.Canceled, errBoom, func(_ *SystemTimer, tr *ctxTree, _ *fakeClock) {
			tr.cancelP(errBoom)
		}},
		{"deadline", context.DeadlineExceeded, context.DeadlineExceeded, func(st *SystemTimer, _ *ctxTree, fc *fakeClock) {
			fc.Add(time.Hour + time.Second)
			go st.step()
		}},
		{"cancel", context.Canceled, context.Canceled, func(_ *SystemTimer, tr *ctxTree, _ *fakeClock) {
			go tr.cancelA()
		}},
		{"SystemTimer.Stop", context.Canceled, ErrStopped, func(st *SystemTimer, _ *ctxTree, _ *fakeClock) {
			go st.Stop()
		}},
	}
	for _, window := range []string{"ctxEnd:reasonSet", "ctxSettle:xClosed"} {
		for _, e := range enders {
			for _, r := range readers {
				t.Run(window+"/"+e.name+"/"+r.name, func(t *testing.T) {
					fc := newFakeClock()
					st, kin := newManual(t, fc), newManual(t, fc)
					stopAtEnd(t, st)
					stopAtEnd(t, kin)
					tr := newCtxTree(t, st, kin)
					// The first end parks: A's, whichever goroutine runs
					// it; B and C end only after A.
					p := armPark(t, window, 1)
					e.end(st, tr, fc)
					p.wait(t)
					if window == "ctxSettle:xClosed" {
						<-tr.doneA // the parked goroutine closed it
					}
					r.read(t, tr, e.want, e.cause)
					p.letGo()
				})
			}
		}
	}
}
