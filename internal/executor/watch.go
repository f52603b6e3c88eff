package executor

import (
	"math"
	"slices"
	"time"
)

// see is the function of p's watch timer: it looks, and sets the timer
// for the next look while work waits, holding mu, so that Shut, which
// stops it holding mu, never misses a look set or running.
func (p *Pool[T]) see() {
	window("look")
	p.mu.Lock()
	if next := p.look(); next < math.MaxInt64 {
		p.watch.Reset(max(next-time.Since(p.g.epoch), minEvery))
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.g.looks.Done()
}

// look finds p's goroutines stuck in one item, takes back the rest of
// their batches, and starts goroutines for the items that wait. It returns
// when to look again, or MaxInt64 when nothing waits (as once the group is
// closed). An item is taken to have started at the look before the one
// that saw it started: never late, and early by at most a quarter of the
// stall delay, so that items under three quarters of it are never stuck.
// Called with mu held.
func (p *Pool[T]) look() time.Duration {
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
	p.queue.pushFront(back)
	if p.queue.len() == 0 && !slices.ContainsFunc(p.workers, func(w *worker[T]) bool {
		return w.busy && w.next.Load() < w.end
	}) {
		p.watched = false // nothing waits
		return math.MaxInt64
	}
	p.wake()
	if items := p.queue.len() - p.coming; items > 0 {
		going := len(p.workers) - p.stuck
		busy := going == 0 && g.c.Busy()
		for range spawns(going, p.size, items, int(g.gs.Load())-g.c.Workers, busy) {
			p.spawn()
		}
	}
	p.note()
	return next
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
