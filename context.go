package timingwheel

import (
	"context"
	"errors"
	"time"
	"unsafe"
)

// WithTimeout returns WithDeadline(parent, now+d), now being the
// SystemTimer's clock.
func (st *SystemTimer) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	st.mustBeMade("WithTimeout")
	var now time.Time
	if st.realClock {
		now = time.Now() // not through the clock.Clock interface
	} else {
		now = st.clock.Now()
	}
	n := int64(now.Sub(st.epoch))
	return st.withDeadline(parent, now.Add(d), satAdd(n, int64(d)), n)
}

// WithDeadline is context.WithDeadline with the deadline kept on the wheel
// instead of in a runtime timer. The returned context's Deadline is d
// exactly; its Done channel is closed when the deadline passes (at most one
// tick late; Err then returns context.DeadlineExceeded), when cancel is
// called (Err returns context.Canceled), or when parent's Done channel is
// closed (Err returns parent.Err()), whichever happens first. Calling cancel
// releases the wheel entry at once; as with the standard library, call it
// as soon as the work is done: when parent is canceled first, the entry
// stays until cancel or the deadline. Contexts derived from the returned one
// see the same errors as contexts derived from the standard library's.
//
// If parent's deadline is already earlier than d, it returns
// context.WithCancel(parent). If the SystemTimer is stopped, the context is
// canceled at once, with context.Canceled; contexts still waiting when it
// stops are canceled then.
func (st *SystemTimer) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	st.mustBeMade("WithDeadline")
	when, now := st.deadline(d)
	return st.withDeadline(parent, d, when, now)
}

// withDeadline is WithDeadline, with the deadline and the current time, in
// ns since the epoch, worked out by the caller.
func (st *SystemTimer) withDeadline(parent context.Context, d time.Time, when, now int64) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic("timingwheel: WithDeadline: nil parent context")
	}
	if cur, ok := parent.Deadline(); ok && cur.Before(d) {
		return context.WithCancel(parent)
	}
	c := &timerCtx{parent: parent, deadline: d}
	// The inner context ties c to parent as any child of parent is tied:
	// parent's cancellation reaches it at once, with no goroutine and no
	// registration of our own. A timerCtx parent hides its inner context
	// (see timerCtx), and a child of it would follow it through
	// context.AfterFunc, a goroutine-free but costly path (9 allocations);
	// so c's inner context is a child of the parent's. What c learns from
	// it is the same: the parent's inner context ends when the parent
	// does, and hands its cause, errExpired included, down to c's.
	base := parent
	if pc, ok := parent.(*timerCtx); ok {
		base = pc.inner
	}
	c.inner, c.cancelInner = context.WithCancelCause(base)
	c.t.kind = kindContext
	c.t.sh = st.shardOf(&c.t)

	switch {
	case c.inner.Err() != nil: // parent is done already
	case when <= now:
		c.expire()
	case st.arm(&c.t, when, now) != nil:
		c.cancel()
	case c.inner.Err() != nil:
		// Parent was canceled while the timer was being armed, and the
		// timer is not needed any more.
		c.t.Stop()
	}
	return c, c.cancel
}

// errExpired and errCanceled are the causes with which a timerCtx cancels
// its inner context when the deadline passes and when cancel is called.
// inner keeps the first cause it is given, the parent's if the parent came
// first, so Err and Value can tell how the context ended.
var (
	errExpired  = errors.New("timingwheel: deadline passed")
	errCanceled = errors.New("timingwheel: canceled")
)

// A timerCtx is a context with its deadline on the wheel. Its Timer comes
// first so that a *Timer of kind kindContext can be turned back into its
// context (ctxOf).
//
// Done and cancellation are those of inner, a context.WithCancelCause of
// the parent. Err tells an expiry from a cancellation by inner's cause:
// inner's own error says Canceled either way. Value hides inner's
// cancelCtx behind the parent's, so that contexts derived from a timerCtx
// do not attach to inner, which would give them inner's Canceled where a
// standard context gives DeadlineExceeded, but to the timerCtx itself,
// through its AfterFunc method, and take their error from its Err; and so
// that context.Cause finds the parent's cause, if any, and else Err.
type timerCtx struct {
	t           Timer // kind kindContext: runTimer calls expire
	parent      context.Context
	inner       context.Context
	cancelInner context.CancelCauseFunc
	deadline    time.Time
}

var _ = [1]struct{}{}[unsafe.Offsetof(timerCtx{}.t)] // t must be the first field

// ctxOf returns the context that t, of kind kindContext, belongs to.
func ctxOf(t *Timer) *timerCtx { return (*timerCtx)(unsafe.Pointer(t)) }

func (c *timerCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *timerCtx) Done() <-chan struct{} { return c.inner.Done() }

func (c *timerCtx) Err() error {
	err := c.inner.Err()
	if err != nil && context.Cause(c.inner) == errExpired {
		return context.DeadlineExceeded
	}
	return err
}

func (c *timerCtx) Value(key any) any {
	v := c.inner.Value(key)
	if v != any(c.inner) {
		return v
	}
	// inner's cancelCtx, asked for by context.Cause or by a derived
	// context; see timerCtx. Once c has ended by itself, context.Cause
	// must say so even if the parent is canceled later: with no cancelCtx
	// to look at, it returns Err.
	if cause := context.Cause(c.inner); cause == errExpired || cause == errCanceled {
		return nil
	}
	return c.parent.Value(key)
}

func (c *timerCtx) String() string {
	return "timingwheel.WithDeadline(" + c.deadline.String() + ")"
}

// AfterFunc arranges for f to be called, on its own goroutine, once c is
// done, and returns a function that undoes that if f has not started. The
// context package calls it to cancel the contexts derived from c.
func (c *timerCtx) AfterFunc(f func()) (stop func() bool) {
	return context.AfterFunc(c.inner, f)
}

// expire is the timer's function: the deadline has passed. It does nothing
// if c has ended already.
func (c *timerCtx) expire() { c.cancelInner(errExpired) }

// cancel is the CancelFunc: it ends c, unless it has ended already, and
// releases the wheel entry.
func (c *timerCtx) cancel() {
	c.cancelInner(errCanceled)
	c.t.Stop()
}
