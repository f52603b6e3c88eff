package executor

import (
	"math"
	"sync/atomic"

	"github.com/go-timingwheel/timingwheel/internal/goid"
)

// A Group is a pool per home (a SystemTimer's shard): a home submits to
// its own pool, whose goroutines take its items, so the path of an item
// takes no lock that other homes take. Each pool is a whole Pool, with
// its own lock, queue, goroutines, watch and slots; what it does for
// items that block is what the Pool does, within the pool, and the group
// adds three things.
//
//   - Stealing. A goroutine that finds its pool's queue empty, before it
//     waits, takes from the pool whose hint shows the most items that no
//     goroutine of its own is coming for, half of them (at most
//     stealMax), the oldest, into its own pool's queue, and runs them
//     there: its pool's watch then looks after them. It holds both pools'
//     locks for the move (taken in index order), so an item is always in
//     one pool's queue or batch, where Close finds it.
//   - Poking. A Submit that leaves items no goroutine of its pool is
//     coming for wakes one waiting goroutine of another pool whose hint
//     shows one, which then steals; a thief that leaves items behind pokes
//     another. So a storm submitted by one home spreads over every pool's
//     goroutines, one goroutine woken at a time, and a home whose own
//     goroutines keep up touches no other pool.
//   - The watch, for items it finds waiting with too few goroutines of its
//     pool making progress, first pokes as many free goroutines of other
//     pools as there are items (see replace); only the items left get the
//     pool's own remedy, the goroutines missing or, when every goroutine
//     of the pool is stuck, one per item. maxExtra bounds the group's
//     goroutines beyond its Workers, not each pool's.
//
// Two rules keep the single pool's bound, that an item waits behind items
// that block for at most about the stall delay
// (TestBlockedItemsAllStartWithinStall, group=true). A goroutine taking a batch
// leaves a share of the queue to the free goroutines of other pools, and
// pokes them, as it leaves one to those of its own pool that are coming:
// else it would take every item in a batch behind the first, which may
// block. And a thief steals one item, not half, from a pool whose
// goroutines are all stuck or one of which has been in its item for half
// the stall delay (aged): the items it finds have waited about as long,
// and behind one of them that blocks, in the thief's batch, the others
// would wait for the stall delay of the thief's goroutine, which starts
// only now (TestGroupLateThiefTakesOne).
//
// With one goroutine per pool (the default on a machine of many cores),
// one item that blocks makes its pool's goroutines all stuck: the items
// still in that pool's queue when the watch looks, which the other pools
// have not stolen (they were busy), then each get a goroutine, where a
// single pool of as many goroutines started one. Those goroutines exit
// once the queue is empty.
//
// A pool's hint (poolHint) is written by the pool with its lock held and
// read by others without it: a stale hint costs a steal that finds
// nothing, or a goroutine that waits while a sibling has spare items until
// the next Submit pokes it; never an item, since every move is made with
// both locks held and re-checks what the hint said.
type Group[T any] struct {
	pools  []*Pool[T] // immutable
	size   int        // Config.Workers: the pools' sizes add up to it
	slots  int        // the pools' slots add up to it
	closed bool       // Close was called; guarded by every pool's mu (lockAll)
}

// stealMax is the most items a goroutine steals at once.
const stealMax = 256

// poolHint is what the pools of a group read of each other without a lock.
// spare packs the items queued that no goroutine of the pool is coming for
// (high 32 bits) and its free goroutines (low 32): those waiting for work,
// and those on their way to the queue beyond its items, which will steal
// when they find it empty; going packs its goroutines not stuck (high) and
// all its goroutines that run items (low).
type poolHint struct {
	spare atomic.Uint64
	going atomic.Uint64
}

func pack32(hi, lo int) uint64 {
	return uint64(min(max(hi, 0), math.MaxInt32))<<32 | uint64(min(max(lo, 0), math.MaxInt32))
}

func unpack32(v uint64) (hi, lo int) { return int(v >> 32), int(uint32(v)) }

// note publishes the pool's spare items and waiting goroutines. Called
// with mu held, after they may have changed.
func (p *Pool[T]) note() {
	if p.group == nil {
		return
	}
	v := pack32(p.queue.len()-p.coming, p.idle+max(p.coming-p.queue.len(), 0))
	if p.closed {
		v = 0 // nothing to steal, nobody free: a closed pool's coming never drops
	}
	if p.hint.spare.Load() != v {
		p.hint.spare.Store(v)
	}
}

// noteGoing publishes the pool's goroutines. Called with mu held, after
// they changed.
func (p *Pool[T]) noteGoing() {
	if p.group != nil {
		p.hint.going.Store(pack32(p.gs-p.stuck, p.gs))
	}
}

// NewGroup starts a group of pools, one per home, at most one per worker:
// Workers and Slots are shared out among them, and home i submits to pool
// i mod the number of pools (see Pool). A manual group has one pool.
func NewGroup[T any](c Config[T], homes int) *Group[T] {
	n := max(homes, 1)
	if c.Manual {
		n = 1
	} else {
		n = min(n, max(c.Workers, 1))
	}
	per := max(1, c.Slots/n)
	g := &Group[T]{pools: make([]*Pool[T], n), size: c.Workers, slots: per * n}
	for i := range g.pools {
		pc := c
		pc.Workers = c.Workers / n
		if i < c.Workers%n {
			pc.Workers++
		}
		pc.Slots = per
		p := build(pc)
		p.group, p.index, p.slotBase = g, i, i*per
		g.pools[i] = p
	}
	for _, p := range g.pools {
		p.start(p.size)
	}
	return g
}

// Pool returns home i's pool.
func (g *Group[T]) Pool(i int) *Pool[T] { return g.pools[i%len(g.pools)] }

// Pools returns how many pools the group has.
func (g *Group[T]) Pools() int { return len(g.pools) }

// Slots returns how many slots the group's pools have in all: Batch.Slot
// is below it.
func (g *Group[T]) Slots() int { return g.slots }

// others returns the free goroutines, and all the goroutines that run
// items, of the pools other than p, as their hints say.
func (g *Group[T]) others(p *Pool[T]) (free, gs int) {
	for _, q := range g.pools {
		if q != p {
			_, f := unpack32(q.hint.spare.Load())
			_, n := unpack32(q.hint.going.Load())
			free += f
			gs += n
		}
	}
	return free, gs
}

// poke wakes one goroutine, of a pool other than from, that waits for
// work, so that it steals from from; or counts on one of that pool's
// goroutines already on their way beyond its items, which will find its
// queue empty and steal. Each goroutine it wakes or counts on is counted
// in the pool's poked until a goroutine of the pool arrives: the pool's
// own Submits do not count it as coming for their items (else a Submit
// could take the goroutine a poke relied on, and wake nobody), and
// another poke does not count on it twice. Called without locks.
func (g *Group[T]) poke(from *Pool[T]) {
	n := len(g.pools)
	for i := 1; i < n; i++ {
		q := g.pools[(from.index+i)%n]
		if _, free := unpack32(q.hint.spare.Load()); free == 0 {
			continue
		}
		q.mu.Lock()
		// A goroutine on its way beyond q's items counts once: another
		// poke relying on it already, it is not free for this one.
		ok := !q.closed && (q.idle > 0 || q.coming-q.poked > q.queue.len())
		if ok {
			if q.coming-q.poked <= q.queue.len() {
				q.idle--
				q.coming++
				q.work.Signal()
			}
			q.poked++
			q.note()
		}
		// Else a goroutine of q on its way finds q's queue empty, and
		// steals.
		q.mu.Unlock()
		if ok {
			return
		}
	}
}

// spareElsewhere reports whether a pool other than p has spare items, as
// its hint says. A goroutine of p that publishes that it waits and then
// finds none here is poked by the next Submit that leaves spare items:
// the Submit publishes them and then reads the waiting goroutines, and
// atomics are sequentially consistent, so one of the two sees the other.
func (g *Group[T]) spareElsewhere(p *Pool[T]) bool {
	for _, q := range g.pools {
		if q != p {
			if spare, _ := unpack32(q.hint.spare.Load()); spare > 0 {
				return true
			}
		}
	}
	return false
}

// aged reports whether every goroutine of p that runs items is stuck, or
// one has been in one item for half the stall delay as far as p's watch
// knows: the item the watch last saw it in, which it has not left since.
// (The watch's estimate of when a goroutine started its item is early by
// up to a quarter of the stall delay, and ages until the next look: a
// goroutine running short items one after another would look aged for
// part of every look's span, and its pool's items would be stolen one at
// a time, a lock round trip each, in a storm.) Called with mu held.
func (p *Pool[T]) aged() bool {
	if p.gs == p.stuck {
		return true
	}
	if !p.watching {
		return false
	}
	now := p.now()
	for _, w := range p.watched {
		if w.busy && w.marker() == w.mark && now-w.markAt >= p.stall/2 {
			return true
		}
	}
	return false
}

// windowHook, if set (tests), is called in the windows of the group's
// protocol, with the window's name and the pool's lock as the window
// holds it: "steal" by a thief between giving up its own pool's lock and
// taking both pools' (not held), "idle" by a goroutine that found nothing
// to steal and has not yet said it waits (held, so the test must not
// take it).
var windowHook func(window string)

// steal moves spare items of another pool into p's queue, for a goroutine
// of p that found p's queue empty. It returns true if p's queue is not
// empty or p is closed when it returns: the caller looks again before it
// waits. Called with mu held, and returns with it held; it may give it up
// meanwhile.
func (p *Pool[T]) steal() bool {
	g := p.group
	var v *Pool[T]
	best := 0
	for i := 1; i < len(g.pools); i++ {
		q := g.pools[(p.index+i)%len(g.pools)]
		if spare, _ := unpack32(q.hint.spare.Load()); spare > best {
			v, best = q, spare
		}
	}
	if v == nil {
		return false
	}
	// Both locks, in index order.
	if v.index < p.index {
		p.mu.Unlock()
		if windowHook != nil {
			windowHook("steal")
		}
		v.mu.Lock()
		p.mu.Lock()
	} else {
		v.mu.Lock()
	}
	if p.closed || p.queue.len() > 0 {
		v.mu.Unlock()
		return true
	}
	n := v.queue.len() - v.coming
	if n <= 0 || v.closed {
		v.note()
		v.mu.Unlock()
		return false
	}
	k := min((n+1)/2, stealMax)
	if v.aged() {
		// v's items have waited behind goroutines stuck, or on the way
		// to it, and any may block as theirs did: one at a time, so
		// that none waits behind another in a batch, for the stall
		// delay of a goroutine that starts it only now.
		k = 1
	}
	buf := v.queue.pop(p.stolen[:0], k)
	left := n - k
	v.note()
	v.mu.Unlock()
	p.queue.push(buf)
	clear(buf)
	p.stolen = buf[:0]
	p.wake()
	p.note()
	if left > 0 {
		// Others may share the rest: poke one, without p's lock.
		p.mu.Unlock()
		g.poke(v)
		p.mu.Lock()
	}
	return true
}

// RunQueued runs the queued items of a manual group (see Pool.RunQueued).
func (g *Group[T]) RunQueued() { g.pools[0].RunQueued() }

// Report hands v to the panic handler (see Pool.Report).
func (g *Group[T]) Report(v any) { g.pools[0].Report(v) }

// Panics returns how many items panicked, in every pool.
func (g *Group[T]) Panics() uint64 {
	var n uint64
	for _, p := range g.pools {
		n += p.Panics()
	}
	return n
}

// lockAll takes every pool's lock, in index order (as a thief does), so
// that no item moves meanwhile.
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

// Load is Pool.Load for the whole group, taken at one moment.
func (g *Group[T]) Load() (backlog, goroutines int) {
	g.lockAll()
	defer g.unlockAll()
	for _, p := range g.pools {
		b, gs := p.loadLocked()
		backlog += b
		goroutines += gs
	}
	return backlog, goroutines
}

// Idle is Pool.Idle for the whole group, taken at one moment.
func (g *Group[T]) Idle() bool {
	g.lockAll()
	defer g.unlockAll()
	for _, p := range g.pools {
		if !p.idleLocked() {
			return false
		}
	}
	return true
}

// OnWorker reports whether the calling goroutine is one of the group's.
func (g *Group[T]) OnWorker() bool {
	for _, p := range g.pools {
		if p.OnWorker() {
			return true
		}
	}
	return false
}

// Close is Shut, then Wait: it closes every pool and waits for their
// goroutines, and returns the items that never started. Later calls
// return nil at once, without waiting, as Pool.Close's do: two items of
// two pools that both close the group do not wait for each other.
func (g *Group[T]) Close() []T {
	left, first := g.shut()
	if first {
		g.Wait()
	}
	return left
}

// Shut closes every pool at once, holding every pool's lock, so that no
// item moves meanwhile and no pool runs on while another is closed: no
// item starts after it returns. It returns the items that never started,
// each pool's oldest first, pool after pool, and does not wait for the
// items running (see Wait): the caller may first have to end what they
// wait for, among the items it got back. Later calls return nil.
func (g *Group[T]) Shut() []T {
	left, _ := g.shut()
	return left
}

// shut is Shut, and reports whether this call closed the group.
func (g *Group[T]) shut() (left []T, first bool) {
	g.lockAll()
	defer g.unlockAll()
	if g.closed {
		return nil, false
	}
	g.closed = true
	for _, p := range g.pools {
		if !p.closed {
			left = append(left, p.closeLocked()...)
		}
	}
	return left, true
}

// Wait waits, after Shut, until every goroutine of every pool has exited,
// but the caller's own when called from an item.
func (g *Group[T]) Wait() {
	me := goid.Get()
	for _, p := range g.pools {
		p.mu.Lock()
		p.waitLocked(me)
		p.mu.Unlock()
	}
}
