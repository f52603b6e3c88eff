package delayqueue

import (
	"container/heap"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// manualClock reads a fixed time; only Now is used by TryPoll.
type manualClock struct {
	clock.Clock // nil: only Now is used
	now         time.Time
}

func (c *manualClock) Now() time.Time { return c.now }

// refItem and refHeap are the reference: container/heap ordered by time,
// then by offer order.
type refItem struct {
	at  time.Time
	seq int
}

type refHeap []refItem

func (h refHeap) Len() int { return len(h) }
func (h refHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h refHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *refHeap) Push(x any)   { *h = append(*h, x.(refItem)) }
func (h *refHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// FuzzQueueAgainstReferenceHeap drives offers, polls and clock moves through
// a Queue and through container/heap, and demands the same items out in the
// same order.
func FuzzQueueAgainstReferenceHeap(f *testing.F) {
	f.Add([]byte{0, 5, 0, 5, 1, 2, 10, 1, 1})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 2, 0, 1, 1, 1})
	f.Add([]byte{0, 255, 0, 1, 2, 255, 1, 2, 3, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		base := time.Unix(1_000_000, 0)
		c := &manualClock{now: base}
		q := New[int](c)
		defer q.Close()
		var model refHeap
		seq := 0
		for i := 0; i+1 < len(ops); i += 2 {
			arg := time.Duration(ops[i+1])
			switch ops[i] % 3 {
			case 0: // offer, up to 255ms from now, or in the past
				at := c.now.Add((arg - 64) * time.Millisecond)
				if err := q.Offer(seq, at); err != nil {
					t.Fatal(err)
				}
				heap.Push(&model, refItem{at, seq})
				seq++
			case 1: // poll everything due
				for {
					v, at, ok := q.TryPoll()
					wantOK := len(model) > 0 && !model[0].at.After(c.now)
					if ok != wantOK {
						t.Fatalf("TryPoll ok=%v, model says %v", ok, wantOK)
					}
					if !ok {
						break
					}
					if v != model[0].seq || !at.Equal(model[0].at) {
						t.Fatalf("TryPoll = %d@%v, model says %d@%v", v, at, model[0].seq, model[0].at)
					}
					heap.Pop(&model)
				}
			case 2: // move the clock, either way
				c.now = c.now.Add((arg - 100) * time.Millisecond)
			}
			if q.Len() != len(model) {
				t.Fatalf("Len() = %d, model has %d", q.Len(), len(model))
			}
			if at, ok := q.Peek(); ok != (len(model) > 0) || ok && !at.Equal(model[0].at) {
				t.Fatalf("Peek() = %v %v, model head %v", at, ok, model)
			}
		}
	})
}
