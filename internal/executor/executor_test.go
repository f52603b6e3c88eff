package executor

import (
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

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// poolGoroutines counts the goroutines, other than the caller, that run pool
// code. It looks once, without waiting.
func poolGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i > 0 && strings.Contains(g, "executor.(*Pool") {
			n++
		}
	}
	return n
}

func TestRunsInSubmitOrderWithOneWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []int
		var mu sync.Mutex
		p := New(Config[int]{Workers: 1, Stall: time.Millisecond, Run: func(v int) {
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

// TestTouchPrecedesRun checks that a worker touches every item of a batch
// before it runs the batch's first item, and touches each item it runs.
func TestTouchPrecedesRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		touched := map[int]bool{}
		var ran, early []int
		p := New(Config[int]{
			Workers: 1,
			Stall:   time.Millisecond,
			Touch: func(v int) uintptr {
				mu.Lock()
				touched[v] = true
				mu.Unlock()
				return uintptr(v)
			},
			Run: func(v int) {
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
		assert.Empty(t, early, "items run before their batch was touched")
	})
}

func TestPanicGoesToHandlerAndWorkerGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		panics := make(chan any, 1)
		ran := make(chan int, 1)
		p := New(Config[int]{Workers: 1, Stall: time.Millisecond, OnPanic: func(v any) {
			panics <- v
			panic("the handler panics too")
		}, Run: func(v int) {
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
		p := New(Config[int]{Workers: 1, Stall: time.Millisecond, Run: func(v int) {
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
		p := New(Config[int]{Workers: 2, Stall: stall, Run: func(v int) {
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

func TestCloseReturnsUnstartedAndWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release, blocked := make(chan struct{}), make(chan struct{})
		var ran atomic.Int32
		p := New(Config[int]{Workers: 1, Stall: time.Hour, Run: func(v int) {
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
		var p *Pool[int]
		got := make(chan []int, 1)
		var ran atomic.Int32
		p = New(Config[int]{Workers: 2, Stall: time.Millisecond, Run: func(v int) {
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
	var p *Pool[int]
	p = New(Config[int]{Manual: true, Run: func(v int) {
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

func TestRingWrapsAndGrows(t *testing.T) {
	var r ring[int]
	next, want := 0, 0
	for round := range 50 {
		for range round * 7 % 97 {
			r.push([]int{next})
			next++
		}
		for range min(r.len(), round*5%61) {
			require.Equal(t, want, r.popOne())
			want++
		}
	}
	for _, v := range r.drain() {
		require.Equal(t, want, v)
		want++
	}
	assert.Equal(t, next, want)
	assert.Equal(t, 0, r.len())
}
