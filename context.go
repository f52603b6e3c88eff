package timingwheel

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// WithTimeout returns WithDeadline(parent, now+d), now being the
// SystemTimer's clock.
func (st *SystemTimer) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	st.mustBeMade("WithTimeout")
	return st.withTimeout(parent, d, nil)
}

// WithTimeoutCause is WithTimeout that gives the context the cause
// (context.Cause) cause when the deadline passes, as
// context.WithTimeoutCause does. The cause is the context's only when the
// deadline ends it: a cancel, the parent's end or the SystemTimer's Stop
// give the causes they give under WithTimeout.
func (st *SystemTimer) WithTimeoutCause(parent context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	st.mustBeMade("WithTimeoutCause")
	return st.withTimeout(parent, d, cause)
}

func (st *SystemTimer) withTimeout(parent context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	now := st.clockNow()
	n := int64(now.Sub(st.epoch))
	return st.withDeadline(parent, now.Add(d), satAdd(n, int64(d)), n, cause)
}

// WithDeadline is context.WithDeadline with the deadline kept on the wheel
// instead of in a runtime timer. The returned context behaves as the
// standard library's does, with these differences:
//
//   - Its Done channel is closed at most one tick after the deadline, never
//     before; Deadline reports d exactly.
//   - Calling cancel releases the wheel entry at once, as it does the
//     runtime timer of a context.WithDeadline; so does the end of the
//     context by a parent from this package. A standard parent's cancel
//     releases it when the context hears of it: at once if something
//     waits for the context or derives from it (the watch, below), else at
//     its next Err, Done, Cause or Value, its cancel, or its deadline.
//     Until then Len counts it, and it holds its place in WithMaxPending's
//     bound.
//   - If the SystemTimer is stopped, the context is canceled at birth:
//     Err returns context.Canceled and context.Cause returns [ErrStopped].
//     Contexts still waiting when it stops are canceled then, with the same
//     cause. Beyond [WithMaxPending]'s bound, the context is canceled at
//     birth with the cause [ErrTooManyPending].
//   - A cancellation that starts at a standard cancelable context (a
//     parent made by context.WithCancel, a server's request context) reaches
//     the returned context through context.AfterFunc, a goroutine hop
//     later. Readers of the wheel contexts cannot tell: once the parent's
//     cancel has returned, their Err, Done and Cause show it. A standard
//     context derived from the returned one, read before anything has looked
//     at a wheel context above it, and a Done channel taken before the
//     cancel, show it that goroutine hop later. See "Contexts" in the
//     package doc.
//
// Everything else is the standard library's: Err and context.Cause return
// what a context.WithDeadline would, in the same cases and the same order;
// when the deadline passes, cancel is called, the SystemTimer cancels the
// context or a wheel context it derives from ends, every context derived
// from it, standard or not, through any number of WithValue layers or types
// embedding it, is done before that call returns, with the same error; no
// goroutine is kept per derived context; context.AfterFunc, WithoutCancel
// and String behave as on a standard context. If parent's deadline is
// already earlier than d, it returns context.WithCancel(parent); if parent
// is done, or d has passed by the default clock, it returns
// context.WithDeadline(parent, d), which keeps no timer then either.
func (st *SystemTimer) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	st.mustBeMade("WithDeadline")
	when, now := st.deadline(d)
	return st.withDeadline(parent, d, when, now, nil)
}

// WithDeadlineCause is WithDeadline that gives the context the cause
// (context.Cause) cause when the deadline passes, as
// context.WithDeadlineCause does; other ends give the causes they give
// under WithDeadline. A nil cause is WithDeadline's: the cause is then
// context.DeadlineExceeded.
func (st *SystemTimer) WithDeadlineCause(parent context.Context, d time.Time, cause error) (context.Context, context.CancelFunc) {
	st.mustBeMade("WithDeadlineCause")
	when, now := st.deadline(d)
	return st.withDeadline(parent, d, when, now, cause)
}

// A wheel context is built from three objects; see timerCtx for why.
//
//	caller's context        *timerCtx: Deadline, Value and String; Done and Err are x's
//	   │ Value(&cancelCtxKey)
//	   ▼
//	x, a *context.cancelCtx  the Done channel; standard children attach here
//	   │ parent (through the context package's AfterFunc path)
//	   ▼
//	*wheelParent             the same allocation as the timerCtx: ends x with
//	                         DeadlineExceeded, Canceled or the parent's error
//
// withDeadline is WithDeadlineCause, with the deadline and the current
// time, in ns since the epoch, worked out by the caller.
func (st *SystemTimer) withDeadline(parent context.Context, d time.Time, when, now int64, cause error) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic("timingwheel: WithDeadline: nil parent context")
	}
	if cur, ok := parent.Deadline(); ok && cur.Before(d) {
		return context.WithCancel(parent)
	}
	done := parent.Done()
	if done != nil {
		select {
		case <-done:
			// The standard library's, canceled at birth: no timer.
			return context.WithDeadlineCause(parent, d, cause)
		default:
		}
	}
	if when <= now && st.realClock {
		// Passed already by the clock time.Until reads: the standard
		// library's context is done at birth and keeps no timer either.
		return context.WithDeadlineCause(parent, d, cause)
	}

	var c *timerCtx
	if cause == nil {
		c = &timerCtx{parent: parent, deadline: d}
	} else {
		// The cause makes a causeCtx, so that the contexts without one
		// do not carry a field for it.
		cc := &causeCtx{timerCtx: timerCtx{parent: parent, deadline: d}, cause: cause}
		c = &cc.timerCtx
		c.state.Store(causeBit)
	}
	c.t.kind = kindContext
	pc := st.attach(&c.t, true)
	cancel := func() { c.cancelByCaller() }
	c.cancelFn = cancel
	if done != nil {
		// The parent can be canceled: tie c to it. A wheel ancestor ends c
		// itself, synchronously, whatever lies between (see end). A
		// standard cancelable context in between, or a parent of another
		// kind, can only tell c through AfterFunc: c watches it once x
		// exists, and until then Err looks.
		up, _ := parent.Value(&wheelKey).(*timerCtx)
		if up == nil || done != up.inner().Done() {
			c.state.Or(asyncBit)
		}
		if up != nil {
			c.link(up)
		}
	}

	switch {
	case !c.live():
	case when <= now: // passed already by a clock other than the real one
		c.expire()
	default:
		if err := st.arm(&c.t, when, now, pc); err != nil {
			reason := reasonStopped
			if errors.Is(err, ErrTooManyPending) {
				reason = reasonTooMany
			}
			c.end(reason)
		} else if old := c.state.Or(armedBit); old&reasonMask != reasonLive {
			// Ended while the timer was being armed, by one who could
			// not stop it yet.
			c.t.Stop()
		}
	}
	return c, cancel
}

// withoutCancelFunc drops x's cancel function: x ends only through f, so
// that every way a wheel context ends goes through timerCtx.end.
func withoutCancelFunc(x context.Context, _ context.CancelFunc) context.Context { return x }

// The state of a timerCtx: how it ended (reasonLive until then) in the low
// bits, and flags.
const (
	reasonLive     uint32 = iota
	reasonExpired         // the deadline passed
	reasonCanceled        // the CancelFunc was called
	reasonParent          // the parent is done: the context's error is the parent's
	reasonStopped         // the SystemTimer stopped, or had stopped at birth
	reasonTooMany         // WithMaxPending's bound refused the timer
	reasonMask     uint32 = 7

	armedBit    uint32 = 1 << 3 // the timer is armed: whoever ends the context stops it
	closedBit   uint32 = 1 << 4 // set under mu once ended: no kid links any more, an x made now is born canceled
	hasXBit     uint32 = 1 << 5 // x is set; x may be read without mu
	asyncBit    uint32 = 1 << 6 // the parent's end reaches the context through AfterFunc only; set at birth
	finishedBit uint32 = 1 << 7 // the end is complete: x canceled, kids ended
	causeBit    uint32 = 1 << 8 // the timerCtx is the first field of a causeCtx; set at birth
)

// A causeCtx is a timerCtx made by WithDeadlineCause or WithTimeoutCause:
// the cause it gets when its deadline passes.
type causeCtx struct {
	timerCtx // first: a timerCtx with causeBit is a causeCtx
	cause    error
}

var _ = [1]struct{}{}[unsafe.Offsetof(causeCtx{}.timerCtx)]

// expiryCause returns the cause c gets when its deadline passes, or nil
// for DeadlineExceeded.
func (c *timerCtx) expiryCause() error {
	if c.state.Load()&causeBit == 0 {
		return nil
	}
	return (*causeCtx)(unsafe.Pointer(c)).cause
}

// A timerCtx is the caller's side of a wheel context. Its Timer comes first
// so that a *Timer of kind kindContext can be turned back into its context
// (ctxOf).
//
// Why three objects. A context derived from this one, by the context package
// or by any code, attaches to it without a goroutine only if Value with the
// context package's private key returns a *context.cancelCtx whose Done
// channel is this context's; that child is then canceled, synchronously, with
// whatever error the cancelCtx is canceled with. A cancelCtx is canceled with
// DeadlineExceeded only by its own runtime timer or by a parent: so x, the
// cancelCtx, hangs under a parent of ours, the wheelParent. The context
// package attaches x to it through its AfterFunc method, since a wheelParent
// hides any cancelCtx; that hands us the function (f) that cancels x with
// the wheelParent's Err and Cause, which end calls. The wheelParent is the
// timerCtx under another type ("type wheelParent timerCtx"), so the two cost
// one allocation; x is what Done and Err return and what derived contexts
// find. Returning x itself to the caller would save nothing, and its String
// would be the context package's name for the wheelParent.
//
// What this costs. context.WithDeadline allocates its timerCtx, a runtime
// timer, the timer's closure and the CancelFunc (four), and its done
// channel when first asked. A wheel context allocates the timerCtx and the
// CancelFunc (two); x only when first asked (see inner), and with it the
// CancelFunc the context package makes for x, f and the stopCtx the context
// package records it in, and x's done channel (five): seven for five with
// Done. No design can do with fewer than five before the channel: a
// cancelCtx and the function that cancels it are two whatever makes them;
// its tie to a parent that can give it DeadlineExceeded is two more (f and
// stopCtx, or a parent cancelCtx of its own); the timer must live in an
// allocation of ours. The CancelFunc could be f itself only if the
// wheelParent's Err canceled as a side effect, which a change in the
// context package could set off at birth: not worth one allocation.
//
// A standard cancelable parent adds two more once x exists
// (context.AfterFunc's context and stop function): a cancelCtx takes no
// code of ours as a child, so the only ways to learn of its cancellation
// are a child of the context package's (which would give x that parent's
// errors and never DeadlineExceeded) or a goroutine, which
// context.AfterFunc starts only once the parent is canceled. A request's
// deadline must reach the calls it makes as DeadlineExceeded, at once; a
// client that went away may reach them a goroutine hop later. The hop is
// shortened where it can be: Done and Err look at the parent (one atomic
// load for a standard one) and end the context at once if it is done.
type timerCtx struct {
	t        Timer // kind kindContext: runTimer calls expire, SystemTimer.Stop cancel
	parent   context.Context
	deadline time.Time
	cancelFn context.CancelFunc // the CancelFunc, also run by the parent through watch
	state    atomic.Uint32      // the reason and flags above; the reason is set once, by end

	// mu guards x, f, kids and afStop, the next and prev fields of c's
	// kids, and the setting of closedBit and hasXBit.
	mu     sync.Mutex
	x      context.Context // *context.cancelCtx, child of (*wheelParent)(c); made on demand
	f      func()          // cancels x with the wheelParent's Err and Cause; nil if x was born canceled
	kids   *timerCtx       // wheel contexts deriving from c, which c ends itself
	afStop func() bool     // undoes watch

	up         *timerCtx // the wheel ancestor c is a kid of, or nil; set before linking
	next, prev *timerCtx // c's siblings among up's kids; guarded by up.mu
}

var _ = [1]struct{}{}[unsafe.Offsetof(timerCtx{}.t)] // t must be the first field

// ctxOf returns the context that t, of kind kindContext, belongs to.
func ctxOf(t *Timer) *timerCtx { return (*timerCtx)(unsafe.Pointer(t)) }

func (c *timerCtx) live() bool   { return c.state.Load()&reasonMask == reasonLive }
func (c *timerCtx) async() bool  { return c.state.Load()&asyncBit != 0 }
func (c *timerCtx) closed() bool { return c.state.Load()&closedBit != 0 }

func (c *timerCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *timerCtx) Done() <-chan struct{} {
	c.look()
	return c.inner().Done()
}

func (c *timerCtx) Err() error {
	if !c.look() {
		return nil // x is canceled only after the reason is set
	}
	return c.inner().Err()
}

// look brings c up to date before a reader learns anything of it (Err,
// Done, Value, context.Cause), and reports whether c has ended: so that a
// reader who has seen a wheel context ended, or whose standard parent's
// cancel has returned, sees every context derived from it ended too, as the
// context package's cancel ends the whole subtree before anyone can see it
// returned. Ancestors first, up the chain of wheel ancestors: c ends now if
// the one it follows has ended, or if its parent, whose cancellation
// reaches it through AfterFunc, is done. A context that another goroutine
// has ended but not finished ending gets its x canceled here (closeX), so
// that Err is never non-nil while Done is open; its kids are left to their
// own look, since settling them here would call back into this context
// through the parents' Err that canceling their x asks, on this goroutine.
// The walk costs an atomic load or two per wheel ancestor.
func (c *timerCtx) look() bool {
	if c.up != nil {
		c.up.look()
	}
	s := c.state.Load()
	if s&reasonMask != reasonLive {
		if s&finishedBit == 0 {
			c.closeX()
		}
		return true
	}
	if s&asyncBit != 0 {
		if c.parent.Err() == nil {
			return false
		}
	} else if c.up == nil || c.up.live() {
		return false
	}
	c.end(reasonParent)
	return true
}

// inner returns x, made on its first use. As the standard library's done
// channel, x is made only when someone waits for the context or derives
// from it, and so is the watch on a parent that needs one: a context that
// ends unseen costs the timerCtx and the CancelFunc alone.
func (c *timerCtx) inner() context.Context {
	if c.state.Load()&hasXBit != 0 {
		return c.x
	}
	c.mu.Lock()
	made := false
	if c.x == nil && !c.closed() {
		// c has not ended: x attaches to the wheelParent through its
		// AfterFunc, which sets c.f under mu, where end reads it. The
		// wheelParent's methods call no code but ours until closedBit.
		c.x = withoutCancelFunc(context.WithCancel((*wheelParent)(c)))
		c.state.Or(hasXBit)
		made = true
	}
	ended := c.x == nil
	c.mu.Unlock()
	if made && c.async() {
		c.watch()
	}
	if ended {
		// x is born canceled, with the error and the cause it would have
		// got; made outside mu, since that asks the parent.
		x := withoutCancelFunc(context.WithCancel((*wheelParent)(c)))
		c.mu.Lock()
		if c.x == nil {
			c.x = x
			c.state.Or(hasXBit)
		}
		c.mu.Unlock()
	}
	return c.x
}

// Value returns x for the context package's key (see timerCtx), c for
// wheelKey, and parent's values for the rest.
func (c *timerCtx) Value(key any) any {
	switch key {
	case cancelCtxKey:
		c.look()
		return c.inner()
	case any(&wheelKey):
		return c
	}
	return c.parent.Value(key)
}

// String is what context.WithDeadline's String returns: the parent's name,
// the deadline and the time left, by the SystemTimer's clock.
func (c *timerCtx) String() string {
	left := c.deadline.Sub(c.t.sh.st.clockNow())
	return contextName(c.parent) + ".WithDeadline(" + c.deadline.String() + " [" + left.String() + "])"
}

// contextName names a context as the context package does: by its String
// method, else by its type.
func contextName(c context.Context) string {
	if s, ok := c.(interface{ String() string }); ok {
		return s.String()
	}
	return reflect.TypeOf(c).String()
}

// expire is the timer's function: the deadline has passed. An ancestor
// may have ended before without c knowing: a standard parent reaches c only
// through look, or through the watch's goroutine (see inner), which may
// not have run yet; a wheel context above c that heard of its own parent's
// end that way has not ended c either. A context.WithDeadline would have
// ended with that ancestor's error when its cancel returned: so c looks
// first, and ends with the ancestor's error if one has ended. So do
// SystemTimer.Stop's cancel and the CancelFunc
// (TestContextEndsWithAnAncestorsEndFirst).
func (c *timerCtx) expire() {
	c.look()
	c.end(reasonExpired)
}

// cancel is SystemTimer.Stop's: the SystemTimer stopped before the deadline.
func (c *timerCtx) cancel() {
	c.look()
	c.end(reasonStopped)
}

// cancelByCaller is the CancelFunc, and the function a standard parent runs
// through AfterFunc when it is canceled.
func (c *timerCtx) cancelByCaller() {
	c.look()
	c.end(reasonCanceled)
}

// end ends c for reason, unless it has ended already: it cancels x, and with
// it every standard context attached to it, then the wheel contexts deriving
// from c; then it releases what tied c to the wheel and to its parent.
//
// Whoever calls end, first or not, returns only once c and everything
// deriving from it that it ends are done, as a cancel of the context
// package's does: a caller that finds c ended by another, still busy,
// does the rest itself (settle), rather than wait. Waiting could deadlock:
// settling calls the parents' Err and Value, code of others, which may
// call back into contexts being ended, on the same goroutine.
func (c *timerCtx) end(reason uint32) {
	var old uint32
	for {
		old = c.state.Load()
		if old&reasonMask != reasonLive {
			if old&finishedBit == 0 {
				c.settle()
			}
			return
		}
		if c.state.CompareAndSwap(old, old|reason) {
			break
		}
	}
	failpoint("ctxEnd:reasonSet")
	c.settle()
	c.mu.Lock()
	c.kids = nil // settled: those settling still have the list
	c.state.Or(finishedBit)
	stop := c.afStop
	c.afStop = nil
	c.mu.Unlock()

	if up := c.up; up != nil {
		up.mu.Lock()
		if !up.closed() { // else up is settling its kids, c among them
			if c.prev != nil {
				c.prev.next = c.next
			} else {
				up.kids = c.next
			}
			if c.next != nil {
				c.next.prev = c.prev
			}
			c.next, c.prev = nil, nil
		}
		up.mu.Unlock()
	}
	if stop != nil {
		stop()
	}
}

// settle cancels x and ends the wheel contexts deriving from c, which has
// ended. It may run on several goroutines at once, and again on one: both
// are idempotent. Once closedBit is set, the kids list is frozen (no kid
// links, and a kid that ends leaves its links alone), so that each settle
// can walk it.
func (c *timerCtx) settle() {
	c.closeX()
	failpoint("ctxSettle:xClosed")
	c.mu.Lock()
	k := c.kids
	c.mu.Unlock()
	for ; k != nil; k = k.next {
		// A kid under layers that share c's Done is done with c; one under
		// a standard cancelable layer, once x has canceled that layer; one
		// under a layer that does not follow c is left to its own watch.
		if !k.async() || k.parent.Err() != nil {
			k.end(reasonParent)
		}
	}
}

// closeX releases the wheel entry, then cancels x, if it exists, with the
// error and cause c ended with: after it returns, x and the standard
// contexts attached to it are done, and whoever sees them done sees the
// entry gone. It sets closedBit: an x made later is born canceled.
func (c *timerCtx) closeX() {
	if s := c.state.Load(); s&armedBit != 0 && s&reasonMask != reasonExpired {
		c.t.Stop() // else the creator stops it, once armed
	}
	c.mu.Lock()
	c.state.Or(closedBit)
	f := c.f
	c.mu.Unlock()
	if f != nil {
		f()
	}
}

// link makes c, just made, a kid of its wheel ancestor up, so that up's end
// ends c synchronously; if up has ended already, c ends now.
func (c *timerCtx) link(up *timerCtx) {
	up.mu.Lock()
	if up.closed() {
		up.mu.Unlock()
		if c.parent.Err() != nil {
			c.end(reasonParent)
		}
		return
	}
	c.up = up
	c.next = up.kids
	if up.kids != nil {
		up.kids.prev = c
	}
	up.kids = c
	up.mu.Unlock()
}

// afterFuncer is a context that runs a function when it is done, as the
// context package's AfterFunc uses it.
type afterFuncer interface {
	AfterFunc(func()) (stop func() bool)
}

// watch arranges for the CancelFunc to run when the parent is done: through
// the parent's own AfterFunc method if it has one (it may run it
// synchronously), else through context.AfterFunc, which starts a goroutine
// then, and none before.
func (c *timerCtx) watch() {
	var stop func() bool
	if a, ok := c.parent.(afterFuncer); ok {
		stop = a.AfterFunc(c.cancelFn)
	} else {
		stop = context.AfterFunc(c.parent, c.cancelFn)
	}
	// end takes afStop under mu after setting the reason: if the reason
	// is set now, end may have looked already.
	c.mu.Lock()
	ended := !c.live()
	if !ended {
		c.afStop = stop
	}
	c.mu.Unlock()
	if ended {
		stop()
	}
}

// A wheelParent is a timerCtx seen as the parent of its x (see timerCtx).
// Only the context package calls its methods: once, at x's birth, to attach
// x (Done, Value, AfterFunc), and then through f, to learn the error and the
// cause to cancel x with (Err, Value).
type wheelParent timerCtx

func (w *wheelParent) Deadline() (time.Time, bool) { return w.deadline, true }

// Done tells the context package, at x's birth, whether x is born canceled
// (the context has ended, and end has found no f to call) or may yet be:
// then a channel that is never closed, as it is not asked again.
func (w *wheelParent) Done() <-chan struct{} {
	if (*timerCtx)(w).closed() {
		return closedDone
	}
	return neverDone
}

// Err is the error x gets from f.
func (w *wheelParent) Err() error {
	switch w.state.Load() & reasonMask {
	case reasonLive:
		return nil
	case reasonExpired:
		return context.DeadlineExceeded
	case reasonParent:
		if err := w.parent.Err(); err != nil {
			return err
		}
	}
	return context.Canceled
}

// Value, for the context package's key, decides the cause x gets: the
// parent's cause if the parent ended the context; ErrStopped,
// ErrTooManyPending, or WithDeadlineCause's cause when the deadline passed,
// through a cancelCtx canceled with it; else nothing, and the cause is
// Err. While x attaches it returns nothing, so that x attaches through
// AfterFunc; end sets closedBit before calling f.
func (w *wheelParent) Value(key any) any {
	if key != cancelCtxKey {
		return w.parent.Value(key)
	}
	if !(*timerCtx)(w).closed() {
		return nil
	}
	switch w.state.Load() & reasonMask {
	case reasonExpired:
		if cause := (*timerCtx)(w).expiryCause(); cause != nil {
			return canceledCause(cause) // asked once, when x is canceled or born so
		}
	case reasonParent:
		return w.parent.Value(key)
	case reasonStopped:
		return stoppedCause
	case reasonTooMany:
		return tooManyCause
	}
	return nil
}

// AfterFunc records f, the function that cancels x; the context package
// calls it once, at x's birth. stop is never called: x's own cancel
// function, which would, is dropped.
func (w *wheelParent) AfterFunc(f func()) (stop func() bool) {
	w.f = f
	return neverStop
}

func neverStop() bool { return false }

var (
	// neverDone and closedDone are the Done channels of a wheelParent.
	neverDone  = make(chan struct{})
	closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

	// wheelKey's address is the key for which a timerCtx returns itself,
	// so that a wheel context finds its nearest wheel ancestor.
	wheelKey byte

	// cancelCtxKey is the key for which a context of the context package
	// returns its *cancelCtx. It is unexported there: context.Cause asks
	// for it, so a context that records what it is asked learns it.
	cancelCtxKey = func() any {
		var p keyProbe
		context.Cause(&p)
		return p.key
	}()

	// stoppedCause and tooManyCause are cancelCtxs canceled with
	// ErrStopped and ErrTooManyPending, as wheelParent.Value returns them
	// so that context.Cause finds those causes.
	stoppedCause = canceledCause(ErrStopped)
	tooManyCause = canceledCause(ErrTooManyPending)
)

// keyProbe is a canceled context that records the key its Value is asked.
type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Err() error { return context.Canceled }

func (p *keyProbe) Value(key any) any {
	p.key = key
	return nil
}

// canceledCause returns the *cancelCtx of a context canceled with cause.
func canceledCause(cause error) any {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	return ctx.Value(cancelCtxKey)
}
