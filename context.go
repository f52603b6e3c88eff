package timingwheel

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

var errCanceled = context.Canceled

// closedchan is the Done channel of a context canceled before anyone asked
// for its channel.
var closedchan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// WithTimeout returns WithDeadline(parent, now+d), now being the
// SystemTimer's clock.
func (st *SystemTimer) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return st.WithDeadline(parent, st.clock.Now().Add(d))
}

// WithDeadline is context.WithDeadline with the deadline kept on the wheel
// instead of in a runtime timer. The returned context's Deadline is d
// exactly; its Done channel is closed when the deadline passes (at most one
// tick late; Err then returns context.DeadlineExceeded), when cancel is
// called, or when parent's Done channel is closed (Err then returns
// parent.Err()), whichever happens first. Calling cancel releases the wheel
// entry at once; as with the standard library, call it as soon as the work
// is done.
//
// Contexts derived from the returned one, with the context package or with
// WithDeadline again, are canceled with it, without a goroutine each. A
// cancellation of parent reaches the returned context through
// context.AfterFunc, so, unlike a context of the standard library, it
// arrives on its own goroutine, a moment after parent's cancel returns.
//
// If parent's deadline is already earlier than d, it returns
// context.WithCancel(parent). If the SystemTimer is stopped, the context is
// canceled at once, with context.Canceled.
func (st *SystemTimer) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic("timingwheel: WithDeadline: nil parent context")
	}
	if cur, ok := parent.Deadline(); ok && cur.Before(d) {
		return context.WithCancel(parent)
	}
	c := &timerCtx{parent: parent, deadline: d}
	c.t.kind = kindContext
	c.t.f = c.expire
	c.t.sh = st.shardOf(&c.t)
	cancel := func() { c.cancel(context.Canceled, true) }

	if pd := parent.Done(); pd != nil {
		select {
		case <-pd:
			c.cancel(parent.Err(), false)
			return c, cancel
		default:
		}
		stop := context.AfterFunc(parent, func() { c.cancel(parent.Err(), true) })
		c.mu.Lock()
		if c.err != nil {
			c.mu.Unlock()
			stop()
		} else {
			c.stopParent = stop
			c.mu.Unlock()
		}
	}

	now := st.now()
	when := int64(d.Sub(st.epoch))
	if when <= now {
		c.cancel(context.DeadlineExceeded, false)
		return c, cancel
	}
	if err := st.arm(&c.t, when, now); err != nil {
		c.cancel(context.Canceled, false)
		return c, cancel
	}
	// A cancellation of parent may have come in while the timer was not
	// armed yet, and found nothing to stop.
	if c.Err() != nil {
		c.t.Stop()
	}
	return c, cancel
}

// A timerCtx is a context with its deadline on the wheel. Its Timer comes
// first so that a *Timer of kind kindContext can be turned back into its
// context (ctxOf).
type timerCtx struct {
	t        Timer // kind kindContext; f is expire
	parent   context.Context
	deadline time.Time

	done atomic.Value // of chan struct{}, created lazily under mu

	// mu guards err, children and stopParent, and the creation of done.
	mu         sync.Mutex
	err        error
	children   map[*func()]struct{} // registered through AfterFunc
	stopParent func() bool          // undoes the context.AfterFunc on parent
}

var _ = [1]struct{}{}[unsafe.Offsetof(timerCtx{}.t)] // t must be the first field

// ctxOf returns the context that t, of kind kindContext, belongs to.
func ctxOf(t *Timer) *timerCtx { return (*timerCtx)(unsafe.Pointer(t)) }

func (c *timerCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *timerCtx) Value(key any) any { return c.parent.Value(key) }

func (c *timerCtx) Done() <-chan struct{} {
	if d := c.done.Load(); d != nil {
		return d.(chan struct{})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.done.Load()
	if d == nil {
		d = make(chan struct{})
		c.done.Store(d)
	}
	return d.(chan struct{})
}

func (c *timerCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *timerCtx) String() string {
	return "timingwheel.WithDeadline(" + c.deadline.String() + ")"
}

// AfterFunc arranges for f to be called once c is done, and returns a
// function that undoes that if f has not been called yet. The context
// package calls it to cancel derived contexts without a goroutine each.
func (c *timerCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		// The caller may hold locks f takes: call it on its own goroutine.
		go f()
		return func() bool { return false }
	}
	if c.children == nil {
		c.children = make(map[*func()]struct{})
	}
	key := &f
	c.children[key] = struct{}{}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.children[key]
		delete(c.children, key)
		return ok
	}
}

// expire is the timer's function: the deadline has passed.
func (c *timerCtx) expire() { c.cancel(context.DeadlineExceeded, false) }

// cancel closes c's Done channel with err, unless it is already closed, and
// then releases the wheel entry (if stopTimer), the registration on parent,
// and the derived contexts.
func (c *timerCtx) cancel(err error, stopTimer bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if d, _ := c.done.Load().(chan struct{}); d != nil {
		close(d)
	} else {
		c.done.Store(closedchan)
	}
	children := c.children
	c.children = nil
	stop := c.stopParent
	c.stopParent = nil
	c.mu.Unlock()

	if stopTimer {
		c.t.Stop()
	}
	if stop != nil {
		stop()
	}
	for f := range children {
		(*f)()
	}
}
