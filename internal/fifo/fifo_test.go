package fifo

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQueue checks the queue against a slice, over pushes, pushes to the
// front, pops and takes of many sizes, so that it reuses and grows its
// array.
func TestQueue(t *testing.T) {
	var q Queue[int]
	var ref []int
	next := 0
	for round := range 300 {
		switch round % 3 {
		case 0, 1:
			items := make([]int, round*7%41)
			for i := range items {
				items[i] = next
				next++
			}
			if round%5 == 0 {
				q.PushFront(items)
				ref = append(slices.Clone(items), ref...)
			} else {
				q.Push(items)
				ref = append(ref, items...)
			}
		case 2:
			n := round * 5 % 61
			got := q.Pop(nil, n)
			if round%4 == 2 { // the same through Take, behind an item of to's own
				q.PushFront(got)
				to := Queue[int]{buf: []int{-1}}
				to.Take(&q, n)
				got = to.Pop(nil, to.Len())[1:]
			}
			n = min(n, len(ref))
			require.True(t, slices.Equal(ref[:n], got), "round %d", round)
			ref = ref[n:]
		}
		require.Equal(t, len(ref), q.Len())
	}
	assert.Equal(t, ref, q.Pop(nil, q.Len()))
	assert.Equal(t, 0, q.Len())
}
