package timingwheel

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
		assert.Equal(t, 1, st.Len(), "the entry stays until cancel")
		cancel()
		assert.Equal(t, context.Canceled, ctx.Err())
		assert.Equal(t, 0, st.Len(), "cancel releases the wheel entry")

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
		assert.Equal(t, 1, st.Len(), "the parent's cancel released its entry, not the child's")
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
