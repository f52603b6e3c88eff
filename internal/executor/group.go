package executor

import (
	"slices"
	"time"
)

// windowHook, if set (tests), is called in the windows of the protocol:
// "steal" and "give" before a thief or a giver takes both pools' locks (no
// lock held), "idle" by a goroutine that found nothing to steal and has
// not said it waits (its pool's lock held), "look" as a watch fires.
var windowHook func(window string)

func window(name string) {
	if windowHook != nil {
		windowHook(name)
	}
}

// note publishes p's hints. Called with mu held, after they may change.
func (p *Pool[T]) note() {
	p.spareHint.Store(int64(max(p.queue.Len()-p.coming, 0)))
	p.freeHint.Store(int64(p.free()))
}

// free returns p's goroutines that wait for work, or are on their way to
// its queue beyond the items there. Called with mu held.
func (p *Pool[T]) free() int { return p.idle + max(p.coming-p.queue.Len(), 0) }

// freeElsewhere returns the free goroutines of other pools, by their hints.
func (g *Group[T]) freeElsewhere(p *Pool[T]) (n int) {
	for _, q := range g.pools {
		if q != p {
			n += int(q.freeHint.Load())
		}
	}
	return n
}

// lockPair locks two pools in index order.
func lockPair[T any](a, b *Pool[T]) {
	if a.index > b.index {
		a, b = b, a
	}
	a.mu.Lock()
	b.mu.Lock()
}

// move moves k items, oldest first, from from's queue to to's, and wakes
// goroutines of to for them. Called with both locks held.
func move[T any](from, to *Pool[T], k int) {
	to.queue.Take(&from.queue, k)
	to.wake()
	from.note()
	to.note()
}

// give gives p's spare items, one to each free goroutine of the other
// pools, as long as some are left. Called without locks.
func (p *Pool[T]) give() {
	for i := 1; i < len(p.g.pools); i++ {
		q := p.g.pools[(p.index+i)%len(p.g.pools)]
		if q.freeHint.Load() == 0 {
			continue
		}
		window("give")
		lockPair(p, q)
		if k := min(p.queue.Len()-p.coming, q.free()); k > 0 {
			move(p, q, k)
		}
		left := p.queue.Len() > p.coming // none once closed
		p.mu.Unlock()
		q.mu.Unlock()
		if !left {
			return
		}
	}
}

// await readies a goroutine of p that found p's queue empty to wait, once
// it has found nothing to steal. It returns false if the goroutine is to
// look at the queue again. Called with mu held; it may let go of it.
func (p *Pool[T]) await() bool {
	if p.steal() {
		return false
	}
	window("idle")
	p.idle++
	p.note()
	// A Submit that saw this goroutine busy publishes its spare items
	// before it reads who is free: one of the two sees the other.
	if slices.ContainsFunc(p.g.pools, func(q *Pool[T]) bool { return q.spareHint.Load() > 0 }) {
		p.idle--
		p.note()
		return false
	}
	return true
}

// steal moves spare items of the pool whose hint shows the most into p's
// queue: half of them, at most stealMax, or one from an aged pool. It
// reports whether it let go of mu meanwhile. Called with mu held.
func (p *Pool[T]) steal() bool {
	var v *Pool[T]
	var best int64
	for _, q := range p.g.pools {
		if spare := q.spareHint.Load(); spare > best && q != p {
			v, best = q, spare
		}
	}
	if v == nil {
		return false
	}
	p.mu.Unlock()
	window("steal")
	lockPair(p, v)
	defer v.mu.Unlock()
	if n := v.queue.Len() - v.coming; n <= 0 { // none once closed
		v.note()
	} else if v.aged() {
		move(v, p, 1)
	} else {
		move(v, p, min((n+1)/2, stealMax))
	}
	return true
}

// aged reports whether a goroutine of p has been in one item for half the
// stall delay: p's items have waited as long, and may block as it does. A
// thief takes one, so that none waits behind another for the stall delay
// of a goroutine that starts only now. Called with mu held.
func (p *Pool[T]) aged() bool {
	now := time.Since(p.g.epoch)
	return slices.ContainsFunc(p.workers, func(w *worker[T]) bool {
		return w.busy && w.marker() == w.mark && now-w.markAt >= p.g.c.Stall/2
	})
}
