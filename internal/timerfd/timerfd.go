// Package timerfd wakes a goroutine at a time precise to microseconds, where
// the runtime's timers are precise to a millisecond on an idle machine.
//
// When every processor is idle, the Go runtime sleeps in its network poller
// until the next timer is due, and on Linux the poller's wait counts whole
// milliseconds: the delay is divided by a million, and a delay under a
// millisecond waits one (runtime/netpoll_epoll.go). A timer 4.7ms out sleeps
// 4ms, then 1ms more, and starts 0.3ms late. A timerfd is a kernel timer
// precise to the nanosecond; registered with the same poller, its expiry
// ends the poller's wait at once, whatever that wait's timeout.
//
// A [Waker] is one timerfd and one goroutine that reads it and signals C.
// It is a second alarm beside a runtime timer, never instead of one: while
// every processor is busy, the runtime looks at its timers on every
// scheduling round but at its poller only when a processor runs out of work
// (or every 10ms), so the runtime timer is then the prompter of the two.
// A caller selects on both and rechecks its clock, as after any wake.
//
// Outside Linux, and in the playground's fake-time build, New returns nil.
package timerfd

import "time"

// A Waker signals C once, d after each Arm. Arm must not be called at the
// same time as another Arm or Close, nor after Close; C may be read by
// anyone.
type Waker struct {
	// C receives a value when the timer armed last expires, unless one is
	// already waiting there. A value can be stale: it may belong to an
	// arming that a later Arm replaced.
	C <-chan struct{}

	sys
}

// New returns a Waker, or nil where there is no timerfd.
func New() *Waker {
	c := make(chan struct{}, 1)
	s, ok := start(c)
	if !ok {
		return nil
	}
	return &Waker{C: c, sys: s}
}

// Arm makes the Waker signal C once, d from now, and cancels the arming
// before it. A d of 0 or less signals at once.
func (w *Waker) Arm(d time.Duration) { w.arm(max(d, 1)) }

// Close stops the Waker and waits for its goroutine to end. C is never
// signaled after Close returns.
func (w *Waker) Close() { w.close() }
