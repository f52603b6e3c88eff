package debugpage

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestShort(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{time.Millisecond, "1ms"}, {500 * time.Millisecond, "500ms"}, {time.Second, "1s"},
		{30 * time.Second, "30s"}, {2 * time.Minute, "2m"}, {6 * time.Hour, "6h"},
		{24 * time.Hour, "1d"}, {10 * 24 * time.Hour, "10d"}, {1500 * time.Microsecond, "1.5ms"},
	} {
		assert.Equal(t, c.want, short(c.d), "%v", c.d)
	}
	for _, b := range dueBounds { // every bound has a short name
		assert.NotContains(t, short(b), ".", "%v", b)
	}
}

func TestNiceMax(t *testing.T) {
	for _, c := range []struct{ v, want float64 }{
		{-1, 1}, {0, 1}, {0.003, 0.005}, {0.0101, 0.02}, {1, 1}, {1.5, 2}, {3, 5}, {7, 10}, {10, 10}, {11, 20}, {499, 500}, {501, 1000},
	} {
		t.Run(fmt.Sprint(c.v), func(t *testing.T) {
			assert.InDelta(t, c.want, niceMax(c.v), c.want*1e-9)
		})
	}
}

// TestRing fills a ring past its capacity and checks the order.
func TestRing(t *testing.T) {
	var r ring[int]
	assert.Empty(t, r.all())
	for i := range samples + 7 {
		r.add(i)
		got := r.all()
		assert.Len(t, got, min(i+1, samples))
		assert.Equal(t, i, got[len(got)-1])
		assert.Equal(t, max(0, i+1-samples), got[0])
	}
}
