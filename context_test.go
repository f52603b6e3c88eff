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

// gatedCtx is its embedded context, except that the n-th call to Err
// after arm(n) blocks until release is closed, and says so on entered.
type gatedCtx struct {
	context.Context
	calls, n         atomic.Int32
	entered, release chan struct{}
}

func (p *gatedCtx) arm(n int32) {
	p.entered, p.release = make(chan struct{}), make(chan struct{})
	p.calls.Store(0)
	p.n.Store(n)
}

func (p *gatedCtx) Err() error {
	if p.entered != nil && p.calls.Add(1) == p.n.Load() {
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

	gated.arm(2)
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

// withTimeoutFunc is SystemTimer.WithTimeout's and context.WithTimeout's
// signature.
type withTimeoutFunc func(context.Context, time.Duration) (context.Context, context.CancelFunc)

// ownAllocs is testing.AllocsPerRun(runs, f), the smallest of three
// measurements. AllocsPerRun counts the allocations of every goroutine of
// the process, and goroutines that earlier tests left running (a Ticker's
// runs, a runtime timer's function, the cleanup of a collected shard token)
// allocate now and then: once CI's full run of the package saw a figure one
// above the scenario's own (8 for WithTimeout+Done+expiry, exactly 7 alone
// in 100 runs). Such allocations only add; an allocation the scenario
// makes is in all three measurements.
func ownAllocs(runs int, f func()) float64 {
	m := testing.AllocsPerRun(runs, f)
	for range 2 {
		m = min(m, testing.AllocsPerRun(runs, f))
	}
	return m
}

// TestContextAllocs pins the allocations of a wheel context against the
// standard library's, scenario by scenario, in the same run: no more when
// nobody waits for the context (2 against 4: the cancelCtx that derived
// contexts attach to is made on demand); two more once Done is called (7
// against 5: that cancelCtx, its cancel function, and its tie to the wheel
// through the context package's AfterFunc path, the price of derived
// contexts seeing DeadlineExceeded synchronously; see timerCtx); two more
// again under a standard cancelable parent (context.AfterFunc's context and
// stop function, the only tie to such a parent that keeps DeadlineExceeded).
// AllocsPerRun counts whole allocations: the figures are exact. The wheel's
// expiries run on this goroutine (a manual SystemTimer), the standard
// library's in a synctest bubble.
func TestContextAllocs(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	stdParent, cancelStdParent := context.WithCancel(context.Background())
	defer cancelStdParent()
	wheelParent, cancelWheelParent := st.WithTimeout(context.Background(), 100*time.Hour)
	defer cancelWheelParent()
	stdDeadlineParent, cancelStdDeadlineParent := context.WithTimeout(context.Background(), 100*time.Hour)
	defer cancelStdDeadlineParent()

	const runs = 200
	cancel := func(wt withTimeoutFunc, parent context.Context, done bool) float64 {
		return ownAllocs(runs, func() {
			ctx, cancel := wt(parent, time.Hour)
			if done {
				_ = ctx.Done()
			}
			cancel()
		})
	}
	// The expiry, seen by Err alone or waited for on Done.
	wheelExpiry := func(done bool) float64 {
		return ownAllocs(runs, func() {
			ctx, cancel := st.WithTimeout(context.Background(), time.Millisecond)
			if done {
				_ = ctx.Done()
			}
			fc.Add(time.Millisecond)
			st.step()
			if ctx.Err() == nil {
				panic("not expired")
			}
			cancel()
		})
	}
	var stdExpiry [2]float64
	synctest.Test(t, func(t *testing.T) {
		for i, done := range []bool{false, true} {
			stdExpiry[i] = ownAllocs(runs, func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
				if done {
					_ = ctx.Done()
				}
				time.Sleep(time.Millisecond)
				synctest.Wait() // the timer's function runs on a goroutine
				if ctx.Err() == nil {
					panic("not expired")
				}
				cancel()
			})
		}
	})
	var wheelNow, stdNow float64
	synctest.Test(t, func(t *testing.T) { // the real clock: a deadline passed already
		st := mustNew(t)
		defer st.Stop()
		now := func(wt withTimeoutFunc) float64 {
			return ownAllocs(runs, func() {
				ctx, cancel := wt(context.Background(), 0)
				<-ctx.Done()
				cancel()
			})
		}
		wheelNow, stdNow = now(st.WithTimeout), now(context.WithTimeout)
	})

	wheel := withTimeoutFunc(st.WithTimeout)
	std := withTimeoutFunc(context.WithTimeout)
	type key struct{}
	for _, c := range []struct {
		name       string
		wheel, std float64
		extra      float64 // allocations the wheel may take beyond the standard library's
	}{
		{"WithTimeout+cancel", cancel(wheel, context.Background(), false), cancel(std, context.Background(), false), 0},
		{"WithTimeout+expiry, seen by Err", wheelExpiry(false), stdExpiry[0], 0},
		{"WithTimeout(0)+Done", wheelNow, stdNow, 0},
		{"WithTimeout+Done+cancel", cancel(wheel, context.Background(), true), cancel(std, context.Background(), true), 2},
		{"WithTimeout+Done+expiry", wheelExpiry(true), stdExpiry[1], 2},
		{"under a deadline context: WithTimeout+Done+cancel", cancel(wheel, wheelParent, true), cancel(std, stdDeadlineParent, true), 2},
		{"under a value layer over it", cancel(wheel, context.WithValue(wheelParent, key{}, 1), true), cancel(std, context.WithValue(stdDeadlineParent, key{}, 1), true), 2},
		{"under a cancelable parent: WithTimeout+cancel", cancel(wheel, stdParent, false), cancel(std, stdParent, false), 0},
		{"under a cancelable parent: WithTimeout+Done+cancel", cancel(wheel, stdParent, true), cancel(std, stdParent, true), 4},
	} {
		t.Logf("%-52s wheel %.0f, context.WithTimeout %.0f", c.name, c.wheel, c.std)
		assert.NotZero(t, c.std, c.name)
		assert.LessOrEqual(t, c.wheel, c.std+c.extra, c.name)
	}
}

// The layers of a chain of contexts, each derived from the one before.
type layerKind int

const (
	layerValue         layerKind = iota // context.WithValue
	layerEmbed                          // a custom type embedding its parent
	layerCancel                         // context.WithCancelCause
	layerTimeout                        // context.WithTimeout, 2h: never fires here
	layerWheel                          // SystemTimer.WithTimeout, 1h, or in the reference chain context.WithTimeout
	layerWithoutCancel                  // context.WithoutCancel
	numLayerKinds
)

func (k layerKind) String() string {
	return [...]string{"value", "embed", "cancel", "timeout", "wheel", "withoutCancel"}[k]
}

func (k layerKind) cancelable() bool { return k == layerCancel || k == layerTimeout || k == layerWheel }

// A chain is the contexts made from a list of layer kinds over a root, and
// their cancel functions (nil for layers that have none).
type chain struct {
	ctxs    []context.Context
	cancels []func(error)
}

// makeChain builds the layers over root; cancelRoot cancels root.
func makeChain(root context.Context, cancelRoot func(error), kinds []layerKind, wheel func(context.Context, time.Duration) (context.Context, context.CancelFunc)) chain {
	c := chain{ctxs: []context.Context{root}, cancels: []func(error){cancelRoot}}
	for i, k := range kinds {
		parent := c.ctxs[len(c.ctxs)-1]
		var ctx context.Context
		var cancel func(error)
		switch k {
		case layerValue:
			ctx = context.WithValue(parent, ctxKey{}, i)
		case layerEmbed:
			ctx = embedCtx{parent}
		case layerCancel:
			var cc context.CancelCauseFunc
			ctx, cc = context.WithCancelCause(parent)
			cancel = cc
		case layerTimeout, layerWheel:
			var cf context.CancelFunc
			if k == layerTimeout {
				ctx, cf = context.WithTimeout(parent, 2*time.Hour)
			} else {
				ctx, cf = wheel(parent, time.Hour)
			}
			cancel = func(error) { cf() }
		case layerWithoutCancel:
			ctx = context.WithoutCancel(parent)
		}
		c.ctxs = append(c.ctxs, ctx)
		c.cancels = append(c.cancels, cancel)
	}
	return c
}

// syncDone reports which layers of the chain (index 0 is the root) a cancel
// of layer p ends before it returns, and which it ends at all. A
// cancellation moves synchronously from a cancelable context to the
// standard ones below it, and from a wheel context to the wheel contexts
// below it whatever lies between; from a standard cancelable context to a
// wheel context below it, only through AfterFunc. Readers of such a wheel
// context cannot tell (they look at its parent): seen reports the layers
// that read as done right after the cancel returns, whoever has run: the
// synchronous ones and the wheel layers that are done.
func syncDone(kinds []layerKind, p int) (sync, done, seen []bool) {
	n := len(kinds) + 1
	sync, done, seen = make([]bool, n), make([]bool, n), make([]bool, n)
	kind := func(i int) layerKind {
		if i == 0 {
			return layerCancel // the root
		}
		return kinds[i-1]
	}
	sync[p], done[p] = true, true
	for i := p + 1; i < n; i++ {
		switch k := kind(i); k {
		case layerWithoutCancel:
			// Nothing below is canceled from above.
		case layerWheel:
			done[i] = done[i-1]
			// The nearest cancelable ancestor, and the nearest wheel one.
			j := i - 1
			for j > 0 && !kind(j).cancelable() && kind(j) != layerWithoutCancel {
				j--
			}
			w := i - 1
			for w > 0 && kind(w) != layerWheel {
				w--
			}
			if kind(j) == layerWheel {
				sync[i] = done[i] && sync[j]
			} else {
				sync[i] = done[i] && kind(w) == layerWheel && w >= p && sync[w]
			}
		default:
			done[i], sync[i] = done[i-1], sync[i-1]
		}
	}
	for i := range seen {
		seen[i] = sync[i] || done[i] && kind(i) == layerWheel
	}
	return sync, done, seen
}

// TestContextLayers builds random chains of value, custom, standard
// cancelable, WithoutCancel and wheel layers, twice: with wheel contexts,
// and with the standard library's in their place. It cancels the same
// layer in both, and demands the same: the layers above untouched; right
// after the cancel returns, every layer that a cancellation reaches
// synchronously done; then every layer below done with the same Err and
// Cause; and no goroutine per derived context at any time.
func TestContextLayers(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	rng := rand.New(rand.NewPCG(10, 10))
	base := contextGoroutines()
	lagged := 0
	for run := range 500 {
		kinds := make([]layerKind, 1+rng.IntN(8))
		for i := range kinds {
			kinds[i] = layerKind(rng.IntN(int(numLayerKinds)))
			if kinds[i] == layerWithoutCancel && rng.IntN(3) > 0 {
				kinds[i] = layerWheel // rarer
			}
		}
		var cancelable []int
		for i, k := range kinds {
			if k.cancelable() {
				cancelable = append(cancelable, i+1)
			}
		}
		rootCanceled := len(cancelable) == 0 || rng.IntN(4) == 0
		p := 0
		if !rootCanceled {
			p = cancelable[rng.IntN(len(cancelable))]
		}
		name := fmt.Sprintf("run %d: layers %v, cancel %d", run, kinds, p)

		newRoot := func() (context.Context, func(error)) {
			ctx, cancel := context.WithCancelCause(context.Background())
			return ctx, cancel
		}
		wroot, wcancel := newRoot()
		sroot, scancel := newRoot()
		wheel := makeChain(wroot, wcancel, kinds, st.WithTimeout)
		std := makeChain(sroot, scancel, kinds, context.WithTimeout)
		require.Equal(t, base, contextGoroutines(), "%s: goroutines kept for derived contexts", name)

		cause := fmt.Errorf("cause %d", run)
		std.cancels[p](cause)
		wheel.cancels[p](cause)
		sync, done, seen := syncDone(kinds, p)
		// Deepest first: looking at a wheel context ends it if its
		// parent is done, which must not hide a layer below that lags.
		for i := len(wheel.ctxs) - 1; i >= p; i-- {
			if !seen[i] {
				continue
			}
			select {
			case <-wheel.ctxs[i].Done():
			default:
				t.Fatalf("%s: layer %d not done right after the cancel returned", name, i)
			}
		}
		for i := len(wheel.ctxs) - 1; i >= p; i-- {
			if done[i] && !sync[i] && wheel.ctxs[i].Err() == nil {
				lagged++
			}
		}
		for i := range wheel.ctxs {
			what := fmt.Sprintf("%s: layer %d", name, i)
			if !done[i] {
				assert.NoError(t, std.ctxs[i].Err(), what)
				assert.NoError(t, wheel.ctxs[i].Err(), what)
				continue
			}
			testwait.Recv(t, std.ctxs[i].Done(), what)
			testwait.Recv(t, wheel.ctxs[i].Done(), what)
			require.Equal(t, std.ctxs[i].Err(), wheel.ctxs[i].Err(), what)
			require.Equal(t, context.Cause(std.ctxs[i]), context.Cause(wheel.ctxs[i]), what)
		}
		for i := range wheel.cancels {
			if wheel.cancels[i] != nil {
				wheel.cancels[i](nil)
				std.cancels[i](nil)
			}
		}
	}
	t.Logf("layers that a cancellation reaches through AfterFunc, not done right after the cancel: %d", lagged)
	assert.Zero(t, st.Len(), "every wheel entry released")
}

// TestContextLayersExpire: the same chains with every wheel layer due at
// the same time; once the expiry has run, every layer below a wheel one is
// done with DeadlineExceeded, synchronously, and no other is.
func TestContextLayersExpire(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	rng := rand.New(rand.NewPCG(11, 11))
	for run := range 500 {
		kinds := make([]layerKind, 1+rng.IntN(8))
		for i := range kinds {
			kinds[i] = layerKind(rng.IntN(int(numLayerKinds)))
		}
		name := fmt.Sprintf("run %d: layers %v", run, kinds)
		root, cancelRoot := context.WithCancelCause(context.Background())
		c := makeChain(root, cancelRoot, kinds, st.WithTimeout)
		fc.Add(time.Hour)
		st.step()
		expired := false
		for i, ctx := range c.ctxs {
			if i > 0 {
				switch kinds[i-1] {
				case layerWheel:
					expired = true
				case layerWithoutCancel:
					expired = false
				}
			}
			what := fmt.Sprintf("%s: layer %d", name, i)
			if !expired {
				assert.NoError(t, ctx.Err(), what)
				continue
			}
			select {
			case <-ctx.Done():
			default:
				t.Fatalf("%s: not done right after the expiry ran", what)
			}
			require.Equal(t, context.DeadlineExceeded, ctx.Err(), what)
			require.Equal(t, context.DeadlineExceeded, context.Cause(ctx), what)
		}
		for _, cancel := range c.cancels {
			if cancel != nil {
				cancel(errors.New("done"))
			}
		}
	}
	assert.Zero(t, st.Len())
}

// TestContextEndsWithAnAncestorsEndFirst: once a standard parent's cancel
// has returned, every wheel context below it shows the parent's error and
// cause, as a context.WithDeadline would, whatever ends it next: its
// deadline, its CancelFunc or SystemTimer.Stop. Each of those ended it with
// its own reason when nobody had looked at it since the parent's cancel,
// or while the goroutine that carries the cancel down (through
// context.AfterFunc) had not run yet: held here in the parent's Err, as a
// descheduled goroutine is. Without the hold, a kid's expiry lost that race
// about one time in two.
func TestContextEndsWithAnAncestorsEndFirst(t *testing.T) {
	errCause := errors.New("the client went away")
	for _, tc := range []struct {
		name string
		kid  bool // look at a wheel context below the first
		end  func(fc *fakeClock, st *SystemTimer, cancelKid context.CancelFunc)
	}{
		{"Stop", false, func(_ *fakeClock, st *SystemTimer, _ context.CancelFunc) { st.Stop() }},
		{"Stop, kid", true, func(_ *fakeClock, st *SystemTimer, _ context.CancelFunc) { st.Stop() }},
		{"kid's deadline", true, func(fc *fakeClock, st *SystemTimer, _ context.CancelFunc) {
			fc.Add(2 * time.Minute)
			st.step()
		}},
		{"kid's CancelFunc", true, func(_ *fakeClock, _ *SystemTimer, cancelKid context.CancelFunc) { cancelKid() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeClock()
			st := newManual(t, fc)
			defer st.Stop()
			parent, cancelParent := context.WithCancelCause(context.Background())
			gated := &gatedCtx{Context: parent}
			ctx, cancel := st.WithTimeout(gated, time.Hour)
			defer cancel()
			cancelKid := context.CancelFunc(func() {})
			if tc.kid {
				ctx, cancelKid = st.WithTimeout(ctx, time.Minute) // asks Done: the watch is set
				defer cancelKid()
				gated.arm(1) // the watch's goroutine stops in its first Err
				defer func() { close(gated.release) }()
			}
			cancelParent(errCause)
			if tc.kid {
				testwait.Recv(t, gated.entered, "the watch's goroutine in the parent's Err")
			}
			tc.end(fc, st, cancelKid)
			if err, cause := ctx.Err(), context.Cause(ctx); err != context.Canceled || cause != errCause {
				t.Errorf("Err %v, Cause %v; want %v, %v", err, cause, context.Canceled, errCause)
			}
		})
	}
}
