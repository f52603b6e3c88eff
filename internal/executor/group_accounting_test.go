package executor

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestGroupCloseFromCallbacksOfTwoPools: a callback of pool 1 closes
// the group; then a callback of pool 0 closes it too. For a Pool, a later
// Close returns nil at once, so the second callback returns and the first
// Close completes. For a Group, the second Close skips pool 0 (closed) and
// waits in pool 1's Close for the first caller, which waits in pool 0's
// Close for the second: both block for ever.
func TestGroupCloseFromCallbacksOfTwoPools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g *Group[int]
		goA, goB := make(chan struct{}), make(chan struct{})
		doneA, doneB := make(chan []int, 1), make(chan []int, 1)
		g = NewGroup(Config[int]{Workers: 2, Stall: time.Hour, Run: func(v int, _ *Batch) {
			switch v {
			case 0:
				<-goA
				doneA <- g.Close()
			case 1:
				<-goB
				doneB <- g.Close()
			}
		}}, 2)
		synctest.Wait()
		g.Pool(1).Submit(0) // runs on pool 1's goroutine
		g.Pool(0).Submit(1) // runs on pool 0's goroutine
		synctest.Wait()
		close(goA) // pool 1's callback: Close waits in pool 0 for the other callback
		synctest.Wait()
		close(goB) // pool 0's callback: Close should return nil at once
		synctest.Wait()
		select {
		case <-doneB:
		default:
			t.Fatal("the second Close, from a callback of pool 0, never returns: it waits in pool 1's Close for the first caller")
		}
		<-doneA
	})
}

// TestGroupStaleFreeHintStrandsItem: a goroutine of pool 1 that was woken
// for an item (coming) finds the item taken by a goroutine of its pool that
// came back from being stuck, and exits as one too many: it decrements
// coming without note(), so pool 1's hint keeps showing one free goroutine
// that does not exist. Pool 0's watch then counts it in replace (pokes
// instead of spawning), the poke finds nobody, and an item of pool 0 whose
// only goroutine blocks never starts, look after look, far beyond the
// stall delay.
//
// GOMAXPROCS(1) (and no GC) makes the order deterministic: a goroutine that
// is readied runs only when the running one blocks.
func TestGroupStaleFreeHintStrandsItem(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const stall = time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		var g *Group[int]
		relA, relB1, relB3 := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var xRan atomic.Bool
		g = NewGroup(Config[int]{Workers: 2, Stall: stall, Run: func(v int, _ *Batch) {
			switch v {
			case 0: // pool 0's goroutine blocks
				<-relA
			case 1: // pool 1's goroutine blocks until stuck, then
				// submits b3 to its pool and returns: it takes b3 itself
				<-relB1
				g.Pool(1).Submit(3)
			case 2: // short: run by the goroutine pool 1's watch starts
			case 3:
				<-relB3
			case 9:
				xRan.Store(true)
			}
		}}, 2)
		defer g.Close()
		defer close(relB3)
		defer close(relA)
		synctest.Wait()
		g.Pool(0).Submit(0)
		synctest.Wait()
		g.Pool(1).Submit(1)
		synctest.Wait()
		g.Pool(1).Submit(2)
		time.Sleep(3 * stall) // pool 1's watch replaces its stuck goroutine, whose replacement runs 2 and waits
		synctest.Wait()
		q := g.pools[1]
		q.mu.Lock()
		gs, stuck, idle := len(q.workers), q.stuck, q.idle
		q.mu.Unlock()
		if gs != 2 || stuck != 1 || idle != 1 {
			t.Fatalf("setup: pool 1 gs=%d stuck=%d idle=%d, want 2 1 1", gs, stuck, idle)
		}
		close(relB1)
		synctest.Wait()
		q.mu.Lock()
		gs, idle, coming, queued := len(q.workers), q.idle, q.coming, q.queue.Len()
		q.mu.Unlock()
		free := q.freeHint.Load()
		t.Logf("pool 1: gs=%d idle=%d coming=%d queued=%d; hint free=%d", gs, idle, coming, queued, free)
		g.Pool(0).Submit(9)
		time.Sleep(100 * stall)
		if !xRan.Load() {
			t.Errorf("item 9 of pool 0 not started after 100 stall delays (its only goroutine blocks; pool 1's hint says free=%d, but pool 1 has idle=%d coming=%d)", free, idle, coming)
		}
	})
}

// TestGroupPokeAbsorbedByOwnItem: a Submit to pool 0 (whose goroutine
// blocks) pokes pool 1's waiting goroutine; before it comes, pool 1's own
// Submit counts it as coming for its own item, and pokes nobody. Pool 1's
// goroutine takes pool 1's item; pool 2's goroutine waits while pool 0's
// item waits. The stall delay is an hour: nothing but the watch's next look
// (a quarter of it) runs the item.
func TestGroupPokeAbsorbedByOwnItem(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var xRan atomic.Bool
		g := NewGroup(Config[int]{Workers: 3, Stall: time.Hour, Run: func(v int, _ *Batch) {
			switch v {
			case 0, 1:
				<-release
			case 9:
				xRan.Store(true)
			}
		}}, 3)
		defer g.Close()
		defer close(release)
		synctest.Wait()
		g.Pool(0).Submit(0) // pool 0's goroutine blocks
		synctest.Wait()
		g.Pool(0).Submit(9) // pokes pool 1's waiting goroutine
		g.Pool(1).Submit(1) // pool 1's own item: it counts the poked goroutine as coming for it
		synctest.Wait()
		z := g.pools[2]
		z.mu.Lock()
		idle := z.idle
		z.mu.Unlock()
		if !xRan.Load() {
			t.Errorf("item 9 waits in pool 0 while pool 2 has %d goroutine(s) waiting for work", idle)
		}
	})
}

// TestGroupPokeCountsOneComingTwice: Submits to two pools whose
// goroutines block each poke pool 1, whose one goroutine waits for work.
// The first poke wakes it; the second finds it coming (coming > queued)
// and wakes nobody, relying on it too. It steals one pool's item, which
// blocks; the other pool's item waits while pool 2's goroutine waits for
// work.
// The stall delay is an hour.
func TestGroupPokeCountsOneComingTwice(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var ran atomic.Int32
		g := NewGroup(Config[int]{Workers: 4, Stall: time.Hour, Run: func(v int, _ *Batch) {
			if v < 10 {
				<-release
				return
			}
			ran.Add(1)
		}}, 4)
		defer g.Close()
		defer close(release)
		synctest.Wait()
		g.Pool(0).Submit(0) // pool 0's goroutine blocks
		g.Pool(3).Submit(3) // pool 3's goroutine blocks
		synctest.Wait()
		g.Pool(0).Submit(10) // pokes pool 1: its goroutine is signalled
		g.Pool(3).Submit(5)  // pokes pool 1 again (order 0, 1, 2): coming > queued, nobody signalled
		synctest.Wait()      // pool 1's goroutine steals 5 (pool 3 comes first from pool 1), which blocks
		z := g.pools[2]
		z.mu.Lock()
		idle := z.idle
		z.mu.Unlock()
		if ran.Load() == 0 {
			t.Errorf("item 10 waits in pool 0 (pool 1's goroutine runs 5, which blocks) while pool 2 has %d goroutine(s) waiting for work", idle)
		}
	})
}
