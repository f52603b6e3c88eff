package timingwheel

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestMaxPendingStriped: WithMaxPending's places are cached per shard (see
// reserve), and the bound stays exact: a shard that stopped its timers
// keeps some of their places in its cache, and an arming on another shard
// that finds st.free empty collects them before it refuses, so it refuses
// only with exactly the bound pending.
func TestMaxPendingStriped(t *testing.T) {
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	const bound = 1000
	st := mustNew(t, WithMaxPending(bound))
	defer st.Stop()
	if len(st.shards) < 2 {
		t.Skip("one shard")
	}
	a, b := &st.shards[0], &st.shards[1]
	here := a
	st.placeHook = func() *shard { return here }

	armed := func(n int) []*Timer {
		t.Helper()
		var ts []*Timer
		for range n {
			tm, err := st.AfterFunc(time.Hour, noop)
			if err != nil {
				t.Fatalf("arming %d of %d on shard %d: %v", len(ts)+1, n, here.index(st), err)
			}
			ts = append(ts, tm)
		}
		return ts
	}
	// Shard a arms half the bound and stops it all: it keeps up to
	// 2×placeBatch of those places.
	for _, tm := range armed(bound / 2) {
		tm.Stop()
	}
	if a.places == 0 {
		t.Fatal("shard a caches no places after stopping its timers: the test tests nothing")
	}
	// Shard b arms the whole bound: the last ones come from a's cache.
	here = b
	held := armed(bound)
	if _, err := st.AfterFunc(time.Hour, noop); !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("arming past the bound: err = %v, want ErrTooManyPending", err)
	}
	if n := st.placesHeld(); n != bound {
		t.Fatalf("%d places held, want %d", n, bound)
	}
	// One stop frees one place, which the next arming on the other shard
	// gets, however low st.free is.
	held[0].Stop()
	here = a
	if _, err := st.AfterFunc(time.Hour, noop); err != nil {
		t.Fatalf("arming on shard a after a stop on shard b: %v", err)
	}
	if _, err := st.AfterFunc(time.Hour, noop); !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("arming past the bound again: err = %v, want ErrTooManyPending", err)
	}
	// A Ticker (a series, which takes its place at st.free) collects too.
	for _, tm := range held[1:200] {
		tm.Stop() // b caches some, gives the rest back
	}
	here = a
	for i := range 199 {
		if _, err := st.NewTicker(time.Hour); err != nil {
			t.Fatalf("Ticker %d of 199 freed places: %v", i+1, err)
		}
	}
	if _, err := st.NewTicker(time.Hour); !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("a Ticker past the bound: err = %v, want ErrTooManyPending", err)
	}
}

// index returns sh's index in st's shards.
func (sh *shard) index(st *SystemTimer) int {
	for i := range st.shards {
		if &st.shards[i] == sh {
			return i
		}
	}
	return -1
}
