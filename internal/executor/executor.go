// Package executor runs callbacks on a bounded set of worker goroutines.
//
// Policy. Submit never blocks: items go on an unbounded FIFO queue and idle
// workers are woken. A fixed number of workers wait for work; a worker takes
// up to batchMax items at a time, so the queue's lock is taken once per
// batch and not once per item (at a million items a second, a lock per item
// makes the lock a convoy), but the items it has not started stay where a
// helper or Close can take them. When work waits behind busy workers, a
// helper goroutine is started; after a stall delay it runs whatever is
// still waiting, in the queue or in a worker's batch, and exits when there
// is none. So a callback that blocks, or takes seconds, holds up other
// callbacks by about the stall delay, at the price of one extra goroutine
// while it does; with short callbacks the workers keep up, no helper runs
// anything, and items start in the order they were submitted.
//
// Close hands back every item that has not started, waits for every goroutine
// of the pool to exit, and may be called from inside a callback: it then waits
// for all the others.
package executor

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/goid"
)

// Config configures a Pool.
type Config[T any] struct {
	Workers int           // workers waiting for work; at least 1
	Run     func(T)       // runs one item
	OnPanic func(v any)   // receives a value Run panicked with
	Stall   time.Duration // how long work may wait behind busy workers
	Manual  bool          // start no goroutines; RunQueued runs the queue (tests)
	// Touch, if set, is called on every item of a batch a worker takes,
	// before it runs the first: it reads what Run will read, so that the
	// batch's cache misses overlap instead of coming one at a time.
	Touch func(T) uintptr
}

// A Pool runs submitted items.
type Pool[T any] struct {
	run     func(T)
	touch   func(T) uintptr
	onPanic func(any)
	stall   time.Duration
	manual  bool

	// mu guards the fields below it. Items never run with mu held.
	mu         sync.Mutex
	work       sync.Cond // workers wait here for items
	exited     sync.Cond // Close waits here for goroutines to exit
	queue      ring[T]
	idle       int  // workers waiting on work and not yet signalled
	woken      int  // workers signalled and not yet back for an item
	live       int  // goroutines started and not exited
	helperWait bool // a helper is waiting out its stall delay
	closed     bool
	workers    map[int64]*worker[T] // by goroutine id
	stop       chan struct{}        // closed by Close to release waiting helpers
}

// yieldEvery is how many items a worker runs between yields of its P.
const yieldEvery = 32

// batchMax is the most items a worker takes from the queue at once.
const batchMax = 16

// A worker runs the items of its batch, which it took from the queue at
// once. It claims each item by incrementing next; a thief (a helper, or
// Close) claims every item not started yet with one compare-and-swap,
// holding mu. So no item waits behind a callback that never returns.
type worker[T any] struct {
	goid int64
	// batch and end are written by the worker with mu held, and read by
	// the worker without it, or by a thief with it.
	batch []T
	end   int
	next  atomic.Int64 // index of the first item not claimed
	// touched keeps the sum of Touch's results, so that its reads are
	// not optimised away; the worker's own.
	touched uintptr
}

// claim takes the next item of the batch, if any is left.
func (w *worker[T]) claim() (v T, ok bool) {
	if i := w.next.Add(1) - 1; i < int64(w.end) {
		return w.batch[i], true
	}
	return v, false
}

// steal appends to dst the items of the batch not claimed yet, claiming
// them all. Called with the pool's mu held.
func (w *worker[T]) steal(dst []T) []T {
	for {
		cur := w.next.Load()
		if cur >= int64(w.end) {
			return dst
		}
		if w.next.CompareAndSwap(cur, int64(w.end)) {
			return append(dst, w.batch[cur:w.end]...)
		}
	}
}

// New starts a pool.
func New[T any](c Config[T]) *Pool[T] {
	p := &Pool[T]{
		run:     c.Run,
		touch:   c.Touch,
		onPanic: c.OnPanic,
		stall:   c.Stall,
		manual:  c.Manual,
		workers: make(map[int64]*worker[T]),
		stop:    make(chan struct{}),
	}
	if p.onPanic == nil {
		p.onPanic = func(v any) {
			slog.Error("executor: callback panicked", "panic", v, "stack", string(debug.Stack()))
		}
	}
	p.work.L = &p.mu
	p.exited.L = &p.mu
	if !p.manual {
		p.live = c.Workers
		for range c.Workers {
			go p.loop(false)
		}
	}
	return p
}

// Submit queues items to run. It never blocks. It reports false, and queues
// nothing, once the pool is closed.
func (p *Pool[T]) Submit(items ...T) bool {
	if len(items) == 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.queue.push(items)
	if p.manual {
		return true
	}
	// Wake a worker per batch of work, as far as there are idle ones.
	for need := (p.queue.len() + batchMax - 1) / batchMax; need > p.woken && p.idle > 0; need-- {
		p.idle--
		p.woken++
		p.work.Signal()
	}
	p.watch(false)
	return true
}

// watch starts a helper if work waits beyond what idle workers will take,
// in the queue or in the batch a worker just took, and no helper is waiting
// already. Called with mu held whenever the queue grows or a batch is taken,
// so that as long as work may wait behind busy goroutines, one helper counts
// down the stall delay.
func (p *Pool[T]) watch(batched bool) {
	if (p.queue.len() > p.woken || batched) && !p.helperWait && !p.manual {
		p.helperWait = true
		p.live++
		go p.helper()
	}
}

// helper waits the stall delay, then takes over whatever work is still
// waiting: items not started in the batches of workers stuck in a callback
// since then go back to the front of the queue, and the helper runs the
// queue like a worker until it is empty.
func (p *Pool[T]) helper() {
	t := time.NewTimer(p.stall)
	select {
	case <-t.C:
	case <-p.stop:
	}
	t.Stop()
	p.mu.Lock()
	p.helperWait = false
	var stolen []T
	for _, w := range p.workers {
		stolen = w.steal(stolen)
	}
	p.queue.pushFront(stolen)
	if p.queue.len() == 0 || p.closed {
		p.live--
		p.exited.Broadcast()
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.loop(true)
}

// loop runs batches of queued items. A worker waits for more; a helper
// exits when the queue is empty.
func (p *Pool[T]) loop(helper bool) {
	w := &worker[T]{goid: goid.Get()}
	p.mu.Lock()
	p.workers[w.goid] = w
	p.mu.Unlock()

	normal := false
	defer func() {
		p.mu.Lock()
		delete(p.workers, w.goid)
		if !normal && !p.closed {
			// A callback called runtime.Goexit: put back what this
			// goroutine had not started, and replace it.
			p.queue.pushFront(w.steal(nil))
			p.live++
			go p.loop(helper)
		}
		p.live--
		p.exited.Broadcast()
		p.mu.Unlock()
	}()

	ran := 0
	for {
		for {
			v, ok := w.claim()
			if !ok {
				break
			}
			p.call(v)
			if ran++; ran%yieldEvery == 0 {
				// A worker that finds work queued never blocks, and a
				// goroutine that never enters the scheduler leaves
				// timers, and so the driver waking from its sleep,
				// waiting up to the preemption slice (10ms) when
				// every P is busy.
				runtime.Gosched()
			}
		}
		p.mu.Lock()
		for p.queue.len() == 0 && !p.closed {
			if helper {
				normal = true
				p.mu.Unlock()
				return
			}
			p.idle++
			p.work.Wait()
			if !p.closed {
				p.woken--
			}
		}
		if p.closed {
			normal = true
			p.mu.Unlock()
			return
		}
		clear(w.batch)
		w.batch = p.queue.pop(w.batch[:0], batchMax)
		w.end = len(w.batch)
		w.next.Store(0)
		p.watch(w.end > 1)
		p.mu.Unlock()
		if p.touch != nil {
			var sum uintptr
			for _, v := range w.batch {
				sum += p.touch(v)
			}
			w.touched = sum
		}
	}
}

func (p *Pool[T]) call(v T) {
	defer func() {
		if r := recover(); r != nil {
			p.panicked(r)
		}
	}()
	p.run(v)
}

func (p *Pool[T]) panicked(v any) {
	defer func() {
		if r := recover(); r != nil {
			slog.Error("executor: panic handler panicked", "panic", r, "callback panic", v)
		}
	}()
	p.onPanic(v)
}

// RunQueued runs queued items on the calling goroutine until the queue is
// empty, including items they submit. It is for pools made with Manual.
func (p *Pool[T]) RunQueued() {
	for {
		p.mu.Lock()
		if p.closed || p.queue.len() == 0 {
			p.mu.Unlock()
			return
		}
		v := p.queue.popOne()
		p.mu.Unlock()
		p.call(v)
	}
}

// OnWorker reports whether the calling goroutine is one of the pool's.
func (p *Pool[T]) OnWorker() bool {
	id := goid.Get()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.workers[id] != nil
}

// Close stops the pool: no item starts after it returns. It returns the items
// that never started and waits until every goroutine of the pool has exited,
// except the caller's own when called from inside a callback. Later calls
// return nil at once.
func (p *Pool[T]) Close() []T {
	me := goid.Get()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	left := p.queue.drain()
	for _, w := range p.workers {
		left = w.steal(left) // the caller's own batch too, when it is a worker
	}
	want := 0
	if p.workers[me] != nil {
		want = 1 // called from a callback: do not wait for ourselves
	}
	p.idle = 0
	p.work.Broadcast()
	close(p.stop)
	for p.live > want {
		p.exited.Wait()
	}
	return left
}

// ring is a growable FIFO queue.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (r *ring[T]) len() int { return r.n }

func (r *ring[T]) grow(extra int) {
	if r.n+extra <= len(r.buf) {
		return
	}
	size := max(2*len(r.buf), r.n+extra, 64)
	nb := make([]T, size)
	r.copyOut(nb)
	r.buf, r.head = nb, 0
}

// copyOut copies the queued items, oldest first, to dst.
func (r *ring[T]) copyOut(dst []T) {
	k := copy(dst, r.buf[r.head:min(r.head+r.n, len(r.buf))])
	copy(dst[k:r.n], r.buf[:r.n-k])
}

func (r *ring[T]) push(items []T) {
	r.grow(len(items))
	for _, v := range items {
		r.buf[(r.head+r.n)%len(r.buf)] = v
		r.n++
	}
}

// popOne removes and returns the oldest item; the ring must not be empty.
func (r *ring[T]) popOne() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return v
}

// pop appends up to max of the oldest items to dst.
func (r *ring[T]) pop(dst []T, max int) []T {
	for ; max > 0 && r.n > 0; max-- {
		dst = append(dst, r.popOne())
	}
	return dst
}

func (r *ring[T]) pushFront(items []T) {
	r.grow(len(items))
	for i := len(items) - 1; i >= 0; i-- {
		r.head = (r.head - 1 + len(r.buf)) % len(r.buf)
		r.buf[r.head] = items[i]
		r.n++
	}
}

func (r *ring[T]) drain() []T {
	out := make([]T, r.n)
	r.copyOut(out)
	clear(r.buf)
	r.head, r.n = 0, 0
	return out
}
