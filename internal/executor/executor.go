package executor

import (
	"cmp"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/goid"
)

// Config configures a Pool or a Group.
type Config[T any] struct {
	Workers int // goroutines that make progress; at least 1
	// Run runs one item, with the batch it belongs to (see Batch).
	Run   func(v T, b *Batch)
	Slots int // at least 1; RunQueued runs on slot 0
	// Now, if set, is read once per batch into Batch.At, before its first
	// item runs, so that Run need not read a clock per item.
	Now func() int64
	// Yield, if set, is asked every yieldEvery items whether the goroutine
	// should yield its processor; if not set, it always does (see loop).
	Yield   func() bool
	OnPanic func(v any)   // receives a value Run panicked with
	Stall   time.Duration // how long work may wait behind a stuck goroutine; positive
	Manual  bool          // start no goroutines; RunQueued runs the queue (tests)
	// Touch, if set, is called on every item of a batch before the first
	// runs: it reads what Run will read, so that the batch's cache misses
	// overlap instead of coming one at a time.
	Touch func(T) uintptr
}

// A Batch is what Run knows of the batch an item belongs to: the items a
// goroutine took from the queue at once, or those RunQueued pops in a row.
type Batch struct {
	// Slot is the running goroutine's slot, in [0, Slots): goroutines
	// running at once have different slots as long as they are no more
	// than Slots, so that Run can count into memory of the slot's own.
	Slot int
	// At is Config.Now, read before the batch's first item ran: an item
	// starts later by the run time of the items before it in the batch,
	// at most about the stall delay.
	At int64
	// Memo is Run's, to keep what it computed for an item for the next
	// items of the batch; the pool never touches it.
	Memo struct{ Key, At, Val int64 }
}

// A Pool runs submitted items: one pool of a Group.
type Pool[T any] struct {
	// Immutable.
	g        *Group[T]
	index    int // in g.pools
	slotBase int // the pool's slots are [slotBase, slotBase+len(inSlot))
	size     int // its share of Config.Workers
	run      func(T, *Batch)
	batchAt  func() int64
	yield    func() bool
	touch    func(T) uintptr
	manual   bool

	// mu guards the fields below it, and the fields of the pool's workers
	// documented so. Items never run with mu held.
	mu       sync.Mutex
	work     sync.Cond // idle goroutines wait here for items
	exited   sync.Cond // Close waits here for goroutines to exit
	queue    ring[T]
	idle     int          // goroutines waiting on work and not signalled
	coming   int          // goroutines signalled or started, not back for items yet
	gs       int          // goroutines that run items
	stuck    int          // of those, the ones the watch found stuck, not back yet
	workers  []*worker[T] // the gs goroutines
	batches  uint64       // batches taken: the number of the last one
	closed   bool
	watching bool          // the watch looks at the pool: work waits
	fresh    bool          // watching just set: the watch knows no marker yet
	lastLook time.Duration // when the watch last looked
	inSlot   []int         // goroutines running with each slot
	scratch  []T
	found    []*worker[T]

	queuedBatch Batch // RunQueued's; its callers take turns

	watched atomic.Bool   // watching, read by the watch without mu
	hint    atomic.Uint64 // spare items and idle goroutines, for the other pools (see note)
	panics  atomic.Uint64
}

// yieldEvery is how many items a goroutine runs between yields.
const yieldEvery = 32

// batchMax is the most items a goroutine takes from the queue at once.
const batchMax = 16

// A worker is a goroutine that runs items: the batch it took from the queue
// at once. It claims each item by incrementing next; the watch, or Close,
// takes back every item not claimed yet with one compare-and-swap, holding
// mu. next never decreases, so it is also the worker's progress marker.
type worker[T any] struct {
	// batch, base and end are written by the worker with mu held, and read
	// by the worker without it, or by others with it.
	batch []T
	base  int64        // next when the batch was taken: batch[i] is claim base+i
	end   int64        // base + len(batch)
	next  atomic.Int64 // the first claim not made
	b     Batch        // the worker's own, but Slot: set at spawn

	touched uintptr // the sum of Touch's results, so that they are not optimised away

	// Guarded by the pool's mu.
	goid   int64
	seq    uint64        // the batch's number: batches are taken in queue order
	busy   bool          // inside a batch, from taking it to coming back
	stuck  bool          // found stuck by the watch, not back yet
	aged   bool          // the watch saw it in item mark for half the stall delay
	mark   int64         // the marker the watch last saw
	markAt time.Duration // when the worker started the item of mark, estimated
}

// claim takes the next item of the batch, if any is left.
func (w *worker[T]) claim() (v T, ok bool) {
	if i := w.next.Add(1) - 1; i < w.end {
		return w.batch[i-w.base], true
	}
	return v, false
}

// takeBack appends to dst the items of the batch not claimed yet, claiming
// them all. Called with mu held.
func (w *worker[T]) takeBack(dst []T) []T {
	for {
		cur := w.next.Load()
		if cur >= w.end {
			return dst
		}
		if w.next.CompareAndSwap(cur, w.end) {
			return append(dst, w.batch[cur-w.base:w.end-w.base]...)
		}
	}
}

// marker moves when the worker starts an item or takes a batch: taking a
// batch counts as starting its first item. Called with mu held.
func (w *worker[T]) marker() int64 { return max(w.next.Load(), w.base+1) }

func bySeq[T any](a, b *worker[T]) int { return cmp.Compare(a.seq, b.seq) }

// New starts a group of one pool and returns the pool. It panics if
// Workers or Stall is not positive, unless Manual is set.
func New[T any](c Config[T]) *Pool[T] { return NewGroup(c, 1).pools[0] }

// Submit queues items to run. It never blocks. It reports false, and queues
// nothing, once the pool is closed.
func (p *Pool[T]) Submit(items ...T) bool {
	if len(items) == 0 {
		return true
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	p.queue.push(items)
	if p.manual {
		p.mu.Unlock()
		return true
	}
	p.wake()
	spare := p.queue.len() > p.coming
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

// wake signals idle goroutines, one per queued item that no goroutine
// already on its way will take. Called with mu held.
func (p *Pool[T]) wake() {
	for p.idle > 0 && p.coming < p.queue.len() {
		p.idle--
		p.coming++
		p.work.Signal()
	}
}

// arm has the watch look at the pool: work waits. Called with mu held.
func (p *Pool[T]) arm() {
	if p.watching || p.closed {
		return
	}
	p.watching, p.fresh = true, true
	p.watched.Store(true)
	select {
	case p.g.kick <- struct{}{}:
	default: // a look is due already, and will see watched
	}
}

// spawn starts a goroutine that takes work at once. Called with mu held.
func (p *Pool[T]) spawn() {
	w := &worker[T]{b: Batch{Slot: p.takeSlot()}}
	p.workers = append(p.workers, w)
	p.gs++
	p.coming++
	p.g.gs.Add(1)
	p.note()
	go p.loop(w)
}

// takeSlot returns the slot fewest running goroutines have. Called with mu
// held.
func (p *Pool[T]) takeSlot() int {
	best := 0
	for i, n := range p.inSlot {
		if n < p.inSlot[best] {
			best = i
		}
	}
	p.inSlot[best]++
	return p.slotBase + best
}

// take gives w its next batch from the queue, which must not be empty: a
// share of the queue among the goroutines about to take from it. Called
// with mu held.
func (p *Pool[T]) take(w *worker[T]) {
	takers := p.coming + 1
	if q := p.queue.len(); q > takers && len(p.g.pools) > 1 {
		// Free goroutines of other pools are given their share (see
		// Group).
		takers += min(p.g.freeElsewhere(p), q-takers)
	}
	n := min(batchMax, (p.queue.len()+takers-1)/takers)
	w.batch = p.queue.pop(w.batch[:0], n)
	w.base = w.next.Load()
	w.end = w.base + int64(len(w.batch))
	p.batches++
	w.seq = p.batches
	w.busy = true
	if len(w.batch) > 1 || p.queue.len() > p.coming {
		p.arm() // items wait behind the first of the batch, or in the queue
	}
	p.note()
}

// loop runs batches of queued items, until the pool is closed or there is
// no work and enough other goroutines to wait for it.
func (p *Pool[T]) loop(w *worker[T]) {
	id := goid.Get()
	p.mu.Lock()
	w.goid = id
	p.coming--
	normal := false
	defer func() { p.exit(w, normal) }()
	ran := 0
	for {
		for p.queue.len() == 0 && !p.closed {
			if p.gs-p.stuck > p.size {
				normal = true
				return
			}
			if !p.await() {
				continue
			}
			p.work.Wait()
			if !p.closed {
				p.coming--
			}
		}
		if p.closed {
			normal = true
			return
		}
		p.take(w)
		p.mu.Unlock()
		if p.touch != nil {
			var sum uintptr
			for _, v := range w.batch {
				sum += p.touch(v)
			}
			w.touched = sum
		}
		if p.batchAt != nil {
			w.b.At = p.batchAt()
		}
		for {
			v, ok := w.claim()
			if !ok {
				break
			}
			p.call(v, &w.b)
			if ran++; ran%yieldEvery == 0 && (p.yield == nil || p.yield()) {
				// A goroutine that always finds work never blocks, and
				// its processor then runs no timers: a driver due waits
				// up to the preemption slice (10ms). A yield lets it
				// run, but sends the goroutine to the back of the global
				// run queue, which starves the workers when the CPU is
				// busy: so only when Yield says a timer is due.
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

// exit removes w, which returns normally (holding mu) or by
// runtime.Goexit in an item (not holding it): then its batch goes back to
// the queue, and a goroutine replaces it if the pool needs one.
func (p *Pool[T]) exit(w *worker[T], normal bool) {
	if !normal {
		p.mu.Lock()
	}
	i := slices.Index(p.workers, w)
	p.workers[i] = p.workers[len(p.workers)-1]
	p.workers[len(p.workers)-1] = nil
	p.workers = p.workers[:len(p.workers)-1]
	p.inSlot[w.b.Slot-p.slotBase]--
	if w.stuck {
		p.stuck--
	}
	p.gs--
	p.g.gs.Add(-1)
	if !normal && !p.closed {
		p.queue.pushFront(w.takeBack(nil))
		if p.gs-p.stuck < p.size {
			p.spawn()
		}
		p.wake()
		if p.queue.len() > p.coming {
			p.arm()
		}
	}
	p.note()
	p.exited.Broadcast()
	p.mu.Unlock()
}

func (p *Pool[T]) call(v T, b *Batch) {
	defer func() {
		if r := recover(); r != nil {
			p.Report(r)
		}
	}()
	p.run(v, b)
}

// Report hands v to the panic handler, as if an item had panicked with it,
// and counts it in Panics: for failures of user code that Run recovered
// itself. It must not be called with a lock held.
func (p *Pool[T]) Report(v any) {
	p.panics.Add(1)
	defer func() {
		if r := recover(); r != nil {
			slog.Error("executor: panic handler panicked", "panic", r, "callback panic", v)
		}
	}()
	p.g.onPanic(v)
}

func defaultOnPanic(v any) {
	slog.Error("executor: callback panicked", "panic", v, "stack", string(debug.Stack()))
}

// RunQueued runs queued items on the calling goroutine until the queue is
// empty, including items they submit: for pools made with Manual. It pops
// one item at a time, so that Close always finds what has not started,
// and reads Now once per batchMax items, as the workers do per batch.
func (p *Pool[T]) RunQueued() {
	b := &p.queuedBatch
	for n := 0; ; n++ {
		p.mu.Lock()
		if p.closed || p.queue.len() == 0 {
			p.mu.Unlock()
			return
		}
		v := p.queue.popOne()
		p.mu.Unlock()
		if p.batchAt != nil && n%batchMax == 0 {
			b.At = p.batchAt()
		}
		p.call(v, b)
	}
}

// Panics returns how many items panicked.
func (p *Pool[T]) Panics() uint64 { return p.panics.Load() }

// Load returns the items submitted and not started yet, queued or in a
// batch, and the goroutines running items (Workers, or more when some are
// stuck in one item).
func (p *Pool[T]) Load() (backlog, goroutines int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loadLocked()
}

func (p *Pool[T]) loadLocked() (backlog, goroutines int) {
	backlog = p.queue.len()
	for _, w := range p.workers {
		if w.busy {
			backlog += int(max(w.end-w.next.Load(), 0))
		}
	}
	return backlog, p.gs
}

// Idle reports whether every item submitted so far has run: nothing is
// queued and no goroutine is inside a batch. For tests.
func (p *Pool[T]) Idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idleLocked()
}

func (p *Pool[T]) idleLocked() bool {
	return p.queue.len() == 0 && !slices.ContainsFunc(p.workers, func(w *worker[T]) bool { return w.busy })
}

// OnWorker reports whether the calling goroutine is one of the pool's.
func (p *Pool[T]) OnWorker() bool {
	id := goid.Get()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.isWorker(id)
}

func (p *Pool[T]) isWorker(id int64) bool {
	return slices.ContainsFunc(p.workers, func(w *worker[T]) bool { return w.goid == id })
}

// Close stops the pool: no item starts after it returns. It returns the
// items that never started, oldest first, and waits until every goroutine
// of the pool has exited, except the caller's own when called from inside
// an item. Later calls return nil at once.
func (p *Pool[T]) Close() []T {
	me := goid.Get()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	left := p.closeLocked()
	p.waitLocked(me)
	p.mu.Unlock()
	if p.g.open.Load() == 0 {
		<-p.g.done // the last pool closed: the watch exits
	}
	return left
}

// closeLocked marks the pool closed, takes back every item not started and
// tells its goroutines to exit. Called with mu held, the pool not closed.
func (p *Pool[T]) closeLocked() []T {
	p.closed = true
	busy := p.found[:0]
	for _, w := range p.workers {
		if w.busy {
			busy = append(busy, w)
		}
	}
	slices.SortFunc(busy, bySeq) // batches hold older items than the queue
	var left []T
	for _, w := range busy {
		left = w.takeBack(left) // the caller's own batch too, when it is a worker
	}
	clear(busy)
	left = append(left, p.queue.drain()...)
	p.idle = 0
	p.watching = false
	p.watched.Store(false)
	p.note()
	p.work.Broadcast()
	if p.g.open.Add(-1) == 0 {
		close(p.g.stop)
	}
	return left
}

// waitLocked waits until every goroutine of the closed pool has exited,
// but me's. Called with mu held.
func (p *Pool[T]) waitLocked(me int64) {
	want := 0
	if p.isWorker(me) {
		want = 1 // called from an item: not for ourselves
	}
	for p.gs > want {
		p.exited.Wait()
	}
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
	nb := make([]T, max(2*len(r.buf), r.n+extra, 64))
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
