package executor

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/fifo"
	"github.com/go-timingwheel/timingwheel/internal/goid"
)

// A Pool is one home's queue, and the goroutines that take from it.
type Pool[T any] struct {
	g     *Group[T] // immutable, as are index and size
	index int       // in g.pools
	size  int       // the pool's share of Workers

	// mu guards the fields below up to watched, and those of the pool's
	// workers said so. Items never run with mu held.
	mu       sync.Mutex
	work     sync.Cond // idle goroutines wait here for items
	exited   sync.Cond // Wait waits here for goroutines to exit
	queue    fifo.Queue[T]
	idle     int           // goroutines waiting for work, not signalled
	coming   int           // goroutines signalled or started, not back for items yet
	stuck    int           // goroutines the watch found stuck, not back yet
	workers  []*worker[T]  // the goroutines that run items
	watch    *time.Timer   // looks at the pool while work waits; nil if manual
	lastLook time.Duration // when the watch last looked, or was armed
	watched  bool          // the watch is set or running: work waits

	// Written with mu, read without it: a stale hint costs a lock taken.
	spareHint atomic.Int64 // queued items no goroutine of the pool is coming for
	freeHint  atomic.Int64 // the pool's free goroutines (see free)
}

// A worker is a goroutine that runs items, and the batch it took. It
// claims each item by incrementing next; the watch, or Shut, takes back
// the items not claimed with one compare-and-swap, holding mu. next never
// decreases: it is also the worker's progress marker.
type worker[T any] struct {
	// Written by the worker holding mu; read by it without mu, by others with.
	batch []T
	base  int64        // next when the batch was taken: batch[i] is claim base+i
	end   int64        // base + len(batch)
	next  atomic.Int64 // the first claim not made
	b     Batch        // the worker's own

	// Guarded by the pool's mu.
	goid   int64
	busy   bool          // inside a batch, from taking it to coming back
	stuck  bool          // found stuck by the watch, not back yet
	mark   int64         // the marker the watch last saw
	markAt time.Duration // when the worker started the item of mark, or earlier
}

func (w *worker[T]) claim() (v T, ok bool) {
	if i := w.next.Add(1) - 1; i < w.end {
		return w.batch[i-w.base], true
	}
	return v, false
}

// takeBack appends to dst the items of the batch not claimed yet, claiming
// them all. Called with mu held.
func (w *worker[T]) takeBack(dst []T) []T {
	for cur := w.next.Load(); cur < w.end; cur = w.next.Load() {
		if w.next.CompareAndSwap(cur, w.end) {
			return append(dst, w.batch[cur-w.base:w.end-w.base]...)
		}
	}
	return dst
}

// marker moves when the worker starts an item, or takes a batch. Called
// with mu held.
func (w *worker[T]) marker() int64 { return max(w.next.Load(), w.base+1) }

// Submit queues items to run, without blocking, and reports true; once the
// group is closed, false.
func (p *Pool[T]) Submit(items ...T) bool {
	p.mu.Lock()
	if p.g.closed {
		p.mu.Unlock()
		return false
	}
	p.queue.Push(items)
	p.wake()
	spare := p.queue.Len() > p.coming
	if spare {
		p.arm()
	}
	p.note()
	p.mu.Unlock()
	if spare {
		p.give()
	}
	return true
}

// wake signals an idle goroutine per queued item that no goroutine on its
// way will take. Called with mu held.
func (p *Pool[T]) wake() {
	for ; p.idle > 0 && p.coming < p.queue.Len(); p.idle-- {
		p.coming++
		p.work.Signal()
	}
}

// arm sets the watch to look at the pool, where work waits, a quarter of
// the stall delay from now. Called with mu held, the group open.
func (p *Pool[T]) arm() {
	if !p.watched && p.watch != nil {
		p.watched = true
		p.lastLook = time.Since(p.g.epoch)
		p.g.looks.Add(1)
		p.watch.Reset(p.g.every)
	}
}

// spawn starts a goroutine that takes work at once. Called with mu held.
func (p *Pool[T]) spawn() {
	w := &worker[T]{b: Batch{Pool: p.index}}
	p.workers = append(p.workers, w)
	p.coming++
	p.g.gs.Add(1)
	p.note()
	go p.loop(w, false)
}

// has reports whether the goroutine of id is one of p's. Called with mu held.
func (p *Pool[T]) has(id int64) bool {
	return slices.ContainsFunc(p.workers, func(w *worker[T]) bool { return w.goid == id })
}

// take gives w its next batch from the non-empty queue: its share among
// the goroutines about to take from it, those of other pools that give
// will hand items to included. Called with mu held.
func (p *Pool[T]) take(w *worker[T]) {
	takers := p.coming + 1
	if q := p.queue.Len(); q > takers {
		takers += min(p.g.freeElsewhere(p), q-takers)
	}
	w.batch = p.queue.Pop(w.batch[:0], min(batchMax, (p.queue.Len()+takers-1)/takers))
	w.base = w.next.Load()
	w.end = w.base + int64(len(w.batch))
	w.busy = true
	if len(w.batch) > 1 || p.queue.Len() > p.coming {
		p.arm() // items wait behind the batch's first, or in the queue
	}
	p.note()
}

// loop runs batches until the group is closed, or there is no work and
// enough other goroutines to wait for it. With resume, it goes on with the
// batch of a goroutine that called runtime.Goexit in an item.
func (p *Pool[T]) loop(w *worker[T], resume bool) {
	id, c := goid.Get(), &p.g.c
	p.mu.Lock()
	w.goid = id
	if !resume {
		p.coming--
	}
	goexit := true
	defer func() {
		if goexit {
			go p.loop(w, true) // mu is not held
			return
		}
		p.workers = slices.DeleteFunc(p.workers, func(x *worker[T]) bool { return x == w })
		p.g.gs.Add(-1)
		p.note()
		p.exited.Broadcast()
		p.mu.Unlock()
	}()
	for ran := 0; ; resume = false {
		for !resume && p.queue.Len() == 0 && !p.g.closed && len(p.workers)-p.stuck <= p.size {
			if p.await() {
				p.work.Wait()
				if !p.g.closed {
					p.coming--
				}
			}
		}
		if !resume {
			if p.queue.Len() == 0 || p.g.closed {
				goexit = false // closed, or more goroutines than needed
				return
			}
			p.take(w)
		}
		p.mu.Unlock()
		if c.Start != nil && !resume {
			c.Start(w.batch, &w.b)
		}
		for v, ok := w.claim(); ok; v, ok = w.claim() {
			p.g.call(v, &w.b)
			// A goroutine that always finds work leaves its processor's
			// timers until it is preempted (10ms); a yield starves it on a
			// busy CPU, so only when Yield says one is due.
			if ran++; ran%yieldEvery == 0 && (c.Yield == nil || c.Yield()) {
				runtime.Gosched()
			}
		}
		p.mu.Lock()
		w.busy = false
		clear(w.batch) // an idle goroutine keeps no item alive
		if w.stuck {
			w.stuck = false
			p.stuck--
		}
	}
}

// close appends to left the items not started, and tells p's goroutines
// to exit. Called with every pool's mu held.
func (p *Pool[T]) close(left []T) []T {
	for _, w := range p.workers {
		left = w.takeBack(left) // the caller's own batch too, when it is a worker
	}
	left = p.queue.Pop(left, p.queue.Len())
	// A look that runs now finds nothing waiting, and ends the watch.
	if p.watched && p.watch.Stop() {
		p.watched = false
		p.g.looks.Done()
	}
	p.idle = 0
	p.note()
	p.work.Broadcast()
	return left
}

// look is the function of p's watch timer. It finds p's goroutines stuck
// in one item, takes back the rest of their batches, and starts goroutines
// for the items that wait. While work waits it sets the timer for the next
// look, holding mu, so that Shut, which stops it holding mu, never misses
// a look set or running; else (as once the group is closed) the watch
// ends. An item is taken to have started at the look before the one that
// saw it started: never late, and early by at most a quarter of the stall
// delay, so that items under three quarters of it are never stuck.
func (p *Pool[T]) look() {
	window("look")
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.g
	now := time.Since(g.epoch)
	next := now + g.every
	var back []T
	for _, w := range p.workers {
		if !w.busy || w.stuck {
			continue
		}
		if m := w.marker(); m != w.mark {
			w.mark, w.markAt = m, p.lastLook
		}
		in := now - w.markAt
		if in < g.c.Stall {
			next = min(next, w.markAt+g.c.Stall)
			continue
		}
		w.stuck = true
		p.stuck++
		back = w.takeBack(back)
	}
	p.lastLook = now
	p.queue.PushFront(back)
	if p.queue.Len() == 0 && !slices.ContainsFunc(p.workers, func(w *worker[T]) bool {
		return w.busy && w.next.Load() < w.end
	}) {
		p.watched = false // nothing waits
		g.looks.Done()
		return
	}
	p.wake()
	if items := p.queue.Len() - p.coming; items > 0 {
		going := len(p.workers) - p.stuck
		busy := going == 0 && g.c.Busy()
		for range spawns(going, p.size, items, int(g.gs.Load())-g.c.Workers, busy) {
			p.spawn()
		}
	}
	p.note()
	p.watch.Reset(max(next-time.Since(g.epoch), minEvery))
}

// spawns returns how many goroutines to start for items that wait with no
// goroutine coming for them, when going goroutines of the pool are not
// stuck, out of the size it keeps, and the group runs extra beyond its
// Workers: one per item when none is going, else as many as are missing.
// Unless busy (goroutines wait for a processor): those that look stuck may
// only be descheduled, so only the pool's size more per look. Without it,
// 1 storm in 5 on 2 cores started hundreds that convoyed on the pool's
// lock (p99 155ms against 5-13ms).
func spawns(going, size, items, extra int, busy bool) int {
	switch {
	case going == 0 && busy:
		return min(size, items)
	case going == 0:
		return max(min(items, maxExtra-extra), min(size, items))
	case going < size:
		return min(size-going, items)
	}
	return 0
}
