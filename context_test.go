package timingwheel

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errBoom = errors.New("boom")

// ---- 11. contexts behave like the standard library's ----

func TestWithTimeoutExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		time.Sleep(time.Millisecond / 3)
		deadline := time.Now().Add(250 * time.Millisecond)
		ctx, cancel := st.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		dl, ok := ctx.Deadline()
		assert.True(t, ok)
		assert.Equal(t, deadline, dl, "Deadline is exact, not rounded")
		assert.NoError(t, ctx.Err())
		assert.Equal(t, 1, st.Len())

		child, cancelChild := context.WithCancel(ctx)
		defer cancelChild()
		var afterRan = make(chan struct{})
		context.AfterFunc(ctx, func() { close(afterRan) })

		<-ctx.Done()
		late := time.Since(deadline)
		assert.GreaterOrEqual(t, late, time.Duration(0))
		assert.LessOrEqual(t, late, time.Millisecond)
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())
		assert.Equal(t, context.DeadlineExceeded, context.Cause(ctx))
		<-child.Done()
		assert.Equal(t, context.DeadlineExceeded, child.Err(), "derived contexts see DeadlineExceeded")
		<-afterRan
		assert.Equal(t, 0, st.Len())
		cancel()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err(), "cancel after expiry changes nothing")
	})
}

func TestWithTimeoutCancelReleasesEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		ctx, cancel := st.WithTimeout(context.Background(), time.Hour)
		child, cancelChild := context.WithCancel(ctx)
		defer cancelChild()
		assert.Equal(t, 1, st.Len())
		cancel()
		assert.Equal(t, 0, st.Len(), "cancel releases the wheel entry")
		<-ctx.Done()
		assert.Equal(t, context.Canceled, ctx.Err())
		assert.Equal(t, context.Canceled, context.Cause(ctx))
		<-child.Done()
		assert.Equal(t, context.Canceled, child.Err())
		cancel() // idempotent
	})
}

func TestWithTimeoutParentCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		cause := errors.New("client went away")
		parent, cancelParent := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "v"))
		ctx, cancel := st.WithTimeout(parent, time.Hour)
		defer cancel()
		assert.Equal(t, "v", ctx.Value(ctxKey{}), "values come from the parent")
		cancelParent(cause)
		<-ctx.Done()
		assert.Equal(t, context.Canceled, ctx.Err())
		assert.Equal(t, cause, context.Cause(ctx))
		assert.Equal(t, 0, st.Len(), "the parent's cancellation released the wheel entry")
		cancel()
		assert.Equal(t, context.Canceled, ctx.Err())
		assert.Equal(t, cause, context.Cause(ctx), "a later cancel changed the cause")

		// A parent that is already done.
		ctx2, cancel2 := st.WithTimeout(parent, time.Hour)
		defer cancel2()
		assert.Equal(t, context.Canceled, ctx2.Err())
		assert.Equal(t, 0, st.Len())
	})
}

type ctxKey struct{}

func TestWithDeadlineEdges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()

		// Already past: done at once, with no wheel entry.
		ctx, cancel := st.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())
		<-ctx.Done()
		assert.Equal(t, 0, st.Len())

		// The parent's deadline is earlier: the parent's deadline wins.
		parent, cancelParent := st.WithTimeout(context.Background(), time.Second)
		defer cancelParent()
		ctx, cancel = st.WithTimeout(parent, time.Hour)
		defer cancel()
		pd, _ := parent.Deadline()
		dl, _ := ctx.Deadline()
		assert.Equal(t, pd, dl)
		<-ctx.Done()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())

		// Nested wheel contexts: the inner, earlier one fires first.
		outer, cancelOuter := st.WithTimeout(context.Background(), time.Hour)
		defer cancelOuter()
		inner, cancelInner := st.WithTimeout(outer, time.Minute)
		defer cancelInner()
		start := time.Now()
		<-inner.Done()
		assert.Equal(t, time.Minute, time.Since(start))
		assert.NoError(t, outer.Err())
		cancelOuter()
		assert.Equal(t, context.DeadlineExceeded, inner.Err(), "the first reason sticks")
	})
}

func TestWithTimeoutContextsStoppedWithTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		ctx, cancel := st.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		tm, err := st.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		left := st.Stop()
		assert.Equal(t, []*Timer{tm}, left, "contexts are not returned as timers")
		<-ctx.Done()
		assert.Equal(t, context.Canceled, ctx.Err())
	})
}

// TestWithTimeoutFirstReasonSticks: Err never changes once set, whichever of
// expiry, cancel and parent cancellation comes first.
func TestWithTimeoutFirstReasonSticks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()

		// Parent first, then the deadline passes.
		parent, cancelParent := context.WithCancel(context.Background())
		ctx, cancel := st.WithTimeout(parent, time.Second)
		defer cancel()
		cancelParent()
		assert.Equal(t, context.Canceled, ctx.Err())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, context.Canceled, ctx.Err(), "the expiry after the parent's cancel changed Err")

		// The deadline first, then the parent is canceled.
		parent, cancelParent = context.WithCancel(context.Background())
		ctx, cancel = st.WithTimeout(parent, time.Second)
		defer cancel()
		<-ctx.Done()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())
		cancelParent()
		cancel()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err(), "a later cancel changed Err")
		assert.Equal(t, context.DeadlineExceeded, context.Cause(ctx))

		// A parent that expires by its own (earlier) deadline.
		stdParent, cancelStd := context.WithTimeout(context.Background(), time.Second)
		defer cancelStd()
		ctx, cancel = st.WithTimeout(stdParent, time.Hour)
		defer cancel()
		<-ctx.Done()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())
	})
}

// TestNestedWheelContexts: a wheel context under a wheel context ends as a
// standard one under a standard one would, whichever ends first, and costs
// no more allocations than one under a plain cancelable parent.
func TestNestedWheelContexts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		errX := errors.New("x")

		// The parent's deadline passes first.
		parent, cancelParent := st.WithTimeout(context.Background(), time.Second)
		defer cancelParent()
		child, cancelChild := st.WithTimeout(parent, 2*time.Second)
		defer cancelChild()
		grandchild, cancelGrandchild := st.WithTimeout(child, 2*time.Second)
		defer cancelGrandchild()
		<-grandchild.Done()
		for _, c := range []context.Context{child, grandchild} {
			assert.Equal(t, context.DeadlineExceeded, c.Err())
			assert.Equal(t, context.DeadlineExceeded, context.Cause(c))
		}

		// The parent is canceled.
		parent, cancelParent = st.WithTimeout(context.Background(), time.Hour)
		child, cancelChild = st.WithTimeout(parent, time.Minute)
		defer cancelChild()
		cancelParent()
		<-child.Done()
		assert.Equal(t, context.Canceled, child.Err())
		assert.Equal(t, context.Canceled, context.Cause(child))
		assert.Equal(t, 0, st.Len(), "the parent's cancel released its entry and the child's")
		cancelChild()
		assert.Equal(t, 0, st.Len())

		// An ancestor is canceled with a cause.
		root, cancelRoot := context.WithCancelCause(context.WithValue(context.Background(), errX, "v"))
		parent, cancelParent = st.WithTimeout(root, time.Hour)
		defer cancelParent()
		child, cancelChild = st.WithTimeout(parent, time.Minute)
		defer cancelChild()
		assert.Equal(t, "v", child.Value(errX))
		cancelRoot(errX)
		<-child.Done()
		assert.Equal(t, context.Canceled, child.Err())
		assert.Equal(t, errX, context.Cause(child))

		// The child ends first: the parent goes on.
		parent, cancelParent = st.WithTimeout(context.Background(), time.Hour)
		defer cancelParent()
		child, cancelChild = st.WithTimeout(parent, time.Second)
		<-child.Done()
		assert.Equal(t, context.DeadlineExceeded, child.Err())
		cancelChild()
		assert.NoError(t, parent.Err())

		// A standard context under a wheel context still sees its errors.
		parent, cancelParent = st.WithTimeout(context.Background(), time.Second)
		defer cancelParent()
		std, cancelStd := context.WithCancel(parent)
		defer cancelStd()
		<-std.Done()
		assert.Equal(t, context.DeadlineExceeded, std.Err())
	})
}

func TestNestedWheelContextAllocs(t *testing.T) {
	st := mustNew(t)
	defer st.Stop()
	plain, cancelPlain := context.WithCancel(context.Background())
	defer cancelPlain()
	wheel, cancelWheel := st.WithTimeout(context.Background(), time.Hour)
	defer cancelWheel()
	run := func(parent context.Context) float64 {
		return testing.AllocsPerRun(1000, func() {
			ctx, cancel := st.WithTimeout(parent, time.Minute)
			_ = ctx.Done()
			cancel()
		})
	}
	underPlain, underWheel := run(plain), run(wheel)
	assert.LessOrEqual(t, underWheel, underPlain, "a wheel context under a wheel context allocates more than under a plain one")
}

// ---- contexts match the context package point by point ----

// embedCtx is a custom context type that embeds another and changes nothing
// about its cancellation, as middleware types often do.
type embedCtx struct{ context.Context }

// derivedKinds makes, from parent, the contexts code derives from a request
// context: standard ones directly and through a WithValue layer and a custom
// type, a standard timeout, a wheel context through a value layer, and an
// AfterFunc. It returns them and a channel closed when the AfterFunc has
// run; t's cleanup cancels them.
func derivedKinds(t *testing.T, st *SystemTimer, parent context.Context) (map[string]context.Context, chan struct{}) {
	ran := make(chan struct{})
	value := context.WithValue(parent, ctxKey{}, "v")
	cancelChild, cancel1 := context.WithCancel(parent)
	causeChild, cancel2 := context.WithCancelCause(value)
	embedded, cancel3 := context.WithCancel(embedCtx{parent})
	timeoutChild, cancel4 := context.WithTimeout(value, time.Hour)
	wheelChild, cancel5 := st.WithTimeout(value, time.Hour)
	grandchild, cancel6 := context.WithCancel(embedCtx{context.WithValue(wheelChild, ctxKey{}, "w")})
	t.Cleanup(func() {
		cancel1()
		cancel2(nil)
		cancel3()
		cancel4()
		cancel5()
		cancel6()
	})
	context.AfterFunc(value, func() { close(ran) })
	return map[string]context.Context{
		"WithCancel":                           cancelChild,
		"WithCancelCause(WithValue)":           causeChild,
		"WithCancel(custom type)":              embedded,
		"WithTimeout(WithValue)":               timeoutChild,
		"wheel WithTimeout(WithValue)":         wheelChild,
		"WithCancel(custom(WithValue(wheel)))": grandchild,
	}, ran
}

// TestDerivedContextsEndWithTheirWheelContext: once the cancel of a wheel
// context returns, or the expiry of its deadline has run, every context
// derived from it is done, with its error, as the context package does it:
// synchronously. Before, the contexts derived from a wheel context were
// canceled on a goroutine of their own, a moment later (p canceled, a
// context.WithCancel(p) still had a nil Err in 999 of 1000 runs).
func TestDerivedContextsEndWithTheirWheelContext(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	for i := range 200 {
		p, cancel := st.WithTimeout(context.Background(), time.Hour)
		derived, ran := derivedKinds(t, st, p)
		cancel()
		for name, c := range derived {
			require.Equal(t, context.Canceled, c.Err(), "run %d: %s right after cancel returned", i, name)
			require.Equal(t, context.Canceled, context.Cause(c), "run %d: %s", i, name)
		}
		testwait.Recv(t, ran, "the AfterFunc")

		p, cancel = st.WithTimeout(context.Background(), time.Minute)
		derived, ran = derivedKinds(t, st, p)
		fc.Add(time.Minute)
		st.step() // runs the expiry on this goroutine
		require.Equal(t, context.DeadlineExceeded, p.Err())
		for name, c := range derived {
			require.Equal(t, context.DeadlineExceeded, c.Err(), "run %d: %s right after the expiry", i, name)
			require.Equal(t, context.DeadlineExceeded, context.Cause(c), "run %d: %s", i, name)
		}
		testwait.Recv(t, ran, "the AfterFunc")
		cancel()
	}
	assert.Zero(t, st.Len())
}

// TestWheelContextEndsWithItsWheelParent: a wheel context under a wheel
// context, through value layers, custom types and standard cancelable
// layers, is done once the outer one's cancel or expiry has returned.
func TestWheelContextEndsWithItsWheelParent(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	for _, end := range []string{"cancel", "expiry", "Stop"} {
		st := st
		if end == "Stop" {
			st = newManual(t, fc)
		}
		outer, cancel := st.WithTimeout(context.Background(), time.Minute)
		std, cancelStd := context.WithCancel(embedCtx{outer})
		defer cancelStd()
		inner, cancelInner := st.WithTimeout(context.WithValue(std, ctxKey{}, 1), time.Minute)
		defer cancelInner()
		innermost, cancelInnermost := st.WithTimeout(embedCtx{inner}, time.Minute)
		defer cancelInnermost()
		want := context.Canceled
		switch end {
		case "cancel":
			cancel()
		case "expiry":
			fc.Add(time.Minute)
			st.step()
			want = context.DeadlineExceeded
		case "Stop":
			st.Stop()
		}
		for _, c := range []context.Context{std, inner, innermost} {
			// Err would look at the parent: the Done channel must be closed already.
			select {
			case <-c.Done():
			default:
				t.Fatalf("%s: %v not done right after the outer context's end", end, c)
			}
			assert.Equal(t, want, c.Err(), end)
		}
		if end == "Stop" {
			assert.ErrorIs(t, context.Cause(innermost), ErrStopped)
		}
		assert.Zero(t, st.Len(), "%s: the inner contexts' entries were released", end)
		cancel()
	}
}

// contextGoroutines counts the goroutines the context package started to
// follow a parent it could not attach to: one per derived context, for the
// context's whole life.
func contextGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "created by context.(*cancelCtx).propagateCancel")
}

// TestDerivedContextsStartNoGoroutine: a context derived from a wheel
// context, directly or through WithValue layers and custom types embedding
// it, attaches to it as to a standard one: no goroutine. Before, each one
// derived through a layer kept a goroutine for its whole life (100 derived
// contexts: 100 goroutines).
func TestDerivedContextsStartNoGoroutine(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	before := contextGoroutines()
	p, cancel := st.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	var cancels []context.CancelFunc
	for range 100 {
		layered := embedCtx{context.WithValue(embedCtx{p}, ctxKey{}, 1)}
		_, c1 := context.WithCancel(layered)
		_, c2 := context.WithTimeout(context.WithValue(p, ctxKey{}, 2), time.Minute)
		_, c3 := st.WithTimeout(layered, time.Minute)
		c4 := context.AfterFunc(layered, func() {})
		_, c5 := context.WithCancel(p)
		cancels = append(cancels, c1, c2, c3, func() { c4() }, c5)
	}
	assert.Equal(t, before, contextGoroutines(), "goroutines started for derived contexts")
	for _, c := range cancels {
		c()
	}
}

// TestWheelContextString: String reads as the context package's does, with
// the parent's name first, and contexts derived from a wheel context name
// it as they name a standard one.
func TestWheelContextString(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		type withDeadline func(context.Context, time.Time) (context.Context, context.CancelFunc)
		d := time.Now().Add(time.Hour)
		build := func(wd withDeadline) []context.Context {
			a, cancelA := wd(context.Background(), d)
			t.Cleanup(cancelA)
			b := context.WithValue(a, ctxKey{}, "v")
			c, cancelC := context.WithCancel(b)
			t.Cleanup(cancelC)
			e, cancelE := wd(c, d)
			t.Cleanup(cancelE)
			f := context.WithoutCancel(e)
			g, cancelG := wd(context.WithValue(context.Background(), ctxKey{}, "v"), d)
			t.Cleanup(cancelG)
			return []context.Context{a, b, c, e, f, g}
		}
		std := build(context.WithDeadline)
		wheel := build(st.WithDeadline)
		time.Sleep(time.Minute)
		var want, got []string
		for i := range std {
			want = append(want, fmt.Sprint(std[i]))
			got = append(got, fmt.Sprint(wheel[i]))
		}
		assert.Equal(t, want, got)
		assert.Contains(t, got[0], "context.Background.WithDeadline(")
		assert.Contains(t, got[0], "[59m0s]")
	})
}

// TestWheelContextRefusedCause: a context the SystemTimer cannot hold is
// canceled at birth with context.Canceled, as one whose parent was
// canceled, and its cause tells why: ErrTooManyPending, ErrStopped. Before,
// the cause was context.Canceled too.
func TestWheelContextRefusedCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithMaxPending(1))
		ctx, cancel := st.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		assert.NoError(t, ctx.Err())
		full, cancelFull := st.WithTimeout(context.Background(), time.Hour)
		defer cancelFull()
		child, cancelChild := context.WithCancel(full)
		defer cancelChild()
		for _, c := range []context.Context{full, child} {
			assert.Equal(t, context.Canceled, c.Err())
			assert.ErrorIs(t, context.Cause(c), ErrTooManyPending)
		}
		cancel()

		pending, cancelPending := st.WithTimeout(context.Background(), time.Hour)
		defer cancelPending()
		derived, cancelDerived := context.WithCancel(pending)
		defer cancelDerived()
		st.Stop()
		stopped, cancelStopped := st.WithTimeout(context.Background(), time.Hour)
		defer cancelStopped()
		for _, c := range []context.Context{pending, derived, stopped} {
			assert.Equal(t, context.Canceled, c.Err())
			assert.ErrorIs(t, context.Cause(c), ErrStopped)
		}
	})
}

// TestWheelContextAfterFuncWithoutCancel: context.AfterFunc and
// context.WithoutCancel work on wheel contexts as on standard ones.
func TestWheelContextAfterFuncWithoutCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		ctx, cancel := st.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "v"), time.Second)
		defer cancel()
		ran := make(chan struct{})
		context.AfterFunc(ctx, func() { close(ran) })
		stop := context.AfterFunc(ctx, func() { t.Error("a stopped AfterFunc ran") })
		assert.True(t, stop())
		detached := context.WithoutCancel(ctx)
		<-ran
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())
		synctest.Wait()
		assert.NoError(t, detached.Err())
		assert.Nil(t, detached.Done())
		assert.Nil(t, context.Cause(detached))
		_, ok := detached.Deadline()
		assert.False(t, ok)
		assert.Equal(t, "v", detached.Value(ctxKey{}))
		assert.False(t, stop(), "stop after the end")
	})
}

// TestWheelContextUnderStandardParent: a standard cancelable parent (a
// server's request context) cannot run code of ours when it is canceled;
// its cancellation reaches the wheel context through context.AfterFunc,
// which starts one goroutine then and none before. What the caller sees:
// the wheel context's own Err and Done show it at once; a context derived
// from it earlier may lag by that goroutine hop. It measures how often.
func TestWheelContextUnderStandardParent(t *testing.T) {
	st := mustNew(t)
	defer st.Stop()
	before := contextGoroutines()
	const runs = 1000
	lagged := 0
	for range runs {
		parent, cancelParent := context.WithCancelCause(context.Background())
		ctx, cancel := st.WithTimeout(parent, time.Hour)
		child, cancelChild := context.WithCancel(ctx)
		require.Equal(t, before, contextGoroutines(), "a goroutine during the context's life")
		cancelParent(errBoom)
		if child.Err() == nil {
			lagged++
		}
		// Asking the wheel context ends it now, and what derives from it.
		require.Equal(t, context.Canceled, ctx.Err())
		require.Equal(t, errBoom, context.Cause(ctx))
		require.Equal(t, context.Canceled, child.Err())
		require.Equal(t, errBoom, context.Cause(child))
		cancelChild()
		cancel()
	}
	t.Logf("a context derived from the wheel context was not done yet right after the parent's cancel returned in %d of %d runs", lagged, runs)

	// Done alone: a waiter wakes once the goroutine has run, and finds the
	// wheel entry released.
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, cancel := st.WithTimeout(parent, time.Hour)
	defer cancel()
	done := ctx.Done()
	cancelParent()
	testwait.Recv(t, done, "the wheel context's Done after its parent's cancel")
	assert.Zero(t, st.Len(), "the parent's cancellation released the wheel entry")
}

// syncParent is a custom cancelable context whose AfterFunc runs its
// functions synchronously when it is canceled.
type syncParent struct {
	context.Context // Background: no deadline, no values
	mu              sync.Mutex
	done            chan struct{}
	err             error
	funcs           map[*func()]struct{}
}

func newSyncParent() *syncParent {
	return &syncParent{Context: context.Background(), done: make(chan struct{}), funcs: map[*func()]struct{}{}}
}

func (p *syncParent) Done() <-chan struct{} { return p.done }

func (p *syncParent) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *syncParent) AfterFunc(f func()) func() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := &f
	p.funcs[key] = struct{}{}
	return func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		_, ok := p.funcs[key]
		delete(p.funcs, key)
		return ok
	}
}

func (p *syncParent) cancel() {
	p.mu.Lock()
	p.err = context.Canceled
	close(p.done)
	funcs := p.funcs
	p.funcs = nil
	p.mu.Unlock()
	for f := range funcs {
		(*f)()
	}
}

// TestWheelContextUnderSynchronousAfterFunc: a parent whose AfterFunc runs
// synchronously ends the wheel context, and what derives from it, before
// its cancel returns.
func TestWheelContextUnderSynchronousAfterFunc(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	parent := newSyncParent()
	ctx, cancel := st.WithTimeout(parent, time.Hour)
	defer cancel()
	child, cancelChild := context.WithCancel(context.WithValue(ctx, ctxKey{}, 1))
	defer cancelChild()
	parent.cancel()
	select {
	case <-child.Done():
	default:
		t.Fatal("the derived context is not done right after the parent's cancel returned")
	}
	assert.Equal(t, context.Canceled, child.Err())
	assert.Zero(t, st.Len())
}

// TestWheelContextParentExpiresFirst: a standard parent whose deadline is
// the wheel context's own fires on time, before the wheel (up to a tick
// late): the wheel context then ends with DeadlineExceeded, as a
// context.WithDeadline under it would.
func TestWheelContextParentExpiresFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		time.Sleep(time.Millisecond / 2) // off the tick
		d := time.Now().Add(time.Second)
		parent, cancelParent := context.WithDeadline(context.Background(), d)
		defer cancelParent()
		ctx, cancel := st.WithDeadline(parent, d)
		defer cancel()
		child, cancelChild := context.WithCancel(ctx)
		defer cancelChild()
		<-parent.Done()
		<-child.Done()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err())
		assert.Equal(t, context.DeadlineExceeded, child.Err())
		assert.Equal(t, context.DeadlineExceeded, context.Cause(child))
	})
}

// gatedCtx is its embedded context, except that the second call to Err
// after arm blocks until release is closed, and says so on entered.
type gatedCtx struct {
	context.Context
	calls            atomic.Int32
	entered, release chan struct{}
}

func (p *gatedCtx) arm() {
	p.entered, p.release = make(chan struct{}), make(chan struct{})
	p.calls.Store(0)
}

func (p *gatedCtx) Err() error {
	if p.entered != nil && p.calls.Add(1) == 2 {
		close(p.entered)
		<-p.release
	}
	return p.Context.Err()
}

// TestWheelContextEndsKidEndingElsewhere: a wheel context's cancel ends a
// wheel context below it synchronously even while another goroutine is
// ending that one, still busy (here held inside its parent's Err): the
// cancel finishes the job itself rather than leave it to the other.
func TestWheelContextEndsKidEndingElsewhere(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	outer, cancelOuter := st.WithTimeout(context.Background(), time.Hour)
	defer cancelOuter()
	layer, cancelLayer := context.WithCancel(outer)
	defer cancelLayer()
	gated := &gatedCtx{Context: layer}
	inner, cancelInner := st.WithTimeout(gated, time.Hour)
	defer cancelInner()
	derived, cancelDerived := context.WithCancel(inner)
	defer cancelDerived()

	gated.arm()
	// The layer's cancel reaches inner through AfterFunc: that goroutine
	// ends inner, and is held in the parent's Err as it cancels inner's x.
	cancelLayer()
	testwait.Recv(t, gated.entered, "the AfterFunc goroutine in the parent's Err")
	cancelOuter()
	select {
	case <-derived.Done():
	default:
		t.Error("a context under the inner wheel context is not done right after the outer one's cancel returned")
	}
	close(gated.release)
}

// TestContextConcurrentEnds makes wheel contexts under a wheel context and
// a standard one from many goroutines at once, while their deadlines pass,
// the callers cancel them, the parents end and the SystemTimer stops, all
// racing: every context ends, each with an error that is one of the ways it
// could end, a context ended by its parent with the parent's, its entry
// released; run with -race it checks the locking.
func TestContextConcurrentEnds(t *testing.T) {
	for round := range 20 {
		st := mustNew(t)
		wheelParent, cancelWheelParent := st.WithTimeout(context.Background(), time.Duration(1+round%5)*time.Millisecond)
		stdParent, cancelStdParent := context.WithCancelCause(context.Background())
		var wg sync.WaitGroup
		ctxs := make(chan context.Context, 2*8*64)
		for g := range 8 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
				for range 64 {
					parent := context.Context(wheelParent)
					switch rng.IntN(4) {
					case 1:
						parent = stdParent
					case 2:
						parent = context.WithValue(wheelParent, ctxKey{}, g)
					case 3:
						std, cancel := context.WithCancel(wheelParent)
						defer cancel()
						parent = std
					}
					ctx, cancel := st.WithTimeout(parent, time.Duration(rng.IntN(3000))*time.Microsecond)
					child, cancelChild := context.WithCancel(embedCtx{ctx})
					defer cancelChild()
					switch rng.IntN(3) {
					case 0:
						cancel()
					case 1:
						go cancel()
					default:
						defer cancel()
					}
					if rng.IntN(2) == 0 {
						_ = ctx.Done() // make the inner context now, or not at all
					}
					ctxs <- ctx
					ctxs <- child
				}
			})
		}
		time.Sleep(time.Millisecond)
		switch round % 3 {
		case 0:
			cancelWheelParent()
		case 1:
			cancelStdParent(errBoom)
		case 2:
			st.Stop()
		}
		wg.Wait()
		close(ctxs)
		cancelWheelParent()
		cancelStdParent(errBoom)
		st.Stop()
		for ctx := range ctxs {
			testwait.Recv(t, ctx.Done(), "a context's end")
			err, cause := ctx.Err(), context.Cause(ctx)
			require.Contains(t, []error{context.Canceled, context.DeadlineExceeded}, err)
			require.Contains(t, []error{context.Canceled, context.DeadlineExceeded, errBoom, ErrStopped}, cause)
		}
		assert.Zero(t, st.Len())
	}
}

// TestContextConcurrentSystemStop races wheel contexts' birth, expiry and
// cancel against SystemTimer.Stop. Once Stop has returned and the creators
// are done, every context must be done: a context whose timer Stop neither
// returned nor ran would stay live forever.
func TestContextConcurrentSystemStop(t *testing.T) {
	stress(t, func(t *testing.T) {
		for round := range iters(60) {
			st := mustNew(t, WithTick(time.Millisecond))
			parent, pcancel := context.WithCancel(context.Background())
			const g = 4
			ctxs := make([][]context.Context, g)
			var wg sync.WaitGroup
			var stopping atomic.Bool
			for k := range g {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(round), uint64(k)))
					for !stopping.Load() || rng.IntN(4) != 0 {
						var p context.Context = parent
						if len(ctxs[k]) > 0 && rng.IntN(3) == 0 {
							p = ctxs[k][rng.IntN(len(ctxs[k]))] // a wheel parent
						}
						ctx, cancel := st.WithTimeout(p, time.Duration(rng.IntN(3000))*time.Microsecond)
						ctxs[k] = append(ctxs[k], ctx)
						if rng.IntN(3) == 0 {
							go cancel()
						}
						if len(ctxs[k]) > 2000 {
							break
						}
					}
				})
			}
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			stopping.Store(true)
			st.Stop()
			wg.Wait()
			for k := range g {
				for i, ctx := range ctxs[k] {
					if ctx.Err() == nil {
						t.Fatalf("round %d: context %d/%d is live after SystemTimer.Stop", round, k, i)
					}
				}
			}
			pcancel()
		}
	})
}
