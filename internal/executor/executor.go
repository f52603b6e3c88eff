// Package executor runs callbacks on a bounded set of goroutines, and adds
// goroutines only when callbacks block.
//
// # Taking work
//
// Submit never blocks: items go on an unbounded FIFO queue, and Submit wakes
// one idle goroutine per queued item that no goroutine already woken will
// take, as far as there are idle ones. A goroutine takes a batch of
// queue/(goroutines about to take work) items, at least 1 and at most
// batchMax: the work spreads over every goroutine that was woken for it,
// yet the queue's lock is taken once per batch and not once per item when
// the queue is long (at a million items a second, a lock per item makes the
// lock a convoy). A goroutine claims the items of its batch one by one
// through an atomic index, so that the items it has not started stay where
// the watch, or Close, can take them back with one compare-and-swap. With
// short items the goroutines keep up and items start in the order they were
// submitted.
//
// # Goroutines stuck in an item
//
// A goroutine is stuck when it has been inside one item for the stall
// delay: the item blocks, or takes long. Nothing on the path of an item
// measures that. The claim index of a goroutine never decreases, so it is
// the goroutine's progress marker (taking a batch counts as starting its
// first item), and a watch goroutine reads it. The watch runs only while
// work waits (items queued beyond the goroutines woken for them, or not
// started in a batch); it looks every quarter of the stall delay, and when
// a goroutine is due to reach the stall delay. For every goroutine inside a
// batch it estimates when the goroutine started its current item:
//
//   - for the first item of a batch, when the goroutine took the batch: a
//     goroutine that takes a batch while the watch runs, or starts it,
//     reads the clock, once per batch;
//   - for a later item, when the watch last saw the item before, but at
//     most one look before it sees this one: early by at most a quarter of
//     the stall delay;
//   - if the watch was not running, the moment the watch starts.
//
// At a look, a goroutine whose estimate reaches the stall delay is stuck,
// and so is every goroutine that would be by the next look, so that
// goroutines that blocked together are replaced together. So a goroutine
// is taken as stuck after at least half a stall delay in one item, and
// usually a whole one; and an item that waits behind a goroutine stuck in
// an item waits at most the stall delay from when the goroutine started
// that item, or from when the item was submitted if that is later.
//
// Then the watch takes back the items not started in the batches of the
// stuck goroutines, putting them at the front of the queue (oldest batch
// first), and, as long as items wait that no goroutine has been woken for:
//
//   - if some goroutines are not stuck but fewer than Workers, it starts
//     as many as are missing, so that Workers goroutines make progress;
//   - if every goroutine is stuck, it starts one goroutine per waiting item,
//     which then takes a batch of one: when every goroutine blocks, more
//     goroutines would most likely block too, and one per item is what
//     keeps every item from waiting more than the stall delay, as
//     time.AfterFunc would (it too starts a goroutine per callback), up to
//     maxExtra (256) goroutines beyond Workers, then Workers more per
//     look (see maxExtra). Unless
//     the CPU is what goroutines wait for: the process used 90% of its
//     processors over the last 2ms or more, or goroutines it has woken or
//     started have not come for work for half the stall delay. Then the
//     stuck ones may only be descheduled (by a GC cycle, or by other
//     goroutines on the CPU), a goroutine per item would only add
//     goroutines that wait beside them and convoy on the pool's lock, and
//     it starts Workers more instead (see starved). Nor for goroutines
//     stuck less than twice the runtime's recent scheduling latency (p99):
//     on a loaded machine, a goroutine commonly waits that long for a
//     processor (see measureSched).
//
// So, as long as goroutines can be started, no item waits more than about
// the stall delay behind items that block, whatever they do: N items that
// all block, submitted together, all start within the stall delay of their
// submission. A goroutine that comes back from an item finds more work or,
// when there is none and there are more than Workers goroutines not stuck,
// exits. Items that are merely short while the CPU is busy, or slow but
// under half the stall delay, never make a goroutine stuck, so no goroutine
// is started for them: more would only add cost. They run late, in order.
// A goroutine descheduled inside an item for the stall delay looks stuck;
// it costs a goroutine, which exits when the queue is empty.
//
// What this costs on the path of an item: nothing beyond the claim. Per
// batch: the lock, and a clock read while the watch runs. The watch costs a
// timer wake per quarter stall delay while work waits, and a system call
// (the process's CPU time) every 2ms; it reads the markers of the
// goroutines not stuck, holding the lock.
//
// # Close
//
// Close hands back every item that has not started, waits for every
// goroutine of the pool to exit, and may be called from inside an item: it
// then waits for all the others.
package executor

import (
	"cmp"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/goid"
)

// Config configures a Pool.
type Config[T any] struct {
	Workers int // goroutines that make progress; at least 1
	// Run runs one item, with the batch it belongs to (see Batch).
	Run   func(v T, b *Batch)
	Slots int // at least 1; RunQueued runs on slot 0
	// Now, if set, is read once per batch into Batch.At, before its first
	// item runs: a clock reading that Run can use for every item of the
	// batch, instead of reading a clock per item.
	Now func() int64
	// Yield, if set, is asked every yieldEvery items whether the worker
	// should yield its processor (runtime.Gosched); if not set, it always
	// does. See loop.
	Yield   func() bool
	OnPanic func(v any)   // receives a value Run panicked with
	Stall   time.Duration // how long work may wait behind a goroutine stuck in one item; positive
	Manual  bool          // start no goroutines; RunQueued runs the queue (tests)
	// Touch, if set, is called on every item of a batch a worker takes,
	// before it runs the first: it reads what Run will read, so that the
	// batch's cache misses overlap instead of coming one at a time.
	Touch func(T) uintptr
}

// A Batch is what Run knows of the batch an item belongs to: the items a
// goroutine took from the queue at once (up to batchMax), or the ones
// RunQueued pops at once.
type Batch struct {
	// Slot is the running goroutine's slot, in [0, Slots): goroutines
	// running at once have different slots as long as they are no more
	// than Slots, so that Run can count into memory of the slot's own,
	// which no other goroutine writes most of the time.
	Slot int
	// At is Config.Now read before the batch's first item ran. An item
	// starts after it, by the run time of the items before it in the
	// batch; the watch takes back the items of a batch held up by one for
	// the stall delay, so that is at most about the stall delay.
	At int64
	// Memo is Run's to keep what it computed for an item, for the next
	// items of the batch; the pool never touches it.
	Memo struct{ Key, At, Val int64 }
}

// A Pool runs submitted items.
type Pool[T any] struct {
	run     func(T, *Batch)
	batchAt func() int64 // Config.Now
	yield   func() bool  // Config.Yield
	touch   func(T) uintptr
	onPanic func(any)
	size    int           // Config.Workers
	stall   time.Duration // Config.Stall
	every   time.Duration // how often the watch looks while work waits
	manual  bool
	epoch   time.Time     // times below are time.Since(epoch)
	timer   *time.Timer   // the watch's; Reset with mu held, only when watching is set
	stop    chan struct{} // closed by Close: the watch exits

	// mu guards the fields below it, and the fields of every worker
	// documented so. Items never run with mu held.
	mu       sync.Mutex
	work     sync.Cond // idle goroutines wait here for items
	exited   sync.Cond // Close waits here for goroutines to exit
	queue    ring[T]
	idle     int    // goroutines waiting on work and not yet signalled
	coming   int    // goroutines signalled or started and not yet back for an item
	poked    int    // of those, ones woken by another pool's poke: to steal, not for this pool's items
	arrivals uint64 // goroutines that came back for an item after being signalled or started
	gs       int    // goroutines that run items: started and not exited
	stuck    int    // of those, the ones the watch found stuck and not back yet
	live     int    // every goroutine of the pool, the watch's included
	batches  uint64 // batches taken: the number of the last one
	watching bool   // the watch's timer is set: work waits
	closed   bool
	watched  []*worker[T]         // the goroutines that run items and are not stuck
	byID     map[int64]*worker[T] // the goroutines that run items, by goroutine id
	// The watch's view of how promptly goroutines it woke or started
	// come for work: the arrivals it last saw, and when it saw them move
	// (or nothing outstanding). See starved.
	seenArrivals uint64
	arrivalAt    time.Duration
	// Whether the CPU was saturated, and the runtime's recent scheduling
	// latency (p99), as the watch last measured them (see meter).
	busy   bool
	sched  time.Duration
	meter  meter        // the watch goroutine's own: read and written without mu
	found  []*worker[T] // the watch's scratch
	stolen []T          // the watch's scratch
	inSlot []int        // goroutines running with each slot
	pokes  int          // goroutines of other pools the watch is to wake, once it lets go of mu (see replace)

	queuedBatch Batch // RunQueued's, in the pool so that it does not escape per call; its callers take turns

	panics atomic.Uint64 // items that panicked

	// Set by NewGroup before any goroutine of the group starts, then
	// immutable: the group (nil for a pool made by New), the pool's
	// index in it, and its first slot (its slots are [slotBase,
	// slotBase+len(inSlot))).
	group    *Group[T]
	index    int
	slotBase int
	// hint is what the other pools of the group read of this one
	// without its lock (see Group): written with mu held, by note.
	hint poolHint
}

// yieldEvery is how many items a worker runs between yields of its P.
const yieldEvery = 32

// batchMax is the most items a worker takes from the queue at once.
const batchMax = 16

// minEvery bounds how often the watch wakes, whatever the stall delay.
const minEvery = 10 * time.Microsecond

// A worker is a goroutine that runs items: the batch it took from the queue
// at once. It claims each item by incrementing next; a thief (the watch,
// or Close) claims every item not started yet with one compare-and-swap,
// holding mu. next never decreases, so it is also the worker's progress
// marker: the worker is inside item next-1 of its batch.
type worker[T any] struct {
	// batch, base and end are written by the worker with mu held, and read
	// by the worker without it, or by others with it.
	batch []T
	base  int64        // next when the batch was taken: batch[i] is claim base+i
	end   int64        // base + len(batch)
	next  atomic.Int64 // the first claim not made
	// touched keeps the sum of Touch's results, so that its reads are
	// not optimised away; the worker's own.
	touched uintptr
	goid    int64 // the worker's own
	b       Batch // the worker's own, but Slot: set at spawn, then immutable

	// Guarded by the pool's mu.
	seq    uint64        // the batch's number: batches are taken in queue order
	busy   bool          // inside a batch: from taking it to coming back
	stuck  bool          // found stuck by the watch, not back yet
	index  int           // in the pool's watched, when not stuck
	mark   int64         // the progress marker the watch last saw
	markAt time.Duration // when the worker started the item of mark, estimated
	seenAt time.Duration // when the watch last saw mark, or the batch was taken
}

// claim takes the next item of the batch, if any is left.
func (w *worker[T]) claim() (v T, ok bool) {
	if i := w.next.Add(1) - 1; i < w.end {
		return w.batch[i-w.base], true
	}
	return v, false
}

// steal appends to dst the items of the batch not claimed yet, claiming
// them all. Called with the pool's mu held.
func (w *worker[T]) steal(dst []T) []T {
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

// marker is the worker's progress marker: it moves when the worker starts
// an item or comes back for work. Taking a batch and touching it count as
// its first item. Called with the pool's mu held.
func (w *worker[T]) marker() int64 { return max(w.next.Load(), w.base+1) }

// New starts a pool. It panics if Workers or Stall is not positive, unless
// Manual is set.
func New[T any](c Config[T]) *Pool[T] {
	p := build(c)
	p.start(c.Workers)
	return p
}

// build makes a pool that runs nothing yet; start starts it.
func build[T any](c Config[T]) *Pool[T] {
	p := &Pool[T]{
		run:     c.Run,
		batchAt: c.Now,
		yield:   c.Yield,
		touch:   c.Touch,
		onPanic: c.OnPanic,
		size:    c.Workers,
		stall:   c.Stall,
		every:   max(c.Stall/4, minEvery),
		manual:  c.Manual,
		epoch:   time.Now(),
		byID:    make(map[int64]*worker[T]),
		inSlot:  make([]int, max(c.Slots, 1)),
		stop:    make(chan struct{}),
	}
	if p.onPanic == nil {
		p.onPanic = func(v any) {
			slog.Error("executor: callback panicked", "panic", v, "stack", string(debug.Stack()))
		}
	}
	p.work.L = &p.mu
	p.exited.L = &p.mu
	if p.manual {
		return p
	}
	if c.Workers < 1 {
		panic("executor: Config.Workers must be at least 1")
	}
	if c.Stall <= 0 {
		panic("executor: Config.Stall must be positive")
	}
	p.timer = time.NewTimer(time.Hour)
	p.timer.Stop()
	return p
}

// start starts the watch and workers goroutines, unless the pool is
// manual.
func (p *Pool[T]) start(workers int) {
	if p.manual {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live++
	go p.watch()
	for range workers {
		p.spawn()
	}
}

// now is the pool's clock.
func (p *Pool[T]) now() time.Duration { return time.Since(p.epoch) }

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
	spare := p.queue.len() > p.coming-p.poked
	if spare {
		p.arm()
	}
	p.mu.Unlock() // wake published the hint, and arm's look too if it ran
	if spare && p.group != nil {
		// No goroutine of this pool is free for them: one of another
		// pool that waits for work may take them (see Group).
		p.group.poke(p)
	}
	return true
}

// wake signals idle goroutines, one per queued item that no goroutine
// already on its way will take. Called with mu held.
func (p *Pool[T]) wake() {
	for p.idle > 0 && p.coming-p.poked < p.queue.len() {
		p.idle--
		p.coming++
		p.work.Signal()
	}
	p.note()
}

// spawn starts a goroutine that takes work at once. Called with mu held.
func (p *Pool[T]) spawn() {
	w := &worker[T]{b: Batch{Slot: p.takeSlot()}}
	p.addWatched(w)
	p.gs++
	p.live++
	p.coming++
	p.noteGoing()
	p.note()
	go p.loop(w)
}

// takeSlot returns the slot fewest running goroutines have. Called with mu
// held; goroutines start seldom, and there are few slots.
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

// putSlot gives back the slot of a goroutine that exits. Called with mu
// held.
func (p *Pool[T]) putSlot(s int) { p.inSlot[s-p.slotBase]-- }

func (p *Pool[T]) addWatched(w *worker[T]) {
	w.index = len(p.watched)
	p.watched = append(p.watched, w)
}

func (p *Pool[T]) removeWatched(w *worker[T]) {
	last := p.watched[len(p.watched)-1]
	p.watched[w.index] = last
	last.index = w.index
	p.watched[len(p.watched)-1] = nil
	p.watched = p.watched[:len(p.watched)-1]
}

// arm starts the watch, which runs as long as work waits. Called with mu
// held whenever work may have to wait: items queued beyond the goroutines
// woken for them, or a batch of more than one item taken.
func (p *Pool[T]) arm() {
	if p.watching || p.closed {
		return
	}
	p.watching = true
	p.look(true)
}

// watch is the goroutine that looks at the pool while work waits.
func (p *Pool[T]) watch() {
	for {
		select {
		case <-p.timer.C:
		case <-p.stop:
		}
		// Measured before taking the lock: a system call and a read of
		// the runtime's metrics do not hold up Submit.
		busy, sched := p.meter.measure(p.now())
		p.mu.Lock()
		p.busy, p.sched = busy, sched
		if p.closed {
			p.live--
			p.exited.Broadcast()
			p.mu.Unlock()
			return
		}
		if p.watching {
			p.look(false)
		}
		pokes := p.pokes
		p.pokes = 0
		p.mu.Unlock()
		for range pokes {
			p.group.poke(p)
		}
	}
}

// look finds the goroutines stuck in one item, takes back the items they
// have not started, starts goroutines for waiting work if too few are left
// making progress, and sets the watch's timer if work still waits. Called
// with mu held and watching set; arming when the watch was not running.
func (p *Pool[T]) look(arming bool) {
	now := p.now()
	if arming || p.coming == 0 || p.arrivals != p.seenArrivals {
		p.seenArrivals, p.arrivalAt = p.arrivals, now
	}
	waiting := p.queue.len() > 0
	var longest time.Duration // in one item, of the busy goroutines
	for _, w := range p.watched {
		if !w.busy {
			continue
		}
		if m := w.marker(); m != w.mark {
			// The worker started this item after the watch last saw
			// the one before, and, unless the watch woke late, at
			// most one look ago. If the watch was not running, all
			// that is known is that it is in the item now.
			w.mark, w.markAt = m, max(w.seenAt, now-p.every)
			if arming {
				w.markAt = now
			}
		}
		w.seenAt = now
		if w.next.Load() < w.end {
			waiting = true
		}
		longest = max(longest, now-w.markAt)
	}
	// Every goroutine in one item for the stall delay is stuck, and so is
	// every one that would be by the next look.
	wait := p.every
	found := p.found[:0]
	for _, w := range p.watched {
		if !w.busy {
			continue
		}
		if in := now - w.markAt; longest >= p.stall && in >= p.stall-p.every {
			found = append(found, w)
		} else {
			wait = min(wait, p.stall-in)
		}
	}
	if len(found) > 0 {
		slices.SortFunc(found, func(a, b *worker[T]) int { return cmp.Compare(a.seq, b.seq) })
		stolen := p.stolen[:0]
		for _, w := range found {
			p.removeWatched(w)
			w.stuck = true
			p.stuck++
			stolen = w.steal(stolen)
		}
		p.noteGoing()
		p.queue.pushFront(stolen)
		clear(stolen)
		p.stolen = stolen[:0]
		clear(found)
	}
	p.found = found[:0]
	if p.queue.len() > 0 {
		waiting = true
		p.wake()
		p.replace(now, longest)
	}
	if waiting {
		p.timer.Reset(max(wait, minEvery))
	} else {
		p.watching = false
	}
	p.note()
}

// replace starts goroutines for the queued items no goroutine is coming
// for, when stuck goroutines leave fewer than Workers making progress: as
// many as are missing, or one per item when every goroutine is stuck.
// Called with mu held.
func (p *Pool[T]) replace(now, longest time.Duration) {
	items := p.queue.len() - p.coming
	if items <= 0 {
		return
	}
	// A goroutine per item only for goroutines stuck longer than a
	// goroutine commonly waits for a processor right now.
	starved := p.starved(now) || longest < 2*p.sched
	extra := p.gs - p.size
	if g := p.group; g != nil {
		// The free goroutines of other pools take as many items: the
		// watch pokes them once it has let go of mu (see Group).
		// maxExtra bounds the whole group's extra goroutines.
		free, gs := g.others(p)
		p.pokes = min(free, items)
		items -= p.pokes
		extra += gs - (g.size - p.size)
	}
	for range spawns(p.gs-p.stuck, p.size, items, starved, extra) {
		p.spawn()
	}
}

// maxExtra bounds the goroutines the pool runs beyond Workers. A goroutine
// per blocked item needs as many; but a goroutine that only looks blocked,
// descheduled at the start of a GC cycle, does not, and thousands of
// goroutines that all take work through the pool's lock convoy on it when
// the CPU is short: the 10-minute soak saw 9,000 of them, their scheduling
// latency p99 at 250ms, and the driver a second behind, waiting for the
// lock to submit. So up to maxExtra items that block at once start within
// the stall delay; more wait for one of them to return, or for the next
// stall delay, as with time.AfterFunc's goroutines they wait for the CPU.
const maxExtra = 256

// spawns returns how many goroutines to start for items waiting that no
// goroutine is coming for, when going goroutines make progress out of the
// size the pool keeps, and extra run beyond it: one per item when none
// makes progress, unless the CPU is starved, up to maxExtra extra (then
// Workers more); else as many as are missing.
func spawns(going, size, items int, starved bool, extra int) int {
	switch {
	case going == 0 && !starved:
		// Past maxExtra, Workers more per look, as when starved: items
		// that all block never wait for ever.
		return max(min(items, maxExtra-extra), min(size, items))
	case going < size:
		return min(size-going, items)
	}
	return 0
}

// starved reports whether goroutines the pool woke or started have not
// come for work for half the stall delay: they wait for a processor. The
// goroutines that look stuck may then be waiting for one too, descheduled
// in an item by a GC cycle or by other goroutines taking the CPU, and not
// blocked in it; a goroutine per waiting item would only add goroutines
// that wait beside them (the 10-minute soak saw 12,000 of them, and the
// driver fall a second behind). When items really block, the CPU is free
// and a goroutine woken or started comes at once. Called with mu held.
func (p *Pool[T]) starved(now time.Duration) bool {
	return p.busy || p.coming > 0 && now-p.arrivalAt >= p.stall/2
}

// schedSpan is how often the watch reads the runtime's scheduling latency.
const schedSpan = 10 * time.Millisecond

// measureSched sets sched to the p99 of the scheduling latency (runnable to
// running) of the goroutines the runtime scheduled since the last reading,
// at most once per schedSpan, from runtime/metrics' histogram. On a loaded
// machine a goroutine commonly waits for a processor longer than the stall
// delay: a GC cycle stops the world for milliseconds, a goroutine that
// yields queues behind others' 10ms slices. A goroutine descheduled for
// that long looks stuck, but is not blocked; replace starts a goroutine per
// item only for goroutines stuck twice that long. In an idle process, as in
// a test bubble, sched is about zero and changes nothing.
func (p *meter) measureSched(now time.Duration) {
	if now-p.schedAt < schedSpan && p.schedAt != 0 {
		return
	}
	p.schedAt = now
	if p.schedHist == nil {
		p.schedHist = []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	}
	metrics.Read(p.schedHist)
	if p.schedHist[0].Value.Kind() != metrics.KindFloat64Histogram {
		return
	}
	h := p.schedHist[0].Value.Float64Histogram()
	if len(p.schedCount) != len(h.Counts) {
		p.schedCount = slices.Clone(h.Counts)
		return
	}
	var n uint64
	for i, c := range h.Counts {
		n += c - p.schedCount[i]
	}
	if n < 100 {
		return // too few to tell: keep the last figure
	}
	rank, seen := n-n/100, uint64(0)
	for i, c := range h.Counts {
		if seen += c - p.schedCount[i]; seen >= rank {
			if b := h.Buckets[i+1]; !math.IsInf(b, 1) {
				p.sched = time.Duration(b * float64(time.Second))
			}
			break
		}
	}
	copy(p.schedCount, h.Counts)
}

// cpuSpan is the shortest span over which the watch measures how busy the
// CPU is.
const cpuSpan = 2 * time.Millisecond

// measureCPU reads the process's CPU time, at most once per cpuSpan, and
// sets busy if the process used 90% or more of GOMAXPROCS processors since
// the last reading: goroutines that look stuck are then most likely
// waiting for a processor, descheduled, not blocked in their items (which
// leaves the CPU idle). The first reading, and one after a reading older
// than a few cpuSpans (taken before the watch slept), only start a span.
func (p *meter) measureCPU(now time.Duration) {
	if now-p.cpuAt < cpuSpan {
		return
	}
	cpu, ok := processCPU()
	if !ok {
		return
	}
	c := time.Duration(cpu)
	if span := now - p.cpuAt; p.read && span <= 4*cpuSpan {
		p.busy = float64(c-p.cpu) >= 0.9*float64(span)*float64(runtime.GOMAXPROCS(0))
	} else {
		p.busy = false
	}
	p.cpu, p.cpuAt, p.read = c, now, true
}

// A meter measures, for the watch goroutine alone, how busy the CPU is
// and the runtime's scheduling latency, at most once per cpuSpan and
// schedSpan; the watch publishes the figures under mu for look.
type meter struct {
	cpu, cpuAt time.Duration // the process's CPU time, and when it was read
	read       bool          // cpu and cpuAt hold a reading
	busy       bool          // saturated over the span between the last two readings
	sched      time.Duration // the p99 of the scheduling latency
	schedAt    time.Duration
	schedHist  []metrics.Sample
	schedCount []uint64
}

// measure updates the figures that are due and returns them.
func (p *meter) measure(now time.Duration) (busy bool, sched time.Duration) {
	p.measureCPU(now)
	p.measureSched(now)
	return p.busy, p.sched
}

// take gives w its next batch from the queue, which must not be empty: a
// share of the queue among the goroutines about to take from it. Called
// with mu held.
func (p *Pool[T]) take(w *worker[T]) {
	takers := p.coming + 1
	if p.group != nil && p.queue.len() > takers {
		// Free goroutines of other pools take a share too: the
		// caller pokes them (see Group).
		free, _ := p.group.others(p)
		takers += min(free, p.queue.len()-takers)
	}
	n := min(batchMax, (p.queue.len()+takers-1)/takers)
	clear(w.batch)
	w.batch = p.queue.pop(w.batch[:0], n)
	w.base = w.next.Load()
	w.end = w.base + int64(len(w.batch))
	p.batches++
	w.seq = p.batches
	w.busy = true
	arm := !p.watching && (len(w.batch) > 1 || p.queue.len() > p.coming)
	if p.watching || arm {
		now := p.now()
		w.mark, w.markAt, w.seenAt = w.base+1, now, now
	}
	if arm {
		p.arm()
	}
	p.note()
}

// loop runs batches of queued items, until the pool is closed or there is
// no work and enough other goroutines to wait for it.
func (p *Pool[T]) loop(w *worker[T]) {
	w.goid = goid.Get()
	p.mu.Lock()
	p.byID[w.goid] = w
	p.coming--
	p.arrivals++
	if p.poked > 0 {
		p.poked--
	}

	normal := false
	defer func() {
		if !normal {
			// A callback called runtime.Goexit.
			p.mu.Lock()
		}
		delete(p.byID, w.goid)
		p.putSlot(w.b.Slot)
		if w.stuck {
			p.stuck--
		} else {
			p.removeWatched(w)
		}
		p.gs--
		p.noteGoing()
		p.note() // coming may have dropped (an arrival that exits) since the last note
		if !normal && !p.closed {
			// Put back what this goroutine had not started, and replace
			// it if it was needed.
			p.queue.pushFront(w.steal(nil))
			if p.gs-p.stuck < p.size {
				p.spawn()
			}
			p.wake()
			if p.queue.len() > p.coming {
				p.arm()
			}
		}
		p.live--
		p.exited.Broadcast()
		p.mu.Unlock()
	}()

	ran := 0
	for {
		for p.queue.len() == 0 && !p.closed {
			if p.gs-p.stuck > p.size {
				normal = true
				return
			}
			if p.group != nil {
				if p.steal() || p.closed || p.queue.len() > 0 {
					// Stole, or the pool changed while steal
					// let go of mu: look again.
					continue
				}
				if windowHook != nil {
					windowHook("idle")
				}
			}
			p.idle++
			p.note()
			if p.group != nil && p.group.spareElsewhere(p) {
				// Published as waiting, then a pool with spare
				// items seen: a Submit that saw this pool's hint
				// before it said waiting did not poke it. Steal.
				p.idle--
				p.note()
				continue
			}
			p.work.Wait()
			if !p.closed {
				p.coming--
				p.arrivals++
				if p.poked > 0 {
					p.poked--
				}
			}
		}
		if p.closed {
			normal = true
			return
		}
		p.take(w)
		spare := p.group != nil && p.queue.len() > p.coming
		p.mu.Unlock()
		if spare {
			p.group.poke(p)
		}
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
				// A worker that finds work queued never blocks, and a
				// processor that runs only such goroutines runs no
				// timers: one that is due (the SystemTimer's driver
				// waking from its sleep) waits up to the preemption
				// slice, 10ms. A yield lets the processor run it. But a
				// yield puts the worker at the back of the global run
				// queue, behind every other runnable goroutine, each
				// with a slice of up to 10ms: when the CPU is busy,
				// yielding every yieldEvery items starves the workers
				// (the 10-minute soak saw their scheduling latency p99
				// at 23-36ms, and a backlog of tens of thousands). So
				// the worker yields only when Yield says a timer is
				// due.
				runtime.Gosched()
			}
		}
		p.mu.Lock()
		w.busy = false
		clear(w.batch) // an idle goroutine keeps no item alive
		if w.stuck {
			w.stuck = false
			p.stuck--
			p.addWatched(w)
			p.noteGoing()
		}
	}
}

func (p *Pool[T]) call(v T, b *Batch) {
	defer func() {
		if r := recover(); r != nil {
			p.panicked(r)
		}
	}()
	p.run(v, b)
}

func (p *Pool[T]) panicked(v any) {
	p.panics.Add(1)
	defer func() {
		if r := recover(); r != nil {
			slog.Error("executor: panic handler panicked", "panic", r, "callback panic", v)
		}
	}()
	p.onPanic(v)
}

// Report hands v to the panic handler, as if an item had panicked with it,
// and counts it in Panics. It is for failures of user code that the caller
// of Run recovered itself. It must not be called with a lock held.
func (p *Pool[T]) Report(v any) { p.panicked(v) }

// RunQueued runs queued items on the calling goroutine until the queue is
// empty, including items they submit. It is for pools made with Manual. It
// pops one item at a time, so that Close always finds what has not started,
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
	for _, w := range p.byID {
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
	if p.queue.len() > 0 {
		return false
	}
	for _, w := range p.byID {
		if w.busy {
			return false
		}
	}
	return true
}

// OnWorker reports whether the calling goroutine is one of the pool's.
func (p *Pool[T]) OnWorker() bool {
	id := goid.Get()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byID[id] != nil
}

// Close stops the pool: no item starts after it returns. It returns the items
// that never started, oldest first, and waits until every goroutine of the
// pool has exited, except the caller's own when called from inside a
// callback. Later calls return nil at once.
func (p *Pool[T]) Close() []T {
	me := goid.Get()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	left := p.closeLocked()
	p.waitLocked(me)
	return left
}

// closeLocked marks the pool closed, takes back every item not started and
// tells its goroutines to exit. Called with mu held, the pool not closed.
func (p *Pool[T]) closeLocked() []T {
	p.closed = true
	// Batches hold older items than the queue; stuck goroutines have none.
	found := append(p.found[:0], p.watched...)
	slices.SortFunc(found, func(a, b *worker[T]) int { return cmp.Compare(a.seq, b.seq) })
	var left []T
	for _, w := range found {
		left = w.steal(left) // the caller's own batch too, when it is a worker
	}
	clear(found)
	left = append(left, p.queue.drain()...)
	p.idle = 0
	p.note()
	p.work.Broadcast()
	close(p.stop)
	if p.timer != nil {
		p.timer.Stop()
	}
	return left
}

// waitLocked waits until every goroutine of the closed pool has exited,
// but me's. Called with mu held.
func (p *Pool[T]) waitLocked(me int64) {
	want := 0
	if p.byID[me] != nil {
		want = 1 // called from a callback: do not wait for ourselves
	}
	for p.live > want {
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
