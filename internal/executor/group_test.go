package executor

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parkIn parks the first goroutine that reaches window (see windowHook)
// until resume is closed; parked is closed once it is there. The hook is
// cleared when the test ends.
func parkIn(t *testing.T, window string) (parked, resume chan struct{}) {
	parked, resume = make(chan struct{}), make(chan struct{})
	var once sync.Once
	windowHook = func(w string) {
		if w == window {
			once.Do(func() {
				close(parked)
				<-resume
			})
		}
	}
	t.Cleanup(func() { windowHook = nil })
	return parked, resume
}

// blockedPair is a group of two pools of one goroutine each, with a stall
// delay of an hour (the watch starts no goroutine: only stealing moves
// items between pools), whose pool 0 goroutine is blocked in item 0 until
// release is closed; other items are counted in ran. Called in a bubble.
func blockedPair() (g *Group[int], release chan struct{}, ran *atomic.Int32) {
	release, ran = make(chan struct{}), new(atomic.Int32)
	g = NewGroup(Config[int]{Workers: 2, Stall: time.Hour, Run: func(v int, _ *Batch) {
		if v == 0 {
			<-release
			return
		}
		ran.Add(1)
	}}, 2)
	synctest.Wait()     // both goroutines wait for work
	g.Pool(0).Submit(0) // blocks pool 0's goroutine
	synctest.Wait()
	return g, release, ran
}

// TestGroupSharesOut: Workers are shared out among the pools, at most one
// pool per worker, and a home's pool is its index mod the pools; a manual
// group has one pool.
func TestGroupSharesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		run := func(int, *Batch) {}
		for _, c := range []struct{ workers, homes, pools int }{
			{16, 16, 16}, {5, 4, 4}, {2, 8, 2}, {1, 4, 1}, {64, 4, 4},
		} {
			g := NewGroup(Config[int]{Workers: c.workers, Stall: time.Hour, Run: run}, c.homes)
			require.Equal(t, c.pools, g.Pools())
			total := 0
			for i, p := range g.pools {
				total += p.size
				assert.Same(t, p, g.Pool(i+c.pools))
			}
			assert.Equal(t, c.workers, total, "workers of %+v", c)
			synctest.Wait()
			_, gs, _ := g.Load()
			assert.Equal(t, c.workers, gs)
			assert.Empty(t, g.Close())
		}
		g := NewGroup(Config[int]{Workers: 8, Manual: true, Run: run}, 8)
		assert.Equal(t, 1, g.Pools())
		assert.Empty(t, g.Close())
	})
}

// TestGroupStealsFromABusyPool: items submitted to a pool whose one
// goroutine blocks run on the other pool's goroutine, which was waiting
// for work: the Submit pokes it and it steals them. The stall delay is an
// hour, so the watch starts no goroutine: only stealing runs them.
func TestGroupStealsFromABusyPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, release, ran := blockedPair()
		defer g.Close()
		defer close(release)
		p := g.Pool(0)
		for i := 1; i <= 40; i++ {
			p.Submit(i)
		}
		synctest.Wait()
		assert.Equal(t, int32(40), ran.Load(), "items run by the other pool's goroutine")
	})
}

// TestGroupSubmitGivesToAFreeGoroutine: each Submit to a pool whose one
// goroutine blocks gives its item to the free goroutine of the other pool
// at once, also while the watch already looks at the pool (its next look
// is a quarter of the stall delay, an hour, away).
func TestGroupSubmitGivesToAFreeGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, release, ran := blockedPair()
		defer g.Close()
		defer close(release)
		for i := int32(1); i <= 3; i++ {
			g.Pool(0).Submit(int(i))
			synctest.Wait()
			assert.Equal(t, i, ran.Load(), "items run by pool 1's goroutine")
		}
	})
}

// TestGroupStealsWhenFree: a goroutine busy when the items were submitted
// steals them once it is free, without another Submit to poke it.
func TestGroupStealsWhenFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
		var ran atomic.Int32
		g := NewGroup(Config[int]{Workers: 2, Stall: time.Hour, Run: func(v int, _ *Batch) {
			if v < 2 {
				<-release[v]
				return
			}
			ran.Add(1)
		}}, 2)
		defer g.Close()
		defer close(release[0])
		synctest.Wait()
		g.Pool(0).Submit(0)
		g.Pool(1).Submit(1)
		synctest.Wait() // both goroutines blocked
		for i := 2; i < 42; i++ {
			g.Pool(0).Submit(i)
		}
		synctest.Wait()
		require.Zero(t, ran.Load())
		close(release[1])
		synctest.Wait()
		assert.Equal(t, int32(40), ran.Load(), "items pool 1's goroutine stole once free")
	})
}

// TestGroupOneStuckStartsOne: one item that blocks in a pool of one
// goroutine, while the other pools' goroutines make progress, leaves one
// goroutine beyond Workers once the work is done, as one stuck worker of
// a single pool does. (Meanwhile the items still queued on that pool when
// its goroutine is found stuck get a goroutine each, since all of the
// pool's goroutines are stuck; they exit once the queue is empty.)
func TestGroupOneStuckStartsOne(t *testing.T) {
	const stall = time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		g := NewGroup(Config[int]{Workers: 4, Stall: stall, Run: func(v int, _ *Batch) {
			if v == 0 {
				<-release
				return
			}
			time.Sleep(stall / 10) // slow, never stuck
		}}, 4)
		defer g.Close()
		defer close(release)
		synctest.Wait()
		g.Pool(0).Submit(0)
		synctest.Wait()
		for i := 1; i <= 400; i++ {
			g.Pool(0).Submit(i)
		}
		time.Sleep(20 * stall)
		synctest.Wait()
		_, gs, _ := g.Load()
		assert.LessOrEqual(t, gs, 5, "goroutines that run items: the workers and one for the stuck one")
	})
}

// TestGroupCloseHandsBackEverything: submitters on every pool and Close at
// a random moment, with goroutines stealing from each other: every item
// either ran once or came back from Close once, and no goroutine is left.
func TestGroupCloseHandsBackEverything(t *testing.T) {
	for round := range 40 {
		var mu sync.Mutex
		ran := map[int]int{}
		g := NewGroup(Config[int]{Workers: 4, Stall: 100 * time.Microsecond, Run: func(v int, _ *Batch) {
			if v%97 == 0 {
				time.Sleep(200 * time.Microsecond) // stuck now and then
			}
			mu.Lock()
			ran[v]++
			mu.Unlock()
		}}, 4)
		var wg sync.WaitGroup
		var accepted sync.Map
		for s := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 2000 {
					v := s*1_000_000 + i
					if g.Pool(rand.IntN(4)).Submit(v) {
						accepted.Store(v, true)
					}
					if i%64 == 0 {
						runtime.Gosched()
					}
				}
			}()
		}
		if round%2 == 0 {
			runtime.Gosched()
		}
		left := g.Close()
		wg.Wait()
		back := map[int]int{}
		for _, v := range left {
			back[v]++
		}
		mu.Lock()
		accepted.Range(func(k, _ any) bool {
			v := k.(int)
			if ran[v]+back[v] != 1 {
				t.Errorf("round %d: item %d ran %d times and came back %d times", round, v, ran[v], back[v])
			}
			return true
		})
		for v, n := range ran {
			if _, ok := accepted.Load(v); !ok || n != 1 {
				t.Errorf("round %d: item %d ran %d times (accepted %v)", round, v, n, ok)
			}
		}
		mu.Unlock()
	}
}

// TestGroupStealWindowClose parks a thief between letting go of its own
// lock and taking both pools', closes the group meanwhile, and checks that
// the items it was about to steal are handed back by Close and none is run
// or lost. Pool 1's goroutine is given item 1 by the Submit, runs it, and
// then comes to steal the others.
func TestGroupStealWindowClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parked, resume := parkIn(t, "steal")
		g, release, ran := blockedPair()
		g.Pool(0).Submit(1, 2, 3, 4)
		<-parked
		closed := make(chan []int)
		go func() { closed <- g.Close() }()
		synctest.Wait() // Close waits for pool 0's blocked item
		close(release)
		synctest.Wait() // pool 0 closed; Close now waits for the thief of pool 1
		close(resume)
		left := <-closed
		slices.Sort(left)
		assert.Equal(t, []int{2, 3, 4}, left)
		assert.Equal(t, int32(1), ran.Load(), "items run: the one given to pool 1")
		assert.Zero(t, poolGoroutines())
	})
}

// TestGroupGiveWindowClose parks a Submit that found a free goroutine of
// pool 1 before it takes both pools' locks to give it an item, and closes
// the group meanwhile: the item must come back from Close, and not go to
// pool 1, where nothing would run it or hand it back.
func TestGroupGiveWindowClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, release, ran := blockedPair()
		parked, resume := parkIn(t, "give")
		submitted := make(chan bool)
		go func() { submitted <- g.Pool(0).Submit(1) }()
		<-parked
		left := g.Shut()
		close(resume)
		assert.True(t, <-submitted)
		close(release)
		g.Wait()
		assert.Equal(t, []int{1}, left, "the item, handed back by the pool it never left")
		assert.Zero(t, ran.Load())
		assert.Zero(t, poolGoroutines())
	})
}

// TestGroupLookWindowShut parks a watch that has fired before it takes its
// pool's lock, and shuts the group meanwhile: Shut cannot stop the timer,
// which has fired, and leaves ending the watch to that look. Wait must wait
// for the look, and the look must find nothing waiting and start nothing.
func TestGroupLookWindowShut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parked, resume := parkIn(t, "look")
		b := newBlocker()
		defer b.stop()
		g := New(Config[int]{Workers: 1, Stall: time.Millisecond, Run: b.run})
		synctest.Wait()
		g.Submit(0, 1) // the goroutine blocks in 0 and 1 waits: the watch is set
		<-parked       // a quarter of the stall delay later it fires
		assert.Equal(t, []int{1}, g.Shut())
		waited := make(chan struct{})
		go func() { g.Wait(); close(waited) }()
		b.stop() // item 0 returns, and its goroutine exits
		synctest.Wait()
		select {
		case <-waited:
			t.Fatal("Wait returned while a look was still to run")
		default:
		}
		close(resume)
		<-waited
		synctest.Wait()
		assert.Zero(t, poolGoroutines(), "goroutines left")
		assert.Equal(t, 1, b.count(), "items started")
	})
}

// TestGroupIdleWindowSubmit parks a goroutine of pool 1 after it found
// nothing to steal and before it says that it waits, and submits items to
// pool 0, whose one goroutine blocks, meanwhile: the Submit sees no
// goroutine waiting and pokes none, so the goroutine must see the items
// itself once it says that it waits. The stall delay is an hour: nothing
// else runs them.
func TestGroupIdleWindowSubmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, release, ran := blockedPair()
		defer g.Close()
		defer close(release)
		parked, resume := parkIn(t, "idle")
		g.Pool(1).Submit(1) // pool 1's goroutine runs it, then finds nothing
		<-parked
		for i := 2; i < 10; i++ {
			g.Pool(0).Submit(i)
		}
		close(resume)
		synctest.Wait()
		assert.Equal(t, int32(9), ran.Load(), "items run by pool 1's goroutine")
	})
}

// TestGroupLateThiefTakesOne: a goroutine that comes free late, after the
// items it finds have waited behind a goroutine stuck for most of the
// stall delay, steals one of them, not half: they may block as the
// stuck goroutine's did, and those behind one in its batch would wait for
// the stall delay of a goroutine that started it only now. Every item
// blocks and must start within the stall delay of its submission.
func TestGroupLateThiefTakesOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		thiefCase(t, 12, func() { time.Sleep(thiefStall * 9 / 10) }, nil) // slow, not stuck
	})
}

const thiefStall = time.Millisecond

// thiefCase submits items 0 to n-1 to pool 0 of a group of two pools of
// one goroutine each, every item blocking (a blocker), while pool 1's
// goroutine is in an item that runs busy; it calls then (if not nil) after
// the Submit, and checks that every item starts within the stall delay of
// its submission.
func thiefCase(t *testing.T, n int, busy, then func()) {
	t.Helper()
	b := newBlocker()
	g := NewGroup(Config[int]{Workers: 2, Stall: thiefStall, Run: func(v int, bt *Batch) {
		if v < 0 {
			busy()
			return
		}
		b.run(v, bt)
	}}, 2)
	defer g.Close()
	defer b.stop()
	synctest.Wait()
	g.Pool(1).Submit(-1)
	g.Pool(0).Submit(0)
	synctest.Wait()
	start := time.Now()
	g.Pool(0).Submit(ints(n)[1:]...)
	if then != nil {
		then()
	}
	time.Sleep(10 * thiefStall)
	assert.Equal(t, n, b.count(), "items started")
	b.mu.Lock()
	defer b.mu.Unlock()
	for v, at := range b.started {
		assert.LessOrEqual(t, at.Sub(start), thiefStall, "item %d held up by blocked ones", v)
	}
}

// TestGroupTakeLeavesAShare: a goroutine taking a batch leaves a share of
// the queue to a goroutine of another pool that waits for work and is
// about to be given items by the Submit, as it would to one of its own
// pool on its way: it must not take both items, the first of which
// blocks. The Submit is held in the give window until the first item has
// started, so that the taker always comes first. The stall delay is an
// hour: nothing else would start the second item.
func TestGroupTakeLeavesAShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan int, 2)
		release := make(chan struct{})
		g := NewGroup(Config[int]{Workers: 2, Stall: time.Hour, Run: func(v int, _ *Batch) {
			started <- v
			<-release
		}}, 2)
		defer g.Close()
		defer close(release)
		synctest.Wait() // both goroutines wait for work
		parked, resume := parkIn(t, "give")
		go g.Pool(0).Submit(0, 1)
		<-parked
		first := <-started
		close(resume)
		synctest.Wait()
		select {
		case v := <-started:
			assert.Equal(t, 1-first, v)
		default:
			t.Error("the second item did not start: the first goroutine took both")
		}
	})
}

// TestGroupStolenBatchIsWatched: a thief that steals several items takes
// them as one batch, on a pool the watch was not looking at. The first
// blocks: the others must start within the stall delay, so taking a batch
// of more than one item has the watch look at the thief's pool. Pool 1's
// goroutine is busy when the items are submitted to pool 0, whose goroutine
// blocks, then comes free at once and steals half of them; every item
// blocks.
func TestGroupStolenBatchIsWatched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		free := make(chan struct{})
		thiefCase(t, 9, func() { <-free }, func() { close(free) })
	})
}

// TestStallBoundWhenALookIsLate: a watch fires late (a busy processor),
// and so do the looks it sets a quarter of the stall delay after it; the
// one due when a goroutine is to be stuck is set for that moment, so that
// items behind one that blocks still start within the stall delay. The
// first look is an eighth of it late; the pool's one goroutine blocks.
func TestStallBoundWhenALookIsLate(t *testing.T) {
	const stall = time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		var once sync.Once
		windowHook = func(w string) {
			if w == "look" {
				once.Do(func() { time.Sleep(stall / 8) })
			}
		}
		t.Cleanup(func() { windowHook = nil })
		b := newBlocker()
		p := New(Config[int]{Workers: 1, Stall: stall, Run: b.run})
		defer p.Close()
		defer b.stop()
		synctest.Wait()
		start := time.Now()
		p.Submit(0, 1, 2) // the goroutine blocks in 0: the watch is set
		time.Sleep(10 * stall)
		assert.Equal(t, 3, b.count(), "items started")
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, v := range []int{1, 2} {
			assert.LessOrEqual(t, b.started[v].Sub(start), stall, "item %d held up by item 0", v)
		}
	})
}

// TestGroupStealTakesHalfAtMostStealMax: a thief takes half of another
// pool's spare items, but at most stealMax, so that it holds the victim's
// lock (which the victim's Submit, a shard's driver, waits for) for a
// bounded copy, and a storm's queue is not moved back and forth in halves
// between pools. Both pools' goroutines block in an item, so that only the
// test's steal moves items; the stall delay is an hour, so no pool is aged.
func TestGroupStealTakesHalfAtMostStealMax(t *testing.T) {
	for _, c := range []struct{ spare, took int }{{11, 6}, {4*stealMax + 1, stealMax}} {
		synctest.Test(t, func(t *testing.T) {
			g, release, _ := blockedPair()
			defer g.Close()
			defer close(release)
			victim, thief := g.Pool(0), g.Pool(1)
			thief.Submit(0) // blocks pool 1's goroutine too
			synctest.Wait()
			victim.Submit(ints(c.spare + 1)[1:]...)
			thief.mu.Lock()
			require.True(t, thief.steal(), "a steal with %d spare", c.spare)
			took := thief.queue.Len()
			thief.mu.Unlock()
			victim.mu.Lock()
			left := victim.queue.Len()
			victim.mu.Unlock()
			assert.Equal(t, c.took, took, "items stolen of %d", c.spare)
			assert.Equal(t, c.spare-c.took, left, "items left to the victim")
		})
	}
}
