package purgatory

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTopKeys watches key i under i operations and checks the top keys
// against a sort of the same counts, for n below, at and above the number
// of keys.
func TestTopKeys(t *testing.T) {
	p := newP[string](t)
	const keys = 40
	for i := 1; i <= keys; i++ {
		for range i {
			_, err := p.TryCompleteElseWatch(newOp(time.Hour), fmt.Sprint("k", i))
			require.NoError(t, err)
		}
	}
	for _, n := range []int{0, 1, 5, keys, keys + 3} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			var want []KeyCount[string]
			for i := keys; i > keys-n && i > 0; i-- {
				want = append(want, KeyCount[string]{fmt.Sprint("k", i), i})
			}
			assert.Equal(t, want, p.TopKeys(n))
		})
	}

	// A completed operation's entries count until purged, as in Watched.
	op := newOp(time.Hour)
	_, err := p.TryCompleteElseWatch(op, "a", "b")
	require.NoError(t, err)
	require.True(t, op.ForceComplete())
	total := 0
	for _, kc := range p.TopKeys(keys + 10) {
		total += kc.Watched
	}
	assert.Equal(t, p.Watched(), total)
}
