package timingwheel

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/testwait"
)

// TestMaxPendingStriped: WithMaxPending's places are cached per shard (see
// reserve), and the bound stays exact: a shard that stopped its timers
// keeps some of their places in its cache, and an arming on another shard
// that finds st.free empty collects them before it refuses, so it refuses
// only with exactly the bound pending.
func TestMaxPendingStriped(t *testing.T) {
	const bound = 1000
	st, here := boundedOnShards(t, bound)
	a, b := &st.shards[0], &st.shards[1]
	*here = a

	armed := func(n int) []*Timer {
		t.Helper()
		var ts []*Timer
		for range n {
			tm, err := st.AfterFunc(time.Hour, noop)
			if err != nil {
				t.Fatalf("arming %d of %d on shard %d: %v", len(ts)+1, n, (*here).index(st), err)
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
	*here = b
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
	*here = a
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
	*here = a
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

// TestMaxPendingPeriodicRunAtStop: a periodic series whose run is under way
// when SystemTimer.Stop closes the shards ends with the SystemTimer, and
// gives its place in the bound back: were it kept, a locked TryReset that
// found the bound full across that Stop would look again for ever
// (TestConcurrentWindowReserveVsSystemStop, with failpoints).
func TestMaxPendingPeriodicRunAtStop(t *testing.T) {
	st := mustNew(t, WithMaxPending(1))
	started, gate := periodicHeld(t, st)
	<-started
	stopped := make(chan struct{})
	go func() {
		st.Stop()
		close(stopped)
	}()
	for !st.closed.Load() {
		runtime.Gosched() // Stop waits for the run: let it close the shards first
	}
	close(gate)
	testwait.Recv(t, stopped, "SystemTimer.Stop")
	if n := st.placesHeld(); n != 0 {
		t.Fatalf("%d places held after SystemTimer.Stop returned, with a series run under way at Stop: want 0", n)
	}
}

// periodicHeld starts a series every millisecond on st whose first run
// closes started and waits for gate to close: while it waits, the series
// holds its place in the bound, fired.
func periodicHeld(t *testing.T, st *SystemTimer) (started, gate chan struct{}) {
	t.Helper()
	started, gate = make(chan struct{}), make(chan struct{})
	var once sync.Once
	if _, err := st.ScheduleFunc(Every(time.Millisecond), func() {
		once.Do(func() {
			close(started)
			<-gate
		})
	}); err != nil {
		t.Fatal(err)
	}
	return started, gate
}

// TestMaxPendingPeriodicRestartOwnPlaces: a periodic timer restarted by
// Reset after its series was stopped takes its place under its shard's
// lock, where it cannot collect other shards' places (the documented
// exception): it takes one its own shard keeps, and is not refused, as one
// that looked at the shared count alone would be, while its own shard
// keeps 31 free places.
func TestMaxPendingPeriodicRestartOwnPlaces(t *testing.T) {
	const bound = 200
	st, here := boundedOnShards(t, bound)
	b, c := &st.shards[1], &st.shards[2]
	*here = b
	p, err := st.ScheduleFunc(Every(time.Hour), noop)
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
	// b arms and stops 40: it keeps some of their places.
	var ts []*Timer
	for range 40 {
		tm, err := st.AfterFunc(time.Hour, noop)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tm)
	}
	for _, tm := range ts {
		tm.Stop()
	}
	// c takes every place that is not b's.
	*here = c
	for st.free.Load() > 0 || c.places > 0 {
		if _, err := st.AfterFunc(time.Hour, noop); err != nil {
			t.Fatal(err)
		}
	}
	if b.places == 0 {
		t.Fatal("shard b keeps no places: the test tests nothing")
	}
	if _, err := p.TryReset(time.Hour); err != nil {
		t.Fatalf("restarting a periodic timer on a shard that keeps %d free places: %v (%d of %d places held)", b.places, err, st.placesHeld(), bound)
	}
}

// boundedOnShards returns a SystemTimer of 4 shards under WithMaxPending(bound),
// stopped when the test ends, whose timers go to the shard *here names
// (placeHook), at first shard 0.
func boundedOnShards(t *testing.T, bound int) (st *SystemTimer, here **shard) {
	t.Helper()
	old := runtime.GOMAXPROCS(4)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
	st = mustNew(t, WithMaxPending(bound))
	t.Cleanup(func() { st.Stop() })
	if len(st.shards) < 4 {
		t.Skip("fewer than 4 shards")
	}
	to := &st.shards[0]
	st.placeHook = func() *shard { return to }
	return st, &to
}

// TestMaxPendingResetFollows: under WithMaxPending a Reset that re-arms a
// bound timer (stopped, or fired) moves it to the shard of the processor
// that re-arms it, as without the bound, and takes its place in the bound
// there; stopping it gives the place back. Before follow, the timer stayed
// on the shard it was first armed on, and every later Reset and Stop from
// another processor locked that shard.
func TestMaxPendingResetFollows(t *testing.T) {
	const bound = 64
	st, here := boundedOnShards(t, bound)
	var tm Timer
	ran := make(chan struct{}, 1)
	st.Bind(&tm, func() { ran <- struct{}{} })
	if _, err := tm.TryReset(time.Hour); err != nil {
		t.Fatal(err)
	}
	if tm.shard() != &st.shards[0] || !tm.Stop() {
		t.Fatal("the timer was not armed on shard 0")
	}
	*here = &st.shards[1]
	if _, err := tm.TryReset(time.Hour); err != nil {
		t.Fatal(err)
	}
	if sh := tm.shard(); sh != &st.shards[1] {
		t.Fatalf("a stopped timer re-armed under WithMaxPending stayed on shard %d, not the processor's shard 1", sh.index(st))
	}
	if n := st.Len(); n != 1 {
		t.Fatalf("Len = %d, want 1", n)
	}
	// Fired, then re-armed from shard 2's processor.
	if _, err := tm.TryReset(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, ran, "the timer's run")
	*here = &st.shards[2]
	if _, err := tm.TryReset(time.Hour); err != nil {
		t.Fatal(err)
	}
	if sh := tm.shard(); sh != &st.shards[2] {
		t.Fatalf("a fired timer re-armed under WithMaxPending stayed on shard %d, not the processor's shard 2", sh.index(st))
	}
	if !tm.Stop() {
		t.Fatal("Stop of a timer armed an hour out returned false")
	}
	if held := st.placesHeld(); held != 0 {
		t.Fatalf("%d places of the bound held after the only timer stopped", held)
	}
	if s := st.Stats(); s.Migrated < 2 {
		t.Fatalf("Stats.Migrated = %d, want at least the 2 moves", s.Migrated)
	}
}

// TestMaxPendingExactAtRefusal: random armings and stops of timers and
// Tickers, and re-arms of bound timers, on four shards, under bounds small
// and large against the shards' caches: every arming succeeds while fewer
// than the bound are held, and is refused only with exactly the bound
// held. A bound that refuses before it is reached (a cache that keeps
// places another shard needs, a take that wants more than is free) fails
// here.
func TestMaxPendingExactAtRefusal(t *testing.T) {
	for _, bound := range []int{1, 2, 3, 17, 40, 100} {
		t.Run(fmt.Sprint("bound=", bound), func(t *testing.T) {
			st, here := boundedOnShards(t, bound)
			rng := rand.New(rand.NewPCG(uint64(bound), 36))
			type held struct {
				stop func() bool
			}
			var hold []held
			bound2 := make([]Timer, 8) // bound timers, re-armed by Reset
			for i := range bound2 {
				st.Bind(&bound2[i], noop)
			}
			armed := make([]bool, len(bound2))
			count := func() int {
				n := len(hold)
				for _, a := range armed {
					if a {
						n++
					}
				}
				return n
			}
			for op := range 3000 {
				*here = &st.shards[rng.IntN(4)]
				before := count()
				var err error
				switch r := rng.IntN(10); {
				case r < 4:
					var tm *Timer
					if tm, err = st.AfterFunc(time.Hour, noop); err == nil {
						hold = append(hold, held{tm.Stop})
					}
				case r < 5:
					var tk *Ticker
					if tk, err = st.NewTicker(time.Hour); err == nil {
						hold = append(hold, held{func() bool { tk.Stop(); return true }})
					}
				case r < 7:
					i := rng.IntN(len(bound2))
					if armed[i] {
						continue
					}
					if _, err = bound2[i].TryReset(time.Hour); err == nil {
						armed[i] = true
					}
				case r < 9 && len(hold) > 0:
					i := rng.IntN(len(hold))
					if !hold[i].stop() {
						t.Fatalf("op %d: Stop of a timer pending an hour out returned false", op)
					}
					hold = slices.Delete(hold, i, i+1)
					continue
				default:
					i := rng.IntN(len(bound2))
					if armed[i] {
						bound2[i].Stop()
						armed[i] = false
					}
					continue
				}
				switch {
				case err == nil && before >= bound:
					t.Fatalf("op %d: armed with %d held, bound %d", op, before, bound)
				case err != nil && !errors.Is(err, ErrTooManyPending):
					t.Fatalf("op %d: %v", op, err)
				case err != nil && before < bound:
					t.Fatalf("op %d: refused with %d held, bound %d", op, before, bound)
				}
			}
		})
	}
}
