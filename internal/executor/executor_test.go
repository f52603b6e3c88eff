package executor

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The tests' bounds are exact in synctest bubbles: the count of
	// runnable goroutines, which other goroutines of the process move,
	// must not change what the watch does (TestSpawnsWhenBusy sets Busy).
	defaultBusy = func() bool { return false }
	goleak.VerifyTestMain(m)
}

// poolGoroutines counts the goroutines, other than the caller, that run pool
// code. It looks once, without waiting.
func poolGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i > 0 && (strings.Contains(g, "executor.(*Pool") || strings.Contains(g, "executor.(*Group")) {
			n++
		}
	}
	return n
}

// runGoroutines counts the goroutines, the caller included, that run
// items: every pool goroutine but the watch.
func runGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "executor.(*Pool[...]).loop(") || strings.Contains(g, "executor.(*Pool[...]).helper(") {
			n++
		}
	}
	return n
}

// blocker runs items that block until release is closed, and records when
// each started.
type blocker struct {
	mu      sync.Mutex
	started map[int]time.Time
	release chan struct{}
	once    sync.Once
}

func newBlocker() *blocker {
	return &blocker{started: map[int]time.Time{}, release: make(chan struct{})}
}

func (b *blocker) run(v int, _ *Batch) {
	b.mu.Lock()
	b.started[v] = time.Now()
	b.mu.Unlock()
	<-b.release
}

// stop releases the items, once; tests defer it, so that a failed
// check does not leave goroutines blocked in the bubble.
func (b *blocker) stop() { b.once.Do(func() { close(b.release) }) }

func (b *blocker) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.started)
}

func ints(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestSubmitWakesEveryWorkerTheQueueNeeds: a Submit wakes as many idle
// workers as there are queued items, not about half of them. The stall
// delay is an hour, so that only the workers Submit wakes can start items.
func TestSubmitWakesEveryWorkerTheQueueNeeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBlocker()
		p := New(Config[int]{Workers: 4, Stall: time.Hour, Run: b.run})
		defer p.Close()
		defer b.stop()
		synctest.Wait() // every worker is idle
		p.Submit(ints(4 * batchMax)...)
		synctest.Wait()
		assert.Equal(t, 4, b.count(), "items started by the workers one Submit woke")
		b.stop()
		synctest.Wait()
		assert.Empty(t, p.Close())
	})
}

// TestWorkSpreadsOverWokenWorkers: the queue is shared among the workers
// woken for it, instead of the first taking a whole batch while the others
// find nothing. Every item blocks, and the stall delay is an hour, so each
// woken worker starts exactly one item: the first of its batch. The same
// for a group of a pool per worker whose items all go to one pool: a storm
// on one home runs on every worker, not on its own and the next one's.
func TestWorkSpreadsOverWokenWorkers(t *testing.T) {
	for _, group := range []bool{false, true} {
		for _, c := range []struct{ workers, items int }{{8, 8}, {4, 10}, {2, 3}} {
			t.Run(fmt.Sprintf("group=%v/workers=%d/items=%d", group, c.workers, c.items), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					b := newBlocker()
					homes := 1
					if group {
						homes = c.workers
					}
					p := NewGroup(Config[int]{Workers: c.workers, Stall: time.Hour, Run: b.run}, homes)
					defer p.Close()
					defer b.stop()
					synctest.Wait()
					p.Submit(ints(c.items)...) // to pool 0
					synctest.Wait()
					assert.Equal(t, c.workers, b.count(), "workers that started an item")
					b.stop()
					synctest.Wait()
					assert.Empty(t, p.Close())
				})
			})
		}
	}
}

// TestBlockedItemsAllStartWithinStall: N items submitted together that all
// block (a network write to a dead peer) all start within the stall delay
// of their submission, with 8 workers and with 2: goroutines stuck in an
// item are replaced at once, not one per stall delay. In a synctest bubble
// only timers move the clock, so the bound is exact. Once released, the
// goroutines added go away, down to the workers. The same for a group whose
// items all go to one pool while the other pools' goroutines are free (a
// thief that comes free late takes one item, and a taker leaves a share:
// see Group).
func TestBlockedItemsAllStartWithinStall(t *testing.T) {
	const stall = time.Millisecond
	for _, group := range []bool{false, true} {
		for _, workers := range []int{8, 2} {
			for _, n := range []int{8, 40, 200} {
				for _, oneByOne := range []bool{false, true} {
					if group && !oneByOne {
						continue
					}
					name := fmt.Sprintf("group=%v/workers=%d/N=%d/oneByOne=%v", group, workers, n, oneByOne)
					t.Run(name, func(t *testing.T) {
						synctest.Test(t, func(t *testing.T) {
							b := newBlocker()
							c := Config[int]{Workers: workers, Stall: stall, Run: b.run}
							var p interface {
								Submit(...int) bool
								Close() []int
							}
							if group {
								// Every item to one pool of
								// the group, the other pools'
								// goroutines free (see Group).
								p = pool0{NewGroup(c, workers)}
							} else {
								p = New(c)
							}
							defer p.Close()
							defer b.stop()
							synctest.Wait()
							start := time.Now()
							if oneByOne {
								for i := range n {
									p.Submit(i)
								}
							} else {
								p.Submit(ints(n)...)
							}
							time.Sleep(10 * stall)
							assert.Equal(t, n, b.count(), "items started")
							for v, at := range b.started {
								assert.LessOrEqual(t, at.Sub(start), stall, "item %d held up by blocked ones", v)
							}
							b.stop()
							synctest.Wait()
							assert.Equal(t, workers, runGoroutines(), "goroutines left once nothing blocks")
							assert.Empty(t, p.Close())
						})
					})
				}
			}
		}
	}
}

// pool0 submits to a group's pool 0.
type pool0 struct{ *Group[int] }

func (g pool0) Submit(items ...int) bool { return g.Pool(0).Submit(items...) }

// TestWorkBehindAnItemThatBlocksMidBatch: the items of a batch behind one
// that blocks start within the stall delay of when it started, also when
// it is not the batch's first item and when a slow one (not stuck) came
// before it.
func TestWorkBehindAnItemThatBlocksMidBatch(t *testing.T) {
	const stall = time.Millisecond
	for _, c := range []struct {
		name string
		slow time.Duration // how long item 0 takes
		at   int           // the item that blocks
	}{
		{"short items before", 0, 5},
		{"a slow item before", 6 * stall / 10, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				started := map[int]time.Time{}
				release := make(chan struct{})
				p := New(Config[int]{Workers: 1, Stall: stall, Run: func(v int, _ *Batch) {
					mu.Lock()
					started[v] = time.Now()
					mu.Unlock()
					if v == 0 {
						time.Sleep(c.slow)
					}
					if v == c.at {
						<-release
					}
				}})
				defer p.Close()
				var once sync.Once
				stop := func() { once.Do(func() { close(release) }) }
				defer stop()
				synctest.Wait()
				p.Submit(ints(batchMax)...)
				time.Sleep(10 * stall)
				mu.Lock()
				assert.Len(t, started, batchMax, "items started")
				blocked := started[c.at]
				for v := c.at + 1; v < batchMax; v++ {
					assert.LessOrEqual(t, started[v].Sub(blocked), stall, "item %d held up by item %d", v, c.at)
				}
				mu.Unlock()
				stop()
				assert.Empty(t, p.Close())
			})
		})
	}
}

// TestShortItemsStartNoGoroutine: items that never stay in one item for the
// stall delay, short ones and slow ones (half the stall delay each), never
// make the pool start a goroutine, however long the queue: only stuck
// goroutines are replaced. Every item counts the goroutines that run items.
// Before wave 3 the pool is idle for a while, and the watch stops looking:
// it must not take an item it first sees then for started when it last
// looked.
func TestShortItemsStartNoGoroutine(t *testing.T) {
	const stall = time.Millisecond
	for _, took := range []time.Duration{0, stall / 2} {
		t.Run(fmt.Sprintf("took=%v", took), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const workers = 2
				var mu sync.Mutex
				most, ran := 0, 0
				p := New(Config[int]{Workers: workers, Stall: stall, Run: func(int, *Batch) {
					n := runGoroutines()
					mu.Lock()
					most = max(most, n)
					ran++
					mu.Unlock()
					time.Sleep(took)
				}})
				for wave := range 5 {
					if wave == 3 {
						time.Sleep(100 * stall)
					}
					p.Submit(ints(20 * (wave + 1))...)
					if wave%2 == 0 {
						p.Submit(ints(3)...)
					}
					time.Sleep(stall / 3)
					n := runGoroutines()
					mu.Lock()
					most = max(most, n)
					mu.Unlock()
				}
				time.Sleep(100 * stall)
				mu.Lock()
				assert.Equal(t, 20+40+60+80+100+3*3, ran)
				assert.Equal(t, workers, most, "goroutines running items")
				mu.Unlock()
				assert.Empty(t, p.Close())
			})
		})
	}
}

// TestStuckGoroutinesAreReplacedUpToWorkers: while some goroutines are stuck
// and others make progress, the pool adds only what it takes to have
// Workers goroutines making progress, not a goroutine per waiting item.
func TestStuckGoroutinesAreReplacedUpToWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stall = time.Millisecond
		release := make(chan struct{})
		var mu sync.Mutex
		most, ran := 0, 0
		p := New(Config[int]{Workers: 4, Stall: stall, Run: func(v int, _ *Batch) {
			if v < 0 {
				<-release
				return
			}
			n := runGoroutines()
			mu.Lock()
			most = max(most, n)
			ran++
			mu.Unlock()
			time.Sleep(stall / 10)
		}})
		defer p.Close()
		var once sync.Once
		stop := func() { once.Do(func() { close(release) }) }
		defer stop()
		synctest.Wait()
		p.Submit(-1, -2) // two workers block for good
		synctest.Wait()
		p.Submit(ints(200)...) // 20 ms of work for two workers
		time.Sleep(100 * stall)
		mu.Lock()
		assert.Equal(t, 200, ran)
		assert.Equal(t, 4+2, most, "goroutines: 4 making progress, 2 stuck")
		mu.Unlock()
		stop()
		synctest.Wait()
		assert.Equal(t, 4, runGoroutines())
		assert.Empty(t, p.Close())
	})
}

func TestRunsInSubmitOrderWithOneWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []int
		var mu sync.Mutex
		p := New(Config[int]{Workers: 1, Stall: time.Millisecond, Run: func(v int, _ *Batch) {
			mu.Lock()
			got = append(got, v)
			mu.Unlock()
		}})
		var want []int
		for i := range 1000 {
			require.True(t, p.Submit(i))
			want = append(want, i)
		}
		synctest.Wait()
		assert.Empty(t, p.Close())
		assert.Equal(t, want, got)
	})
}

// TestStartPrecedesRun checks that a worker starts every batch, with all
// its items, before it runs the batch's first item.
func TestStartPrecedesRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		touched := map[int]bool{}
		var ran, early []int
		p := New(Config[int]{
			Workers: 1,
			Stall:   time.Millisecond,
			Start: func(batch []int, _ *Batch) {
				mu.Lock()
				for _, v := range batch {
					touched[v] = true
				}
				mu.Unlock()
			},
			Run: func(v int, _ *Batch) {
				mu.Lock()
				defer mu.Unlock()
				ran = append(ran, v)
				// The whole batch (up to batchMax items) is touched by now.
				last := v - v%batchMax + batchMax - 1
				if !touched[v] || (last < 100 && !touched[last]) {
					early = append(early, v)
				}
			},
		})
		items := make([]int, 100)
		for i := range items {
			items[i] = i
		}
		require.True(t, p.Submit(items...))
		synctest.Wait()
		assert.Empty(t, p.Close())
		assert.Equal(t, items, ran)
		assert.Empty(t, early, "items run before their batch was started")
	})
}

func TestPanicGoesToHandlerAndWorkerGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		panics := make(chan any, 1)
		ran := make(chan int, 1)
		p := New(Config[int]{Workers: 1, Stall: time.Millisecond, OnPanic: func(v any) {
			panics <- v
		}, Run: func(v int, _ *Batch) {
			if v == 0 {
				panic("boom")
			}
			ran <- v
		}})
		defer p.Close()
		p.Submit(0, 1)
		assert.Equal(t, "boom", <-panics)
		assert.Equal(t, 1, <-ran)
	})
}

func TestGoexitInCallbackReplacesWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ran := make(chan int, 3)
		p := New(Config[int]{Workers: 1, Stall: time.Millisecond, Run: func(v int, _ *Batch) {
			if v == 0 {
				runtime.Goexit()
			}
			ran <- v
		}})
		p.Submit(0, 1, 2)
		assert.Equal(t, 1, <-ran)
		assert.Equal(t, 2, <-ran)
		assert.Empty(t, p.Close())
	})
}

// TestBlockedWorkersDoNotHoldUpOthers: with every worker blocked, queued
// work starts after the stall delay, on a helper.
func TestBlockedWorkersDoNotHoldUpOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stall = time.Millisecond
		release := make(chan struct{})
		started := make(chan time.Time, 10)
		p := New(Config[int]{Workers: 2, Stall: stall, Run: func(v int, _ *Batch) {
			started <- time.Now()
			if v < 3 {
				<-release // 0, 1 and 2 block for ever
			}
		}})
		start := time.Now()
		p.Submit(0)
		p.Submit(1)
		synctest.Wait()
		p.Submit(2)
		synctest.Wait()
		p.Submit(3, 4)
		for range 5 {
			at := <-started
			assert.LessOrEqual(t, at.Sub(start), 2*stall, "held up by blocked callbacks")
		}
		close(release)
		assert.Empty(t, p.Close())
	})
}

// TestWatchLooksAtMostEveryMinEvery: with a stall delay far under
// minEvery (a SystemTimer's WithTick(time.Nanosecond) gives its executor
// 1ns) and more blocked items than the watch may start goroutines for at
// once, the watch looks once per minEvery. Without the floor it would look
// again at once, for ever, and hold a processor: here the hook lets the
// items go after 10,000 looks, so that such a watch fails the test instead
// of hanging it.
func TestWatchLooksAtMostEveryMinEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var once sync.Once
		letGo := func() { once.Do(func() { close(release) }) }
		var looks atomic.Int64
		windowHook = func(w string) {
			if w == "look" && looks.Add(1) > 10_000 {
				letGo()
			}
		}
		t.Cleanup(func() { windowHook = nil })
		const items = 100_000
		var ran atomic.Int64
		p := New(Config[int]{Workers: 1, Stall: time.Nanosecond, Run: func(int, *Batch) { <-release; ran.Add(1) }})
		p.Submit(make([]int, items)...)
		const over = time.Millisecond
		time.Sleep(over) // the bubble's clock: every goroutine is blocked but the watch's timer
		n := looks.Load()
		letGo()
		left := p.Close()
		assert.Equal(t, int64(items), ran.Load()+int64(len(left)), "every item either ran or came back")
		const floor = 10 * time.Microsecond // minEvery, pinned: a smaller one fails too
		assert.LessOrEqual(t, n, int64(over/floor)+2, "looks in %v", over)
		assert.Greater(t, n, int64(over/floor)/2, "the watch stopped looking while items waited")
	})
}

func TestCloseReturnsUnstartedAndWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release, blocked := make(chan struct{}), make(chan struct{})
		var ran atomic.Int32
		p := New(Config[int]{Workers: 1, Stall: time.Hour, Run: func(v int, _ *Batch) {
			if v == 0 {
				close(blocked)
				<-release
			}
			ran.Add(1)
		}})
		p.Submit(0, 1, 2)
		<-blocked
		p.Submit(3, 4) // queued behind; the helper waits an hour
		type result struct {
			left  []int
			alive int // pool goroutines alive the moment Close returned
		}
		got := make(chan result)
		go func() {
			left := p.Close()
			got <- result{left, poolGoroutines()}
		}()
		synctest.Wait() // Close is waiting for the running item
		close(release)
		r := <-got
		slices.Sort(r.left)
		assert.Equal(t, []int{1, 2, 3, 4}, r.left)
		assert.Equal(t, int32(1), ran.Load())
		assert.Zero(t, r.alive, "pool goroutines outlived Close")
		assert.False(t, p.Submit(5))
		assert.Nil(t, p.Close())
	})
}

func TestCloseFromInsideCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p *Group[int]
		got := make(chan []int, 1)
		var ran atomic.Int32
		p = New(Config[int]{Workers: 2, Stall: time.Millisecond, Run: func(v int, _ *Batch) {
			ran.Add(1)
			if v == 0 {
				got <- p.Close()
			}
		}})
		p.Submit(0, 1, 2, 3)
		left := <-got
		synctest.Wait()
		assert.Equal(t, int32(4), ran.Load()+int32(len(left)), "every item either ran or came back")
		assert.True(t, p.OnWorker() == false)
	})
}

func TestManualRunQueued(t *testing.T) {
	var got []int
	var p *Group[int]
	p = New(Config[int]{Manual: true, Run: func(v int, _ *Batch) {
		got = append(got, v)
		if v < 3 {
			p.Submit(v + 10)
		}
	}})
	p.Submit(1, 2, 3)
	assert.Empty(t, got)
	p.RunQueued()
	assert.Equal(t, []int{1, 2, 3, 11, 12}, got)
	p.Submit(4)
	assert.Equal(t, []int{4}, p.Close())
}

func TestNewPanicsOnMisuse(t *testing.T) {
	assert.PanicsWithValue(t, "executor: Config.Workers must be at least 1", func() {
		New(Config[int]{Stall: time.Millisecond, Run: func(int, *Batch) {}})
	})
	assert.PanicsWithValue(t, "executor: Config.Stall must be positive", func() {
		New(Config[int]{Workers: 1, Run: func(int, *Batch) {}})
	})
}

// TestSpawns: with every goroutine of a pool stuck, a goroutine per waiting
// item, up to maxExtra beyond the group's Workers, then Workers more; with
// some stuck, as many as are missing.
func TestSpawns(t *testing.T) {
	for _, c := range []struct{ going, size, items, extra, want int }{
		{0, 8, 200, 0, 200},
		{0, 8, 3, 0, 3},
		{3, 8, 200, 0, 5},
		{3, 8, 2, 0, 2},
		{8, 8, 200, 0, 0},
		{0, 8, 5000, 0, maxExtra},         // bounded
		{0, 8, 5000, maxExtra - 10, 10},   // what is left
		{0, 8, 5000, maxExtra + 3, 8},     // none left: Workers more
		{0, 2, 5000, maxExtra + 3 - 2, 2}, // ... never none
	} {
		if got := spawns(c.going, c.size, c.items, c.extra, false); got != c.want {
			t.Errorf("spawns(going=%d, size=%d, items=%d, extra=%d) = %d, want %d", c.going, c.size, c.items, c.extra, got, c.want)
		}
		if got, want := spawns(c.going, c.size, c.items, c.extra, true), min(c.want, c.size, c.items); c.going == 0 && got != want {
			t.Errorf("busy: spawns(going=0, size=%d, items=%d, extra=%d) = %d, want %d", c.size, c.items, c.extra, got, want)
		}
	}
}

// TestSpawnsWhenBusy: when goroutines wait for a processor, a pool whose
// goroutines all look stuck gets only its size in goroutines more per
// look, not one per item: those that look stuck may only be descheduled.
// 40 items that block, 2 workers: 2 start, then 2 more per look.
func TestSpawnsWhenBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stall = time.Millisecond
		b := newBlocker()
		p := New(Config[int]{Workers: 2, Stall: stall, Run: b.run, Busy: func() bool { return true }})
		defer p.Close()
		defer b.stop()
		synctest.Wait()
		p.Submit(ints(40)...)
		synctest.Wait()
		require.Equal(t, 2, b.count(), "items the workers started")
		time.Sleep(stall + stall/2)
		synctest.Wait()
		if n := b.count(); n > 2+2*3 || n < 4 {
			t.Fatalf("%d items started a stall delay and a half later: want the pool's size more per look, not one per item", n)
		}
		b.stop()
		synctest.Wait()
	})
}
