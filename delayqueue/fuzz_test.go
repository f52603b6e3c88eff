package delayqueue

import (
	"slices"
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

// FuzzQueueAgainstSortedSlice drives offers, polls and clock moves through a
// Queue and through a sorted slice, and demands the same items out in the
// same order.
func FuzzQueueAgainstSortedSlice(f *testing.F) {
	f.Add([]byte{0, 5, 0, 5, 1, 2, 10, 1, 1})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 2, 0, 1, 1, 1})
	f.Add([]byte{0, 255, 0, 1, 2, 255, 1, 2, 3, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		base := time.Unix(1_000_000, 0)
		c := &manualClock{now: base}
		q := New[int](c)
		defer q.Close()
		type item struct {
			at  time.Time
			seq int
		}
		var model []item
		seq := 0
		for i := 0; i+1 < len(ops); i += 2 {
			arg := time.Duration(ops[i+1])
			switch ops[i] % 3 {
			case 0: // offer, up to 255ms from now, or in the past
				at := c.now.Add((arg - 64) * time.Millisecond)
				if err := q.Offer(seq, at); err != nil {
					t.Fatal(err)
				}
				model = append(model, item{at, seq})
				slices.SortStableFunc(model, func(a, b item) int { return a.at.Compare(b.at) })
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
					model = model[1:]
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
