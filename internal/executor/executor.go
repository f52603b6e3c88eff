package executor

import (
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/goid"
)

// Config configures a Group.
type Config[T any] struct {
	Workers int                 // goroutines that make progress; at least 1
	Stall   time.Duration       // the stall delay; positive
	Run     func(v T, b *Batch) // runs one item
	OnPanic func(v any)         // receives a value Run panicked with; required; if it panics, the program crashes
	Start   func([]T, *Batch)   // if set, called with each batch before its first item runs
	Yield   func() bool         // if set, says whether a goroutine is to yield (see loop)
	Busy    func() bool         // goroutines wait for a processor (see spawns); tests set it
	Manual  bool                // start no goroutines: RunQueued runs the queue (tests)
}

// A Batch is what Run knows of the items a goroutine took at once.
type Batch struct {
	Pool int   // the goroutine's pool: Run may count into memory of the pool's own
	At   int64 // Start may set it, and Sink: the executor reads neither
	Sink uintptr
}

const (
	batchMax   = 16  // the most items a goroutine takes from the queue at once
	stealMax   = 256 // the most a thief takes: the victim's Submit waits for the copy (TestGroupStealTakesHalfAtMostStealMax)
	yieldEvery = 32  // items a goroutine runs between yields
	// maxExtra bounds the goroutines started one per item beyond Workers:
	// goroutines held up by a GC cycle look stuck too, and the soak saw
	// 9,000 started at once that convoyed on the pool's lock.
	maxExtra = 256
	// minEvery bounds how often the watch looks: a 1ns tick's stall delay
	// would have it look back to back (TestWatchLooksAtMostEveryMinEvery).
	minEvery = 10 * time.Microsecond
)

// defaultBusy is Config.Busy's default: the runtime's count of runnable
// goroutines, which takes the scheduler's lock to read (see spawns).
var defaultBusy = func() bool {
	s := []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Kind() == metrics.KindUint64 && s[0].Value.Uint64() > 0
}

// A Group runs submitted items on a pool per home (see the package doc).
type Group[T any] struct {
	c     Config[T] // immutable, as are every and epoch
	pools []*Pool[T]
	every time.Duration // how often a watch looks while work waits
	epoch time.Time     // the watches' times are time.Since(epoch)

	looks  sync.WaitGroup // the pools' watches that are set or running
	closed bool           // written holding every pool's mu: any one guards a read
	gs     atomic.Int64   // goroutines that run items, in all pools
	panics atomic.Uint64  // items that panicked, and values Reported
	queued Batch          // RunQueued's, as is one; its callers take turns
	one    []T
}

// NewGroup starts a group of a pool per home, at most one per worker, that
// share out Workers. A manual group has one pool. It panics if Workers or
// Stall is not positive, unless Manual is set.
func NewGroup[T any](c Config[T], homes int) *Group[T] {
	n := 1
	if !c.Manual {
		if c.Workers < 1 {
			panic("executor: Config.Workers must be at least 1")
		}
		if c.Stall <= 0 {
			panic("executor: Config.Stall must be positive")
		}
		n = min(max(homes, 1), c.Workers)
	}
	if c.Busy == nil {
		c.Busy = defaultBusy
	}
	g := &Group[T]{c: c, pools: make([]*Pool[T], n), every: max(c.Stall/4, minEvery), epoch: time.Now()}
	for i := range g.pools {
		p := &Pool[T]{g: g, index: i, size: c.Workers / n}
		if i < c.Workers%n {
			p.size++
		}
		p.work.L, p.exited.L = &p.mu, &p.mu
		g.pools[i] = p
	}
	if c.Manual {
		return g
	}
	for _, p := range g.pools {
		p.watch = time.AfterFunc(time.Hour, p.look)
		p.watch.Stop()
		p.mu.Lock()
		for range p.size {
			p.spawn()
		}
		p.mu.Unlock()
	}
	return g
}

// Pool returns home i's pool: pool i mod Pools.
func (g *Group[T]) Pool(i int) *Pool[T] { return g.pools[i%len(g.pools)] }

// Pools returns how many pools the group has: Batch.Pool is below.
func (g *Group[T]) Pools() int { return len(g.pools) }

// Panics returns how many items panicked, and values Reported.
func (g *Group[T]) Panics() uint64 { return g.panics.Load() }

// Report hands v to OnPanic, and counts it in Panics, for user code that
// Run recovered itself. It must not be called with a lock held.
func (g *Group[T]) Report(v any) {
	g.panics.Add(1)
	g.c.OnPanic(v)
}

func (g *Group[T]) call(v T, b *Batch) {
	defer func() {
		if r := recover(); r != nil {
			g.Report(r)
		}
	}()
	g.c.Run(v, b)
}

// RunQueued runs a manual group's queue on the calling goroutine until it
// is empty, one item at a time, so that Shut finds all that has not started.
func (g *Group[T]) RunQueued() {
	p, b := g.pools[0], &g.queued
	for {
		p.mu.Lock()
		if g.closed || p.queue.Len() == 0 {
			p.mu.Unlock()
			return
		}
		g.one = p.queue.Pop(g.one[:0], 1)
		p.mu.Unlock()
		if g.c.Start != nil {
			g.c.Start(g.one, b)
		}
		g.call(g.one[0], b)
	}
}

func (g *Group[T]) lockAll() {
	for _, p := range g.pools {
		p.mu.Lock()
	}
}

func (g *Group[T]) unlockAll() {
	for _, p := range g.pools {
		p.mu.Unlock()
	}
}

// Load returns the items submitted and not started, the goroutines that
// run items (Workers, or more while some are stuck), and those inside a
// batch, at one moment.
func (g *Group[T]) Load() (backlog, goroutines, busy int) {
	g.lockAll()
	defer g.unlockAll()
	for _, p := range g.pools {
		backlog, goroutines = backlog+p.queue.Len(), goroutines+len(p.workers)
		for _, w := range p.workers {
			if w.busy {
				backlog, busy = backlog+int(max(w.end-w.next.Load(), 0)), busy+1
			}
		}
	}
	return backlog, goroutines, busy
}

// OnWorker reports whether the calling goroutine is one of the group's.
func (g *Group[T]) OnWorker() bool {
	me := goid.Get()
	g.lockAll()
	defer g.unlockAll()
	return slices.ContainsFunc(g.pools, func(p *Pool[T]) bool { return p.has(me) })
}

// Shut closes every pool at once, holding every lock, so that no item
// moves meanwhile, and returns the items that never started; later calls
// return nil. It does not wait: the caller may first have to end what
// running items wait for.
func (g *Group[T]) Shut() []T {
	left, _ := g.shut()
	return left
}

func (g *Group[T]) shut() (left []T, first bool) {
	g.lockAll()
	defer g.unlockAll()
	if g.closed {
		return nil, false
	}
	g.closed = true
	for _, p := range g.pools {
		left = p.close(left)
	}
	return left, true
}

// Wait waits, after Shut, until every goroutine of the group has exited,
// but the caller's own when called from an item.
func (g *Group[T]) Wait() {
	me := goid.Get()
	for _, p := range g.pools {
		p.mu.Lock()
		for slices.ContainsFunc(p.workers, func(w *worker[T]) bool { return w.goid != me }) {
			p.exited.Wait()
		}
		p.mu.Unlock()
	}
	g.looks.Wait()
}
