package timingwheel

import (
	"errors"
	"math"
	"math/bits"
	"reflect"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"
	"github.com/go-timingwheel/timingwheel/delayqueue"
	"github.com/go-timingwheel/timingwheel/internal/executor"
)

var (
	// ErrStopped is returned by AfterFunc and ScheduleFunc once the
	// SystemTimer has been stopped.
	ErrStopped = errors.New("timingwheel: the SystemTimer is stopped")
	// ErrTooManyPending is returned by AfterFunc and ScheduleFunc when
	// WithMaxPending's bound is reached.
	ErrTooManyPending = errors.New("timingwheel: too many pending timers")

	errNilFunc      = errors.New("timingwheel: nil func")
	errNilScheduler = errors.New("timingwheel: nil Scheduler")
)

// A SystemTimer runs functions after delays. It is safe for concurrent use.
// See the package doc for its design and guarantees.
type SystemTimer struct {
	clock     clock.Clock
	realClock bool      // the default clock: now reads the monotonic clock directly
	epoch     time.Time // time zero of the wheels; every deadline is ns since epoch
	tick      int64     // ns
	wheelSize int64

	shards     []shard
	shardShift uint // a timer's shard is the top bits of its address hash

	dq   *delayqueue.Queue[bucketRef]
	pool *executor.Pool[*Timer]

	maxPending int64
	pending    atomic.Int64 // pending timers, kept only with WithMaxPending

	closed     atomic.Bool
	stopped    chan struct{} // closed when the first Stop has finished
	driverDone chan struct{} // closed when the driver goroutine exits
	manual     bool

	batch []*Timer // the driver's scratch space for due timers
}

// Timer states; guarded by the shard's mutex.
const (
	stateIdle    uint8 = iota // never armed
	statePending              // linked in a bucket or in transit
	stateFired                // handed to the executor
	stateStopped              // stopped before it fired, or periodic and stopped
)

// Timer kinds; immutable.
const (
	kindOnce uint8 = iota
	kindPeriodic
	kindContext
)

// A Timer is a function scheduled by a SystemTimer. Its methods are safe for
// concurrent use.
type Timer struct {
	// next and prev link the timer into a bucket or a shard's transit
	// list; guarded by sh.mu.
	next, prev *Timer
	f          func() // set before the timer is armed, then immutable
	sh         *shard // immutable
	when       int64  // deadline, ns since the epoch; guarded by sh.mu
	state      uint8  // guarded by sh.mu
	kind       uint8  // immutable
}

// New returns a running SystemTimer, or an error naming the first invalid
// option.
func New(opts ...Option) (*SystemTimer, error) {
	c, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	st := &SystemTimer{
		clock:      c.clock,
		realClock:  !c.clockSet || reflect.TypeOf(c.clock) == reflect.TypeOf(clock.New()),
		tick:       int64(c.tick),
		wheelSize:  int64(c.wheelSize),
		maxPending: int64(c.maxPending),
		stopped:    make(chan struct{}),
		driverDone: make(chan struct{}),
		manual:     c.manual,
	}
	st.epoch = st.clock.Now()
	st.dq = delayqueue.New[bucketRef](st.clock)

	nshards := 1 << bits.Len(uint(runtime.GOMAXPROCS(0)-1))
	nshards = min(nshards, 64)
	st.shardShift = uint(64 - bits.TrailingZeros(uint(nshards)))
	st.shards = make([]shard, nshards)
	for i := range st.shards {
		st.shards[i].init(st)
	}

	st.pool = executor.New(executor.Config[*Timer]{
		Workers: c.workers,
		Run:     runTimer,
		OnPanic: c.onPanic,
		Stall:   min(c.tick, time.Millisecond),
		Manual:  c.manual,
	})
	if st.manual {
		close(st.driverDone)
	} else {
		go st.drive()
	}
	return st, nil
}

func runTimer(t *Timer) { t.f() }

// now returns the current time in ns since the epoch.
func (st *SystemTimer) now() int64 {
	if st.realClock {
		return int64(time.Since(st.epoch))
	}
	return int64(st.clock.Now().Sub(st.epoch))
}

// never is the delay queue time of a bucket whose expiration lies beyond
// the largest Duration after the epoch: no clock reading reaches it. The
// clock itself can pass epoch+MaxInt64 (a mock set centuries ahead), and
// such a bucket must then not look due while its timers are not.
var never = time.Unix(1<<62, 0)

// tickTime returns the time of base tick k.
func (st *SystemTimer) tickTime(k int64) time.Time {
	if k > math.MaxInt64/st.tick {
		return never
	}
	return st.epoch.Add(time.Duration(k * st.tick))
}

// shardOf returns the shard of t, chosen by a hash of its address; the Go
// heap does not move objects, so the address is stable.
func (st *SystemTimer) shardOf(t *Timer) *shard {
	h := uint64(uintptr(unsafe.Pointer(t))) * 0x9e3779b97f4a7c15
	return &st.shards[h>>st.shardShift]
}

// AfterFunc arranges for f to run on the executor pool once d has elapsed,
// never earlier and at most one tick later. If d <= 0, f is handed to the
// pool at once. It returns an error if f is nil (errors.Is ErrStopped after
// Stop, ErrTooManyPending beyond WithMaxPending).
func (st *SystemTimer) AfterFunc(d time.Duration, f func()) (*Timer, error) {
	if f == nil {
		return nil, errNilFunc
	}
	t := &Timer{f: f}
	if err := st.start(t, d); err != nil {
		return nil, err
	}
	return t, nil
}

// start arms a new timer to run after d.
func (st *SystemTimer) start(t *Timer, d time.Duration) error {
	t.sh = st.shardOf(t)
	if d <= 0 {
		return st.fireNew(t)
	}
	now := st.now()
	return st.startAt(t, satAdd(now, int64(d)), now)
}

// startAt arms a new timer to run at when (ns since the epoch).
func (st *SystemTimer) startAt(t *Timer, when, now int64) error {
	if st.closed.Load() {
		return ErrStopped
	}
	if st.maxPending > 0 {
		// Reserve a place first, so concurrent callers cannot overshoot
		// the bound; schedule counts the timer again, so the reservation
		// is dropped once the timer is in.
		if st.pending.Add(1) > st.maxPending {
			st.pending.Add(-1)
			return ErrTooManyPending
		}
		defer st.pending.Add(-1)
	}
	sh := t.sh
	sh.mu.Lock()
	defer sh.unlock()
	if sh.closed {
		return ErrStopped
	}
	if sh.schedule(t, when, now) {
		st.pool.Submit(t)
	}
	return nil
}

// fireNew hands a new timer to the executor at once.
func (st *SystemTimer) fireNew(t *Timer) error {
	sh := t.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.closed {
		return ErrStopped
	}
	t.state = stateFired
	st.pool.Submit(t) // accepted: the pool closes only after every shard
	return nil
}

// Len returns the number of pending timers: armed, and neither handed to
// the executor nor stopped.
func (st *SystemTimer) Len() int {
	n := 0
	for i := range st.shards {
		sh := &st.shards[i]
		sh.mu.Lock()
		n += sh.count
		sh.mu.Unlock()
	}
	return n
}

// Stop stops the timer: later AfterFunc and ScheduleFunc calls return
// ErrStopped, and no callback starts after Stop returns. It returns every
// timer that had not started: pending ones and ones handed to the executor
// but not yet run. Contexts from WithTimeout and WithDeadline that had not
// expired are canceled instead (their Err is context.Canceled).
//
// Stop waits for the driver, the workers and every callback still running to
// return, except a callback that is itself calling Stop. It is idempotent:
// later calls wait for the first to finish (unless made from a callback) and
// return nil.
func (st *SystemTimer) Stop() []*Timer {
	if !st.closed.CompareAndSwap(false, true) {
		if !st.pool.OnWorker() {
			<-st.stopped
		}
		return nil
	}
	st.dq.Close()
	<-st.driverDone

	var left []*Timer
	for i := range st.shards {
		sh := &st.shards[i]
		sh.mu.Lock()
		sh.closed = true
		collect := func(root *Timer) {
			for !root.empty() {
				t := root.next
				t.unlink()
				t.state = stateStopped
				left = append(left, t)
			}
		}
		collect(&sh.transit)
		for _, lv := range sh.levels {
			for j := range lv.buckets {
				collect(&lv.buckets[j].root)
			}
		}
		sh.addPending(-sh.count)
		sh.mu.Unlock()
	}
	for _, t := range st.pool.Close() {
		sh := t.sh
		sh.mu.Lock()
		// A timer reset while it sat in the executor is pending again
		// and was collected above; one stopped meanwhile is not ours.
		if t.state == stateFired {
			t.state = stateStopped
			left = append(left, t)
		}
		sh.mu.Unlock()
	}
	close(st.stopped)

	// Contexts are not the caller's timers: cancel them, outside any lock.
	kept := left[:0]
	for _, t := range left {
		if t.kind == kindContext {
			ctxOf(t).cancel(errCanceled, false)
			continue
		}
		kept = append(kept, t)
	}
	clear(left[len(kept):])
	return kept
}

// drive is the driver goroutine: it sleeps until the earliest bucket is due,
// expires it, and repeats until the delay queue is closed.
func (st *SystemTimer) drive() {
	defer close(st.driverDone)
	for {
		ref, _, ok := st.dq.Poll()
		if !ok {
			return
		}
		st.expire(ref)
		if debugChecks {
			st.checkInvariants()
		}
	}
}

// checkInvariants panics if a shard's invariants do not hold.
func (st *SystemTimer) checkInvariants() {
	for i := range st.shards {
		if err := st.shards[i].checkInvariants(); err != nil {
			panic("timingwheel: invariant violated: " + err.Error())
		}
	}
}

// step expires everything due by the clock and runs the callbacks it made
// due, on the calling goroutine, until nothing is left. It is the driver
// and the workers of a SystemTimer made with withManual.
func (st *SystemTimer) step() {
	for {
		ref, _, ok := st.dq.TryPoll()
		if !ok {
			st.pool.RunQueued()
			if ref, _, ok = st.dq.TryPoll(); !ok {
				if debugChecks {
					st.checkInvariants()
				}
				return
			}
		}
		st.expire(ref)
	}
}

// expire advances a shard's wheels to a due bucket's expiration and
// re-places the bucket's timers: each lands in a lower level, or is due and
// goes to the executor. The bucket is detached whole under the lock; its
// timers are then re-placed a chunk per lock hold, so AfterFunc and Stop are
// never held up for long by a large bucket.
func (st *SystemTimer) expire(ref bucketRef) {
	b := ref.b
	sh := b.sh
	sh.mu.Lock()
	if b.queued != ref.exp {
		sh.mu.Unlock() // stale: the bucket was queued again under an earlier time
		return
	}
	b.queued = notQueued
	sh.advance(ref.exp)
	b.root.moveAllTo(&sh.transit)
	sh.mu.Unlock()
	st.replace(sh)
}

// replaceChunk is how many timers expire re-places per lock hold.
const replaceChunk = 256

func (st *SystemTimer) replace(sh *shard) {
	batch := st.batch[:0]
	for more := true; more; {
		nowTick := floorDiv(st.now(), st.tick)
		sh.mu.Lock()
		for i := 0; i < replaceChunk && !sh.transit.empty(); i++ {
			t := sh.transit.next
			t.unlink()
			if sh.place(t, ceilDiv(t.when, st.tick), nowTick) {
				t.state = stateFired
				sh.addPending(-1)
				batch = append(batch, t)
			}
		}
		more = !sh.transit.empty()
		sh.unlock()
		if len(batch) > 0 {
			st.pool.Submit(batch...)
			clear(batch)
			batch = batch[:0]
		}
	}
	st.batch = batch
}

// Stop prevents the timer's function from running. It returns true if this
// call did so; false if the function has already been handed to the executor
// (it ran, is running, or is about to run) or the timer was already stopped.
// For a periodic timer, Stop also ends the series: no run starts after Stop
// returns, except one already handed to the executor.
func (t *Timer) Stop() bool {
	sh := t.sh
	if sh == nil {
		return false
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	switch t.state {
	case statePending:
		t.unlink()
		t.state = stateStopped
		sh.addPending(-1)
		return true
	case stateFired:
		if t.kind == kindPeriodic {
			t.state = stateStopped // keeps rearm from scheduling the next run
		}
	}
	return false
}

// Reset re-arms the timer to run its function once d has elapsed, like
// time.Timer.Reset: it reports whether the timer was pending, and a timer
// that was pending runs once, at its new deadline. A timer that has fired
// or was stopped is armed again. A periodic timer's next run moves to d from
// now and the series continues from there. After the SystemTimer is stopped,
// Reset does nothing and returns false.
func (t *Timer) Reset(d time.Duration) bool {
	sh := t.sh
	if sh == nil {
		return false
	}
	st := sh.st
	now := st.now()
	sh.mu.Lock()
	defer sh.unlock()
	if sh.closed {
		return false
	}
	was := t.state == statePending
	if was {
		t.unlink()
		sh.addPending(-1)
	}
	if d <= 0 || sh.schedule(t, satAdd(now, int64(d)), now) {
		t.state = stateFired
		st.pool.Submit(t)
	}
	return was
}
