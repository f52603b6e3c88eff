// Package executor runs callbacks on a bounded set of worker goroutines.
//
// Policy. Submit never blocks: items go on an unbounded FIFO queue and idle
// workers are woken. A fixed number of workers wait for work. When work is
// queued and every worker is busy (running callbacks that take long, or block
// for ever), a helper goroutine is started; it waits a stall delay and, if the
// work is still queued by then, runs queued work until the queue is empty and
// then exits. So a blocked callback holds up other callbacks by at most the
// stall delay, at the price of one extra goroutine per stalled period, and in
// the common case of short callbacks (workers keep up) no helper ever runs
// work and items run in the order they were submitted.
//
// Close hands back every item that has not started, waits for every goroutine
// of the pool to exit, and may be called from inside a callback: it then waits
// for all the others.
package executor

import (
	"log/slog"
	"runtime/debug"
	"sync"
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
}

// A Pool runs submitted items.
type Pool[T any] struct {
	run     func(T)
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
	byGoid     map[int64]*worker
	stop       chan struct{} // closed by Close to release waiting helpers
}

// A worker takes one item at a time, so that an item not started is always
// on the queue, where a helper or Close can find it: an item held back by a
// worker stuck in an earlier callback would be held up without bound.
type worker struct {
	goid int64
}

// New starts a pool.
func New[T any](c Config[T]) *Pool[T] {
	p := &Pool[T]{
		run:     c.Run,
		onPanic: c.OnPanic,
		stall:   c.Stall,
		manual:  c.Manual,
		byGoid:  make(map[int64]*worker),
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
	for need := p.queue.len() - p.woken; need > 0 && p.idle > 0; need-- {
		p.idle--
		p.woken++
		p.work.Signal()
	}
	p.watch()
	return true
}

// watch starts a helper if work is queued beyond what idle workers will take
// and no helper is waiting already. Called with mu held, whenever the queue
// grows or an item is taken, so that as long as work waits behind busy
// goroutines there is always one helper counting down the stall delay.
func (p *Pool[T]) watch() {
	if p.queue.len() > p.woken && !p.helperWait && !p.manual {
		p.helperWait = true
		p.live++
		go p.helper()
	}
}

// helper runs queued work if it is still queued after the stall delay.
func (p *Pool[T]) helper() {
	t := time.NewTimer(p.stall)
	select {
	case <-t.C:
	case <-p.stop:
	}
	t.Stop()
	p.mu.Lock()
	p.helperWait = false
	if p.queue.len() == 0 || p.closed {
		p.live--
		p.exited.Broadcast()
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.loop(true)
}

// loop runs queued items. A worker waits for more; a helper exits when the
// queue is empty.
func (p *Pool[T]) loop(helper bool) {
	w := &worker{goid: goid.Get()}
	p.mu.Lock()
	p.byGoid[w.goid] = w
	p.mu.Unlock()

	normal := false
	defer func() {
		p.mu.Lock()
		delete(p.byGoid, w.goid)
		if !normal && !p.closed {
			// A callback called runtime.Goexit: replace this goroutine.
			p.live++
			go p.loop(helper)
		}
		p.live--
		p.exited.Broadcast()
		p.mu.Unlock()
	}()

	for {
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
		v := p.queue.popOne()
		p.watch()
		p.mu.Unlock()
		p.call(v)
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
	return p.byGoid[id] != nil
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
	want := 0
	if p.byGoid[me] != nil {
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

func (r *ring[T]) drain() []T {
	out := make([]T, r.n)
	r.copyOut(out)
	clear(r.buf)
	r.head, r.n = 0, 0
	return out
}
