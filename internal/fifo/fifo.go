// Package fifo is a first-in first-out queue that reuses its array.
package fifo

import "slices"

// A Queue is a FIFO of items: buf[head:]. Its zero value is empty.
type Queue[T any] struct {
	buf  []T
	head int
}

// Len returns how many items q holds.
func (q *Queue[T]) Len() int { return len(q.buf) - q.head }

// Push appends items, reusing the space of the items popped when that
// saves growing the array.
func (q *Queue[T]) Push(items []T) {
	if q.head > 0 && len(q.buf)+len(items) > cap(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, items...)
}

// PushFront puts items before the others, in their order.
func (q *Queue[T]) PushFront(items []T) { q.buf = slices.Insert(q.buf, q.head, items...) }

// Pop appends up to n of the oldest items to dst, and removes them.
func (q *Queue[T]) Pop(dst []T, n int) []T {
	n = min(n, q.Len())
	dst = append(dst, q.buf[q.head:q.head+n]...)
	clear(q.buf[q.head : q.head+n])
	if q.head += n; q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	return dst
}

// Take moves up to n of the oldest items of from to the back of q.
func (q *Queue[T]) Take(from *Queue[T], n int) { q.buf = from.Pop(q.buf, n) }
