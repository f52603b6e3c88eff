package executor

import (
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/goid"
)

// A Group is a pool per home (a SystemTimer's shard): a home submits to its
// own pool, whose goroutines take its items under a lock that other homes'
// items do not take. Work crosses pools only when a pool has more than its
// goroutines take (see the package doc):
//
//   - A goroutine that finds its pool's queue empty, before it waits, steals
//     from the pool whose hint shows the most spare items (queued, and no
//     goroutine of the pool coming for them) half of them, at most stealMax,
//     into its own pool's queue. From an aged pool (see aged) it steals one.
//   - A Submit, or a look of the watch, that leaves spare items hands one to
//     each free goroutine of another pool, as long as some are left: one
//     that waits for work, or that is on its way to its pool's queue beyond
//     the items there.
//   - A goroutine that takes a batch leaves a share of the queue to the
//     free goroutines of other pools, as to those of its own pool on their
//     way: else the items they are about to be given could wait behind the
//     first of its batch, should it block.
//
// Items move holding both pools' locks, so an item is always in one pool's
// queue or batch, where Close finds it. A pool's hint is written with its
// lock held and read by the others without it: a stale one costs a lock
// taken for nothing, never an item, since every move checks under the
// locks what the hint said. A goroutine that says it waits and then sees
// spare items elsewhere steals them: a Submit publishes its spare items
// before it reads who waits, so one of the two sees the other.
type Group[T any] struct {
	pools   []*Pool[T] // immutable, as are the fields up to gs
	size    int        // Config.Workers: the pools' sizes add up to it
	slots   int        // the pools' slots add up to it
	stall   time.Duration
	every   time.Duration // how often the watch looks while work waits
	epoch   time.Time     // the watch's times are time.Since(epoch)
	onPanic func(any)
	kick    chan struct{} // a pool started watching: the watch looks now
	stop    chan struct{} // closed when the last pool closes
	done    chan struct{} // closed when the watch has exited

	gs     atomic.Int64 // goroutines that run items, in all pools
	open   atomic.Int32 // pools not closed
	closed bool         // Shut was called; guarded by every pool's mu
}

// stealMax is the most items a goroutine steals at once.
const stealMax = 256

// minEvery bounds how often the watch wakes, whatever the stall delay.
const minEvery = 10 * time.Microsecond

// NewGroup starts a group of pools, one per home, at most one per worker:
// Workers and Slots are shared out among them, and home i submits to pool
// i mod the number of pools. A manual group has one pool. It panics if
// Workers or Stall is not positive, unless Manual is set.
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
	per := max(1, c.Slots/n)
	g := &Group[T]{
		pools: make([]*Pool[T], n), size: c.Workers, slots: per * n,
		stall: c.Stall, every: max(c.Stall/4, minEvery), epoch: time.Now(),
		onPanic: c.OnPanic,
		kick:    make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if g.onPanic == nil {
		g.onPanic = defaultOnPanic
	}
	g.open.Store(int32(n))
	for i := range g.pools {
		p := &Pool[T]{
			g: g, index: i, slotBase: i * per, size: c.Workers / n,
			run: c.Run, batchAt: c.Now, yield: c.Yield, touch: c.Touch, manual: c.Manual,
			inSlot: make([]int, per),
		}
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

func (g *Group[T]) now() time.Duration { return time.Since(g.epoch) }

// watch looks at the pools that have work waiting, every quarter of the
// stall delay and when a goroutine is due to reach it, until every pool is
// closed.
func (g *Group[T]) watch() {
	defer close(g.done)
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-t.C:
		case <-g.kick:
		case <-g.stop:
			t.Stop()
			return
		}
		next := time.Duration(math.MaxInt64)
		for _, p := range g.pools {
			if p.watched.Load() {
				next = min(next, p.look())
			}
		}
		if next < math.MaxInt64 {
			t.Reset(max(next-g.now(), minEvery))
		}
	}
}

// look is the watch's look at p: it finds p's goroutines stuck in one
// item, takes back their batches, and hands out what waits, to goroutines
// of other pools that wait for work, or to goroutines it starts. It
// returns when to look again, or MaxInt64 when no work waits. Called
// without locks.
func (p *Pool[T]) look() time.Duration {
	g := p.g
	p.mu.Lock()
	defer p.mu.Unlock()
	now := g.now()
	// A marker the watch sees for the first time was reached after the
	// last look, or, when the watch starts, is all it knows.
	since := p.lastLook
	if p.fresh {
		since = now
	}
	next := now + g.every
	found := p.found[:0]
	for _, w := range p.workers {
		if !w.busy || w.stuck {
			continue
		}
		if m := w.marker(); m != w.mark || p.fresh {
			w.mark, w.markAt = m, since
		}
		in := now - w.markAt
		w.aged = in >= g.stall/2
		if in >= g.stall {
			found = append(found, w)
		} else {
			next = min(next, w.markAt+g.stall)
		}
	}
	p.lastLook, p.fresh = now, false
	slices.SortFunc(found, bySeq)
	back := p.scratch[:0]
	for _, w := range found {
		w.stuck = true
		p.stuck++
		back = w.takeBack(back)
	}
	p.queue.pushFront(back)
	clear(back)
	clear(found)
	p.scratch, p.found = back[:0], found[:0]
	if p.queue.len() == 0 && !slices.ContainsFunc(p.workers, func(w *worker[T]) bool {
		return w.busy && w.next.Load() < w.end
	}) {
		p.watching = false // nothing waits
		p.watched.Store(false)
		p.note()
		return math.MaxInt64
	}
	p.wake()
	if p.queue.len() > p.coming && len(g.pools) > 1 {
		p.note()
		p.mu.Unlock()
		p.give()
		p.mu.Lock()
	}
	if items := p.queue.len() - p.coming; items > 0 && !p.closed {
		for range spawns(p.gs-p.stuck, p.size, items, int(g.gs.Load())-g.size) {
			p.spawn()
		}
	}
	p.note()
	return next
}

// maxExtra bounds the goroutines the watch starts one per item beyond
// Workers in a group. A goroutine that only looks stuck, descheduled for
// the stall delay by a GC cycle or by other goroutines, is replaced as one
// that blocks is; the 10-minute soak saw thousands of goroutines started
// for such ones, all waiting for the CPU beside them. So up to maxExtra
// items that block at once start within the stall delay; past it, Workers
// more per look, so that none waits for ever.
const maxExtra = 256

// spawns returns how many goroutines to start for items waiting that no
// goroutine is coming for, when going goroutines are not stuck out of the
// size the pool keeps, and the group runs extra beyond its Workers.
func spawns(going, size, items, extra int) int {
	switch {
	case going == 0:
		return max(min(items, maxExtra-extra), min(size, items))
	case going < size:
		return min(size-going, items)
	}
	return 0
}

// hint packs what the other pools read of a pool without its lock: its
// spare items (queued, no goroutine of its own coming for them; high 32
// bits) and its free goroutines (low 32; see free).
func pack(spare, idle int) uint64 {
	return uint64(min(max(spare, 0), math.MaxInt32))<<32 | uint64(min(max(idle, 0), math.MaxInt32))
}

func unpack(v uint64) (spare, idle int) { return int(v >> 32), int(uint32(v)) }

// note publishes p's hint. Called with mu held, after what it packs may
// have changed.
func (p *Pool[T]) note() {
	if len(p.g.pools) == 1 {
		return
	}
	v := pack(p.queue.len()-p.coming, p.free())
	if p.closed {
		v = 0 // nothing to steal, nobody to give to
	}
	if p.hint.Load() != v {
		p.hint.Store(v)
	}
}

// free returns p's goroutines that wait for work, or are on their way to
// its queue beyond the items there. Called with mu held.
func (p *Pool[T]) free() int { return p.idle + max(p.coming-p.queue.len(), 0) }

// freeElsewhere returns the free goroutines of pools other than p, as
// their hints say.
func (g *Group[T]) freeElsewhere(p *Pool[T]) (n int) {
	for _, q := range g.pools {
		if _, free := unpack(q.hint.Load()); q != p {
			n += free
		}
	}
	return n
}

// lockPair locks two pools in index order, the order every move takes.
func lockPair[T any](a, b *Pool[T]) {
	if a.index > b.index {
		a, b = b, a
	}
	a.mu.Lock()
	b.mu.Lock()
}

// windowHook, if set (tests), is called in the windows of the group's
// protocol, with the window's name: "steal" by a thief between letting go
// of its pool's lock and taking both pools' (no lock held), "give" by a
// giver before it takes both pools' locks (none held), and "idle" by a
// goroutine that found nothing to steal and has not said it waits yet
// (its pool's lock held: the test must not take it).
var windowHook func(window string)

// give hands spare items of p, oldest first, one to each free goroutine of
// another pool. Called without locks.
func (p *Pool[T]) give() {
	g := p.g
	for i := 1; i < len(g.pools); i++ {
		q := g.pools[(p.index+i)%len(g.pools)]
		if _, free := unpack(q.hint.Load()); free == 0 {
			continue
		}
		if windowHook != nil {
			windowHook("give")
		}
		lockPair(p, q)
		if k := min(p.queue.len()-p.coming, q.free()); k > 0 && !q.closed {
			buf := p.queue.pop(p.scratch[:0], k)
			q.queue.push(buf)
			clear(buf)
			p.scratch = buf[:0]
			q.wake()
			p.note()
			q.note()
		}
		left := p.queue.len() > p.coming // none once p is closed
		p.mu.Unlock()
		q.mu.Unlock()
		if !left {
			return
		}
	}
}

// await readies a goroutine of p that found p's queue empty to wait for
// work: in a group, it first steals. It returns false if the goroutine is
// to look at the queue again. Called with mu held; it may let go of it
// meanwhile.
func (p *Pool[T]) await() bool {
	if len(p.g.pools) == 1 {
		p.idle++
		return true
	}
	if p.steal() {
		return false
	}
	if windowHook != nil {
		windowHook("idle")
	}
	p.idle++
	p.note()
	for _, q := range p.g.pools {
		if spare, _ := unpack(q.hint.Load()); spare > 0 && q != p {
			p.idle-- // a Submit may have seen it busy: steal
			p.note()
			return false
		}
	}
	return true
}

// steal moves spare items of the pool whose hint shows the most into p's
// queue. It reports whether it let go of mu meanwhile. Called with mu held.
func (p *Pool[T]) steal() bool {
	var v *Pool[T]
	best := 0
	for i := 1; i < len(p.g.pools); i++ {
		q := p.g.pools[(p.index+i)%len(p.g.pools)]
		if spare, _ := unpack(q.hint.Load()); spare > best {
			v, best = q, spare
		}
	}
	if v == nil {
		return false
	}
	p.mu.Unlock()
	if windowHook != nil {
		windowHook("steal")
	}
	lockPair(p, v)
	defer v.mu.Unlock()
	n := v.queue.len() - v.coming
	if n <= 0 || p.closed || p.queue.len() > 0 { // none once v is closed
		v.note()
		return true
	}
	k := min((n+1)/2, stealMax)
	if v.aged() {
		k = 1
	}
	buf := v.queue.pop(p.scratch[:0], k)
	p.queue.push(buf)
	clear(buf)
	p.scratch = buf[:0]
	p.wake()
	v.note()
	p.note()
	return true
}

// aged reports whether a goroutine of p is still in the item the watch saw
// it in for half the stall delay, or more: p's items have waited about as
// long behind it, and may block as its item does. A thief takes one of
// them at a time, so that none waits behind another in its batch for the
// stall delay of a goroutine that starts only now. Called with mu held.
func (p *Pool[T]) aged() bool {
	return slices.ContainsFunc(p.workers, func(w *worker[T]) bool {
		return w.busy && w.aged && w.marker() == w.mark
	})
}

// Pool returns home i's pool.
func (g *Group[T]) Pool(i int) *Pool[T] { return g.pools[i%len(g.pools)] }

// Pools returns how many pools the group has.
func (g *Group[T]) Pools() int { return len(g.pools) }

// Slots returns how many slots the pools have in all: Batch.Slot is below.
func (g *Group[T]) Slots() int { return g.slots }

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
	return !slices.ContainsFunc(g.pools, func(p *Pool[T]) bool { return !p.idleLocked() })
}

// OnWorker reports whether the calling goroutine is one of the group's.
func (g *Group[T]) OnWorker() bool {
	return slices.ContainsFunc(g.pools, (*Pool[T]).OnWorker)
}

// Close is Shut, then Wait. Later calls return nil at once, without
// waiting, as Pool.Close's do: two items of two pools that both close the
// group do not wait for each other.
func (g *Group[T]) Close() []T {
	left, first := g.shut()
	if first {
		g.Wait()
	}
	return left
}

// Shut closes every pool at once, holding every pool's lock, so that no
// item moves meanwhile: no item starts after it returns. It returns the
// items that never started, each pool's oldest first, and does not wait
// for the items running (see Wait): the caller may first have to end what
// they wait for. Later calls return nil.
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
		if !p.closed {
			left = append(left, p.closeLocked()...)
		}
	}
	return left, true
}

// Wait waits, after Shut, until every goroutine of the group has exited,
// but the caller's own when called from an item.
func (g *Group[T]) Wait() {
	me := goid.Get()
	for _, p := range g.pools {
		p.mu.Lock()
		p.waitLocked(me)
		p.mu.Unlock()
	}
	<-g.done
}
