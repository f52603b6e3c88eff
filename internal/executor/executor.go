package executor

import (
	"log/slog"
	"runtime/metrics"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/goid"
)

// Config configures a Group.
type Config[T any] struct {
	Workers int                 // goroutines that make progress; at least 1
	Stall   time.Duration       // the stall delay; positive
	Run     func(v T, b *Batch) // runs one item
	OnPanic func(v any)         // receives a value Run panicked with; required
	Now     func() int64        // if set, read into Batch.At once per batch
	// Yield, if set, is asked every yieldEvery items whether a goroutine
	// is to yield its processor; if not set, it always is (see loop).
	Yield func() bool
	// Touch, if set, reads what Run will of every item of a batch before
	// the first runs, so that the cache misses overlap: it cut the CPU
	// time of a storm of a million timers by a sixth.
	Touch func(T) uintptr
	// Busy reports whether goroutines wait for a processor (see spawns);
	// if not set, the runtime's count of runnable goroutines says.
	Busy   func() bool
	Manual bool // start no goroutines: RunQueued runs the queue (tests)
}

// A Batch is what Run knows of the items a goroutine took at once.
type Batch struct {
	Pool int   // the goroutine's pool: Run may count into memory of the pool's own
	At   int64 // Config.Now, read before the batch's first item
}

const (
	batchMax   = 16  // the most items a goroutine takes from the queue at once
	stealMax   = 256 // the most items a goroutine steals at once
	yieldEvery = 32  // items a goroutine runs between yields
	// maxExtra bounds the goroutines started one per item beyond Workers:
	// a goroutine descheduled by a GC cycle looks stuck too, and the
	// 10-minute soak saw thousands started for such ones. Past it, Workers
	// more per look, so that no item waits for ever.
	maxExtra = 256
	minEvery = 10 * time.Microsecond // bounds how often the watch wakes
)

// defaultBusy is Config.Busy's default. Reading the count takes the
// scheduler's lock: the watch reads it only when every goroutine of a pool
// looks stuck.
var defaultBusy = func() bool {
	s := []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Kind() == metrics.KindUint64 && s[0].Value.Uint64() > 0
}

// A Group runs submitted items on a pool per home (see the package doc).
type Group[T any] struct {
	c     Config[T] // immutable, as are the fields up to closed
	pools []*Pool[T]
	every time.Duration // how often the watch looks while work waits
	epoch time.Time     // the watch's times are time.Since(epoch)
	kick  chan struct{} // work waits in a pool: the watch looks now
	stop  chan struct{} // closed by Shut: the watch exits
	done  chan struct{} // closed when the watch has exited

	closed bool          // written holding every pool's mu: any one guards a read
	gs     atomic.Int64  // goroutines that run items, in all pools
	panics atomic.Uint64 // items that panicked, and values Reported
	queued Batch         // RunQueued's; its callers take turns
}

// New starts a group of one pool.
func New[T any](c Config[T]) *Group[T] { return NewGroup(c, 1) }

// NewGroup starts a group of pools, one per home, at most one per worker:
// Workers are shared out among them, and home i submits to pool i mod the
// number of pools. A manual group has one pool. It panics if Workers or
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
	g := &Group[T]{c: c, pools: make([]*Pool[T], n), every: max(c.Stall/4, minEvery),
		epoch: time.Now(), kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	for i := range g.pools {
		p := &Pool[T]{g: g, index: i, size: c.Workers / n}
		if i < c.Workers%n {
			p.size++
		}
		p.work.L, p.exited.L = &p.mu, &p.mu
		g.pools[i] = p
	}
	if c.Manual {
		close(g.done)
		return g
	}
	go g.watch()
	for _, p := range g.pools {
		p.mu.Lock()
		for range p.size {
			p.spawn()
		}
		p.mu.Unlock()
	}
	return g
}

// Pool returns home i's pool.
func (g *Group[T]) Pool(i int) *Pool[T] { return g.pools[i%len(g.pools)] }

// Submit submits to home 0's pool: the one pool of a group made by New.
func (g *Group[T]) Submit(items ...T) bool { return g.pools[0].Submit(items...) }

// Pools returns how many pools the group has: Batch.Pool is below.
func (g *Group[T]) Pools() int { return len(g.pools) }

// Panics returns how many items panicked, and values Reported.
func (g *Group[T]) Panics() uint64 { return g.panics.Load() }

// Report hands v to OnPanic and counts it in Panics, as if an item had
// panicked with it: for user code that Run recovered itself. It must not
// be called with a lock held.
func (g *Group[T]) Report(v any) {
	g.panics.Add(1)
	defer func() {
		if r := recover(); r != nil {
			slog.Error("executor: panic handler panicked", "panic", r, "callback panic", v)
		}
	}()
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

// RunQueued runs the queued items of a manual group on the calling
// goroutine until the queue is empty, including items they submit. It
// pops one at a time, so that Close always finds what has not started.
func (g *Group[T]) RunQueued() {
	p, b := g.pools[0], &g.queued
	for {
		var one [1]T
		p.mu.Lock()
		if g.closed || p.queue.len() == 0 {
			p.mu.Unlock()
			return
		}
		p.queue.pop(one[:0], 1)
		p.mu.Unlock()
		if g.c.Now != nil {
			b.At = g.c.Now()
		}
		g.call(one[0], b)
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

// count returns, at one moment, the items not started (queued or in a
// batch), the goroutines that run items, and those inside a batch.
func (g *Group[T]) count() (backlog, goroutines, busy int) {
	g.lockAll()
	defer g.unlockAll()
	for _, p := range g.pools {
		backlog, goroutines = backlog+p.queue.len(), goroutines+len(p.workers)
		for _, w := range p.workers {
			if w.busy {
				backlog, busy = backlog+int(max(w.end-w.next.Load(), 0)), busy+1
			}
		}
	}
	return backlog, goroutines, busy
}

// Load returns the items submitted and not started, and the goroutines
// that run items: Workers, or more while some are stuck.
func (g *Group[T]) Load() (backlog, goroutines int) {
	backlog, goroutines, _ = g.count()
	return backlog, goroutines
}

// Idle reports whether every item submitted so far has run. For tests.
func (g *Group[T]) Idle() bool {
	backlog, _, busy := g.count()
	return backlog == 0 && busy == 0
}

// OnWorker reports whether the calling goroutine is one of the group's.
func (g *Group[T]) OnWorker() bool {
	me := goid.Get()
	g.lockAll()
	defer g.unlockAll()
	return slices.ContainsFunc(g.pools, func(p *Pool[T]) bool { return p.has(me) })
}

// Close is Shut, then Wait. Later calls return nil at once, without
// waiting: two items that both close the group do not wait for each other.
func (g *Group[T]) Close() []T {
	left, first := g.shut()
	if first {
		g.Wait()
	}
	return left
}

// Shut closes every pool at once, holding every pool's lock, so that no
// item moves meanwhile, and returns the items that never started; later
// calls return nil. It does not wait (see Wait): the caller may first have
// to end what running items wait for.
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
	close(g.stop)
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
	<-g.done
}

// A queue is a FIFO of items: buf[head:].
type queue[T any] struct {
	buf  []T
	head int
}

func (q *queue[T]) len() int { return len(q.buf) - q.head }

func (q *queue[T]) push(items []T) {
	if q.head > 0 && len(q.buf)+len(items) > cap(q.buf) {
		n := copy(q.buf, q.buf[q.head:]) // reuse the space popped
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, items...)
}

func (q *queue[T]) pushFront(items []T) { q.buf = slices.Insert(q.buf, q.head, items...) }

// pop appends up to n of the oldest items to dst.
func (q *queue[T]) pop(dst []T, n int) []T {
	n = min(n, q.len())
	dst = append(dst, q.buf[q.head:q.head+n]...)
	clear(q.buf[q.head : q.head+n])
	if q.head += n; q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	return dst
}
