// Package delayqueue provides a blocking priority queue of items keyed by the
// time at which they become available, driven by a [clock.Clock].
//
// A [Queue] is the only thing in a timing wheel that decides when time moves:
// [Queue.Poll] sleeps until the earliest item is due, wakes early when an
// earlier item is offered, and returns at once when the queue is closed. No
// goroutine wakes up while nothing is due.
//
// Items with equal times come out in the order they were offered.
package delayqueue

import (
	"errors"
	"reflect"
	"runtime"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/go-timingwheel/timingwheel/internal/timerfd"
)

// ErrClosed is returned by [Queue.Offer] and [Queue.Push] after [Queue.Close].
var ErrClosed = errors.New("delayqueue: queue is closed")

// recheckEvery bounds how long Poll trusts the timer of a clock that is not
// the real one. A [clock.Mock] only fires timers that exist when it is
// advanced, and it computes a timer's deadline from its own notion of now when
// the timer is armed; an advance that lands between Poll reading the time and
// arming its timer would otherwise be missed until the next advance. With the
// real clock there is no such window and no recheck.
const recheckEvery = time.Millisecond

// A Queue is a min-heap of items ordered by time. Any number of goroutines
// may call Offer; Poll callers are served one at a time.
type Queue[T any] struct {
	clock   clock.Clock
	realClk bool
	precise bool // realClk, until Poll finds it cannot make fine

	// pollMu serializes pollers and guards timer, recheck and fine, which
	// only the goroutine inside Poll touches.
	pollMu    sync.Mutex
	timer     *clock.Timer
	due       <-chan time.Time // receives when timer fires: see arm
	ticks     chan time.Time   // 1-buffered: due, with a clock not the real one
	recheck   *time.Timer
	fine      *timerfd.Waker  // made by the first Poll that sleeps; nil outside Linux
	closeFine runtime.Cleanup // closes fine once q is unreachable

	// mu guards items, seq and closed.
	mu     sync.Mutex
	items  []entry[T]
	seq    uint64
	closed bool

	wake chan struct{} // 1-buffered; an item earlier than the head arrived
	done chan struct{} // closed by Close
}

type entry[T any] struct {
	at  time.Time
	seq uint64
	v   T
}

func (e *entry[T]) before(o *entry[T]) bool {
	if e.at.Equal(o.at) {
		return e.seq < o.seq
	}
	return e.at.Before(o.at)
}

// New returns an empty queue driven by c, or by the real clock if c is nil.
func New[T any](c clock.Clock) *Queue[T] {
	if c == nil {
		c = clock.New()
	}
	realClk := reflect.TypeOf(c) == reflect.TypeOf(clock.New())
	return &Queue[T]{
		clock:   c,
		realClk: realClk,
		precise: realClk,
		ticks:   make(chan time.Time, 1),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
}

// fakeTime reports whether the time package's clock, for the calling
// goroutine, is a synctest bubble's: a bubble's time carries no monotonic
// reading, where a real time.Now on Linux always does. A timerfd's
// goroutine must not live in a bubble: a goroutine parked in the poller is
// not durably blocked, so the bubble's time would never move.
func fakeTime() bool {
	now := time.Now()
	return now == now.Round(0)
}

// Offer adds v, to become available at at, and wakes a blocked Poll if v is
// now the earliest item. It never blocks.
func (q *Queue[T]) Offer(v T, at time.Time) error {
	head, err := q.Push(v, at)
	if head {
		q.Wake()
	}
	return err
}

// Push adds v like Offer but leaves waking the poller to the caller: when it
// reports true, v is the new earliest item and the caller must call
// [Queue.Wake] once it can. It is for callers that push while holding a lock
// of their own and want no channel operation under it.
func (q *Queue[T]) Push(v T, at time.Time) (head bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false, ErrClosed
	}
	q.seq++
	q.items = append(q.items, entry[T]{at: at, seq: q.seq, v: v})
	i := q.up(len(q.items) - 1)
	return i == 0, nil
}

// Wake makes a blocked Poll look at the head again. It never blocks.
func (q *Queue[T]) Wake() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Poll blocks until the earliest item is due and removes and returns it with
// its time. It returns ok == false once the queue is closed.
func (q *Queue[T]) Poll() (v T, at time.Time, ok bool) {
	q.pollMu.Lock()
	defer q.pollMu.Unlock()
	for {
		v, at, wait, ok, closed := q.poll()
		switch {
		case ok:
			return v, at, true
		case closed:
			return v, at, false
		}
		var due <-chan time.Time
		var fine <-chan struct{}
		if !at.IsZero() {
			q.arm(wait)
			// A clock that is not the real one may have moved between
			// reading the time and arming the timer; look again.
			if !q.clock.Now().Before(at) {
				continue
			}
			due = q.due
			if q.precise {
				fine = q.armFine(wait)
			}
		}
		var recheck <-chan time.Time
		if !q.realClk {
			recheck = q.armRecheck()
		}
		select {
		case <-due:
		case <-fine:
		case <-q.wake:
		case <-q.done:
		case <-recheck:
		}
	}
}

// TryPoll removes and returns the earliest item if it is due now, without
// blocking.
func (q *Queue[T]) TryPoll() (v T, at time.Time, ok bool) {
	v, at, _, ok, _ = q.poll()
	return v, at, ok
}

// poll pops the head if it is due. Otherwise it reports the head's time (zero
// if the queue is empty) and how long until it is due.
func (q *Queue[T]) poll() (v T, at time.Time, wait time.Duration, ok, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return v, at, 0, false, true
	}
	if len(q.items) == 0 {
		return v, at, 0, false, false
	}
	head := q.items[0]
	if wait = head.at.Sub(q.clock.Now()); wait > 0 {
		return v, head.at, wait, false, false
	}
	q.pop()
	return head.v, head.at, 0, true, false
}

// arm makes q.due receive after d. Called with pollMu held.
//
// With the real clock, q.timer is a channel timer, reused (Go 1.23's Reset
// leaves no stale tick in its channel; an older GODEBUG's may). With any
// other clock it is an AfterFunc whose send never blocks: a clock.Mock's
// channel timer sends its tick while holding the mock's lock, and one that
// Mock.Add has chosen to fire, and not fired yet, puts its tick in the
// channel after any drain before a Reset; fired again by the same Add, it
// blocks on the full channel with the mock's lock held, and so does the
// poller in Now (TestMockClockArmsNoChannelTimer). A stale tick only costs
// Poll a loop.
func (q *Queue[T]) arm(d time.Duration) {
	if !q.realClk {
		if q.timer != nil {
			q.timer.Stop()
		}
		q.timer, q.due = q.clock.AfterFunc(d, q.tick), q.ticks
		return
	}
	if q.timer == nil {
		q.timer = q.clock.Timer(d)
		q.due = q.timer.C
		return
	}
	q.timer.Reset(d)
}

// tick is the function of a timer armed with a clock not the real one.
func (q *Queue[T]) tick() {
	select {
	case q.ticks <- time.Time{}:
	default: // one is there already
	}
}

// armFine arms the timerfd beside q.timer, for the wake the runtime's timer
// gives a millisecond late when every processor is idle (package timerfd
// says why). Whichever comes first wakes Poll, which then reads the clock:
// an early or stale signal costs a loop, never an early item. It returns nil
// where there is no timerfd, or in a synctest bubble. Called with pollMu
// held.
//
// The timerfd's goroutine starts in the poller's bubble, if any, and lives
// until Close, or until q is unreachable: a Queue nobody closes leaks
// nothing more than it did without one.
func (q *Queue[T]) armFine(d time.Duration) <-chan struct{} {
	if q.fine == nil {
		if fakeTime() {
			q.precise = false
			return nil
		}
		if q.fine = timerfd.New(); q.fine == nil {
			q.precise = false
			return nil
		}
		q.closeFine = runtime.AddCleanup(q, (*timerfd.Waker).Close, q.fine)
	}
	select {
	case <-q.fine.C: // stale: from an arming this one replaces
	default:
	}
	q.fine.Arm(d)
	return q.fine.C
}

func (q *Queue[T]) armRecheck() <-chan time.Time {
	if q.recheck == nil {
		q.recheck = time.NewTimer(recheckEvery)
	} else {
		q.recheck.Reset(recheckEvery)
	}
	return q.recheck.C
}

// Peek returns the time of the earliest item.
func (q *Queue[T]) Peek() (at time.Time, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return at, false
	}
	return q.items[0].at, true
}

// Len returns the number of items in the queue.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// Close makes a blocked Poll, and every later one, return ok == false, and
// makes later Offers fail with ErrClosed. The items still queued are returned.
// Close is idempotent; later calls return nil.
func (q *Queue[T]) Close() []T {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	left := make([]T, len(q.items))
	for i := range q.items {
		left[i] = q.items[i].v
	}
	q.items = nil
	q.mu.Unlock()
	close(q.done)

	// Release the timers once no Poll can be using them.
	q.pollMu.Lock()
	if q.timer != nil {
		q.timer.Stop()
	}
	if q.recheck != nil {
		q.recheck.Stop()
	}
	if q.fine != nil {
		q.closeFine.Stop()
		q.fine.Close()
		q.fine = nil
	}
	q.pollMu.Unlock()
	return left
}

// up and down restore the heap property; written out rather than through
// container/heap, whose interface boxes every pushed item.
func (q *Queue[T]) up(i int) int {
	h := q.items
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return i
}

func (q *Queue[T]) pop() {
	h := q.items
	n := len(h) - 1
	h[0] = h[n]
	var zero entry[T]
	h[n] = zero // drop the reference for the GC
	q.items = h[:n]
	h = q.items
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].before(&h[l]) {
			m = r
		}
		if !h[m].before(&h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
