package timingwheel

import (
	"math"
	"slices"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/executor"
)

// The drivers. Each shard has a goroutine of its own, its driver, that owns
// the advance of the shard's wheel time (in tests of the manual harness,
// step plays every driver's part). It sleeps on the shard's delay queue and
// has two kinds of work:
//
//   - A due level-0 bucket: its timers are due now. Its list goes to the
//     shard's transit list, and every timer is re-placed at once: each is
//     due, and goes to the executor, unless the clock went backwards.
//   - A due bucket of a higher level: such a bucket expires a quarter of
//     its width early (see shard.place), so its timers are not due yet.
//     Its list goes to one of the shard's two cascade lists, near (from
//     level 1, due within 128ms at the defaults) or far (from the levels
//     above, due a minute or more ahead), which the driver re-places a
//     chunk at a time whenever no bucket is due: back to back when the list
//     may hold a timer due within a second, else at a pace (paceCascade).
//
// Before any bucket expiring at tick e is handled, every cascade list of
// the shard that may hold a timer due by e is re-placed, so the wheel time
// never passes a timer that is not placed yet, and a shard's timers fire in
// deadline order, tick by tick, even when its driver falls behind. The
// driver sleeps while a cascade list holds timers only between the chunks
// of a paced one.
//
// Drivers share nothing but the clock and the executor: a shard's driver
// reads and writes only its shard, so the shards expire their buckets on
// several cores at once, and no driver looks at another shard to find its
// next deadline (tokio's sharded timer, reverted in tokio-rs/tokio#7226,
// locked every shard for that). Timers of different shards due in the same
// tick may run in either order, as the runtime's timers of different Ps do.

// drive is a shard's driver goroutine. It runs until the shard's delay
// queue is closed.
func (sh *shard) drive() {
	defer sh.st.drivers.Done()
	defer driverTouches(sh)()
	for {
		// Stop closes the delay queue; stop working through a backlog
		// as soon as it has.
		for !sh.st.closed.Load() && sh.turn() {
		}
		// turn just settled: wakeAt is published and the incoming
		// stack is drained, so it is safe to sleep until the head.
		sh.sleeping.Store(true)
		ref, _, ok := sh.dq.Poll()
		sh.sleeping.Store(false)
		if !ok {
			return
		}
		sh.handle(ref)
	}
}

// step expires everything due by the clock and runs the callbacks it made
// due, on the calling goroutine, until nothing is left. It is the drivers
// and the workers of a SystemTimer made with withManual. Of the shards with
// work, it turns the one whose work is due first, so that timers of all
// shards fire in deadline order, as the model tests demand.
func (st *SystemTimer) step() {
	for {
		for st.turnFirst() {
		}
		st.pool.RunQueued()
		if !st.turnFirst() {
			if debugChecks {
				st.checkInvariants()
			}
			return
		}
	}
}

// turnFirst turns the shard whose next work is due first, in the manual
// harness: the earliest of its delay queue's head and its cascade lists'
// due ticks. If that shard has nothing to do yet, it turns the others in
// order. It reports whether any shard did something.
func (st *SystemTimer) turnFirst() bool {
	var first *shard
	firstAt := int64(math.MaxInt64)
	for i := range st.shards {
		sh := &st.shards[i]
		sh.settle() // drains the stack, so the head below is current
		at := min(sh.cascadeDue[0], sh.cascadeDue[1])
		if h, ok := sh.dq.Peek(); ok {
			at = min(at, ceilDiv(int64(h.Sub(st.epoch)), st.tick))
		}
		if first == nil || at < firstAt {
			first, firstAt = sh, at
		}
	}
	if first.turn() {
		return true
	}
	for i := range st.shards {
		if sh := &st.shards[i]; sh != first && sh.turn() {
			return true
		}
	}
	return false
}

// turn does one piece of the shard's driver's work without blocking: it
// handles one due bucket, or re-places one chunk of a cascade list. It
// reports whether there was anything to do.
func (sh *shard) turn() bool {
	sh.settle()
	if ref, _, ok := sh.dq.TryPoll(); ok {
		sh.handle(ref)
		return true
	}
	st := sh.st
	now := st.now()
	nowTick := floorDiv(now, st.tick)
	// Lists that may hold a timer due within cascadeUrgent: back to back,
	// whatever other drivers do.
	if sh.cascadeChunk(nowTick + st.urgentTicks) {
		return true
	}
	// Lists due within cascadePaceSlack: back to back too, but by at most
	// cascaders drivers at once, the list due first first; the others
	// look again a tick later.
	slack := nowTick + int64(cascadePaceSlack)/st.tick
	if due := min(sh.cascadeDue[0], sh.cascadeDue[1]); due <= slack {
		if st.enterCascade(due, nowTick) {
			sh.cascadeChunk(slack)
			st.leaveCascade()
			return true
		}
		sh.queueWake(satMul(nowTick+1, st.tick))
		return false
	}
	return sh.paceCascade(now)
}

// cascadeUrgent: a cascade list that may hold a timer due this soon is
// re-placed back to back by its driver, whatever the others do.
const cascadeUrgent = 16 * time.Millisecond

// enterCascade reports whether the calling driver may re-place a chunk of a
// cascade list due within cascadePaceSlack (and not within cascadeUrgent)
// now, the first due at tick due: whether fewer than st.cascaders drivers
// are doing so, and no driver refused in the last tick waits with a list
// due earlier. If it reports true, the driver calls leaveCascade after the
// chunk; if false, it looks again a tick later.
//
// Such a list is a bucket of level 1 expired a quarter of its width early:
// at a million timers a second, half a million timers, which its driver
// re-places in about 75ms of CPU, well within the bucket's lead (128ms at
// the defaults). Drivers of shards whose buckets expire together would do
// that on every processor at once and leave none to the workers: on two
// cores, a storm of 1M timers saw callbacks p99 8–20ms late, against
// 3.3–4.2ms with one driver. Half the processors (at least one) may
// cascade at once; a driver refused looks again a tick later, and a list
// that comes within cascadeUrgent of its first deadline goes on without
// asking. The count is the one word the drivers share, written once per
// chunk while lists cascade.
//
// The list due first goes first, as with the single driver, which
// re-placed the list due first of any shard: a driver leaving the gate
// comes back at once for its next chunk, while a refused one looks again
// only a tick later, so without an order one shard's list would keep the
// place until done while another's, due earlier, waited until cascadeUrgent
// before its first deadline. A refused driver leaves its list's due tick
// in waitDue, if earlier than the one there or if that one is stale (not
// renewed for a tick: its driver got in, or its list was re-placed
// otherwise); a driver whose list is due later steps aside. The
// two words are a hint, written without a lock: a stale or torn pair costs
// a tick of waiting, never a timer, since urgent lists do not ask.
func (st *SystemTimer) enterCascade(due, nowTick int64) bool {
	if w := st.waitDue.Load(); w < due && st.waitTick.Load() >= nowTick-1 {
		st.waitFor(due, nowTick)
		return false
	}
	for {
		n := st.cascading.Load()
		if n >= st.cascaders {
			st.waitFor(due, nowTick)
			return false
		}
		if st.cascading.CompareAndSwap(n, n+1) {
			break
		}
	}
	if st.waitDue.Load() == due {
		st.waitDue.CompareAndSwap(due, math.MaxInt64) // served
	}
	return true
}

// waitFor leaves due in waitDue for the next tick, if it is earlier than
// what is there or that is stale.
func (st *SystemTimer) waitFor(due, nowTick int64) {
	for {
		w := st.waitDue.Load()
		if w <= due && st.waitTick.Load() >= nowTick-1 {
			if w == due {
				st.waitTick.Store(nowTick) // still waiting
			}
			return
		}
		if st.waitDue.CompareAndSwap(w, due) {
			st.waitTick.Store(nowTick)
			return
		}
	}
}

func (st *SystemTimer) leaveCascade() { st.cascading.Add(-1) }

// cascadePaceSlack is how far ahead of its first deadline a cascade list
// is re-placed at a pace, not back to back; cascadePace the pace: one
// chunk (replaceChunk timers) per cascadePace.
const (
	cascadePaceSlack = time.Second
	cascadePace      = time.Millisecond
)

// paceCascade re-places a chunk of a cascade list due later than
// cascadePaceSlack, if the last chunk was cascadePace ago, and else has the
// delay queue wake the driver then. It reports whether it re-placed one.
//
// A list from level 2 or above is re-placed a quarter of its bucket's
// width ahead (65s at the defaults) and may hold millions of timers. Back
// to back, the driver would hold a processor for the whole list, and the
// workers fall behind (a 10-minute soak saw callbacks a second late when
// such a list came due in a GC cycle). Yielding the processor between
// chunks (runtime.Gosched) was worse under load: each yield queued the
// driver behind other goroutines' 10ms slices, thousands of times, and due
// buckets waited for it (driver lag 292ms in the soak). Paced, the driver
// sleeps in the delay queue between chunks, where a due bucket wakes it at
// once: 256k timers a second, so a million take 4s of a 65s lead, at a few
// percent of a core. Near lists are kept apart from far ones: in one list,
// the first level-1 bucket to expire after a level-2 one made the whole
// list due within the second, and the driver re-placed the far timers back
// to back after all (callbacks 130–350ms late at each level-2 expiry of the
// soak; TestFarCascadeStaysPacedWhenANearListJoins).
func (sh *shard) paceCascade(now int64) bool {
	if min(sh.cascadeDue[0], sh.cascadeDue[1]) == math.MaxInt64 {
		return false
	}
	if now >= sh.nextPace {
		sh.nextPace = now + int64(cascadePace)
		return sh.cascadeChunk(math.MaxInt64)
	}
	if !sh.paceQueued {
		sh.paceQueued = sh.queueWake(sh.nextPace)
	}
	return false
}

// queueWake queues a ref without a bucket at at (ns since the epoch),
// which only wakes the driver (see handle), and lowers the shard's wakeAt
// to it, so that driverDue sees the driver due then: settle published
// wakeAt before the push. It reports whether the push succeeded (it fails
// once the queue is closed).
func (sh *shard) queueWake(at int64) bool {
	if _, err := sh.dq.Push(bucketRef{exp: at}, sh.st.timeAt(at)); err != nil {
		return false
	}
	sh.lowerWake(at)
	return true
}

// handle expires a bucket the delay queue gave up, unless cascade lists
// may hold timers due by its expiration: then one chunk of those is
// re-placed and the bucket goes back to the queue, behind any bucket that
// chunk made. Expiring a bucket moves its shard's wheel time forward, and a
// cascade timer the wheel time has passed would be due the moment it is
// placed, out of deadline order.
func (sh *shard) handle(ref bucketRef) {
	if ref.b == nil {
		sh.paceQueued = false // the pace of a cascade: see paceCascade
		return
	}
	if sh.cascadeChunk(sh.st.dueTick(ref.exp)) {
		// Once the queue is closed the push fails, and Stop collects
		// the bucket's timers.
		_, _ = sh.dq.Push(ref, sh.st.timeAt(ref.exp))
		return
	}
	sh.expire(ref)
	if debugChecks {
		sh.st.checkInvariants()
	}
}

// expire advances the shard's wheels to a due bucket's expiration and takes
// all the bucket's timers out at once, under the lock: a level-0 bucket's
// into the transit list, which is then re-placed in full, a chunk per lock
// hold so that AfterFunc and Stop are never held up for long; a higher
// bucket's into the cascade list.
//
// A level-0 bucket may expire at the earliest deadline it holds, before
// the end of its tick (see place): the wheel time then moves only to the
// tick before, and the timers whose deadlines are later in the tick come
// back to the bucket, queued at the tick's end.
func (sh *shard) expire(ref bucketRef) {
	b, st := ref.b, sh.st
	sh.mu.Lock()
	touch(sh, "expire")
	if b.queued != ref.exp {
		sh.mu.Unlock() // stale: the bucket was queued again under an earlier time
		return
	}
	b.queued = notQueued
	sh.advance(floorDiv(ref.exp, st.tick))
	if ref.lv.index > 0 {
		i := min(ref.lv.index, 2) - 1 // near (level 1) or far
		sh.cascadeDue[i] = min(sh.cascadeDue[i], st.dueTick(b.minD))
		b.minD = math.MaxInt64
		b.root.moveAllTo(&sh.cascade[i])
		sh.mu.Unlock()
		return
	}
	b.minD = math.MaxInt64
	b.root.moveAllTo(&sh.transit)
	sh.transitTick = st.dueTick(ref.exp)
	sh.mu.Unlock()
	now := st.now()
	sh.lag.Store(now - ref.exp)
	sh.lagAt.Store(now)
	sh.replace(&sh.transit, true)
}

// cascadeChunk re-places one chunk of the shard's cascade list due first,
// if that is due by tick limit. It reports whether it did anything.
func (sh *shard) cascadeChunk(limit int64) bool {
	fi := -1
	for j, due := range sh.cascadeDue {
		if due == math.MaxInt64 || due > limit {
			continue // empty, or nothing due by limit
		}
		if fi < 0 || due < sh.cascadeDue[fi] {
			fi = j
		}
	}
	if fi < 0 {
		return false
	}
	sh.replace(&sh.cascade[fi], false)
	return true
}

// replaceChunk is how many timers are re-placed per lock hold.
const replaceChunk = 256

// replace re-places the timers of list, the shard's transit or cascade list: all of
// them, a chunk per lock hold, or one chunk. Due timers go to the executor.
//
// A chunk is detached by walking its next links and joining the list's
// root to what follows: the walk writes only to the timers it handles, never
// to their neighbours, which matters when the list is a million timers
// scattered over the heap.
func (sh *shard) replace(list *lanes, all bool) {
	st := sh.st
	batch := sh.batch[:0]
	// Timers coming down from a cascade list are placed by their exact
	// deadlines; those of an expired level-0 bucket that are not due yet,
	// by their ticks (see place).
	ci := sh.cascadeIndex(list)
	exact := ci >= 0
	for {
		now := st.now()
		sh.mu.Lock()
		touch(sh, "replace")
		var buf [numLanes]*Timer
		cur := buf[:len(list.lane)]
		for l := range cur {
			cur[l] = list.lane[l].next
		}
		// Take the lanes in turn, one timer from each, so that the cache
		// misses of the lanes' next links overlap; and mark the due ones
		// fired in a second pass, because a compare-and-swap is a fence on
		// amd64 and would wait for every miss in flight.
		due := len(batch)
		n := 0
		for n < replaceChunk {
			progress := false
			for l := range cur {
				t := cur[l]
				if t == &list.lane[l] {
					continue
				}
				cur[l] = t.next
				if v := t.w.Load() >> stateBits; sh.place(t, v, now, exact) {
					// Due, the common case for a level-0 bucket;
					// place linked it nowhere.
					batch = append(batch, t)
				} else if !exact && st.dueTick(st.fromValue(v)) > sh.transitTick {
					sh.stats.postponed++ // pushed back by a Reset since it was placed
				}
				n++
				progress = true
			}
			if !progress {
				break
			}
		}
		// A Reset may have postponed a due timer since place read its
		// due tick: link places it again then, and fires only the others.
		// From the first timer marked fired until the batch is submitted,
		// below, after the lock is released, a Stop of one of them returns
		// false (its run is owed) while the executor has not seen the run:
		// handing says so, for whoever waits for every owed run.
		marking := len(batch) > due
		if marking {
			sh.handing.Add(1)
		}
		fired := batch[:due]
		for _, t := range batch[due:] {
			t.next, t.prev = nil, nil
			if sh.link(t, now, exact) {
				fired = append(fired, t)
				sh.addPendingOf(t, -1)
			}
		}
		clear(batch[len(fired):])
		batch = fired
		sh.stats.fired += uint64(len(batch) - due)
		if ci >= 0 {
			sh.stats.cascaded += uint64(n)
		}
		for l := range cur {
			list.lane[l].next, cur[l].prev = cur[l], &list.lane[l]
		}
		done := list.empty()
		if done && ci >= 0 {
			sh.cascadeDue[ci] = math.MaxInt64
		}
		sh.unlock()
		if len(batch) > 0 {
			failpoint("replace:marked")
			sh.hand(batch)
			clear(batch)
			batch = batch[:0]
		}
		if marking {
			sh.handing.Add(-1)
		}
		if done || !all {
			break
		}
	}
	sh.batch = batch
}

// inlineMax bounds the batches of channel timers a driver runs itself.
const inlineMax = 16

// hand runs a batch of due timers, marked fired, that the driver took from
// a bucket: on the executor, unless it is a few channel timers and no
// other kind. A channel timer's run sends without blocking and runs no
// user code, so the driver runs those itself, as the runtime sends its
// channel timers' values from the scheduler: a Sleep or a NewTimer never
// waits a stall delay behind callbacks that block every worker. A larger
// batch goes to the workers, which run it in parallel. Called without
// locks. The manual harness queues every run.
func (sh *shard) hand(batch []*Timer) {
	st := sh.st
	if len(batch) <= inlineMax && !st.manual && !slices.ContainsFunc(batch, notChan) {
		b := executor.Batch{Pool: sh.home, At: st.now()}
		for _, t := range batch {
			runTimer(t, &b)
		}
		return
	}
	touch(sh.poolHome, "executor")
	sh.pool.Submit(batch...)
}

func notChan(t *Timer) bool { return t.kind != kindChan && t.kind != kindTicker }

// cascadeIndex returns i if list is sh.cascade[i], else -1.
func (sh *shard) cascadeIndex(list *lanes) int {
	for i := range sh.cascade {
		if list == &sh.cascade[i] {
			return i
		}
	}
	return -1
}

// settle publishes wakeAt, then drains the shard's incoming stack. The
// driver calls it before each piece of work and so before each sleep.
func (sh *shard) settle() {
	w := int64(math.MaxInt64)
	if at, ok := sh.dq.Peek(); ok {
		w = int64(at.Sub(sh.st.epoch))
	}
	sh.wakeAt.Store(w)
	if sh.incoming.Load() != nil {
		sh.st.drainShard(sh, sh.st.now())
	}
}

// lowerWake lowers wakeAt to w: a bucket due at w became the delay queue's
// head (place, with mu held), or the driver queued a ref to wake itself
// then (queueWake), so the driver will drain by then.
func (sh *shard) lowerWake(w int64) {
	for {
		cur := sh.wakeAt.Load()
		if w >= cur || sh.wakeAt.CompareAndSwap(cur, w) {
			return
		}
	}
}

// checkInvariants panics if a shard's invariants do not hold.
func (st *SystemTimer) checkInvariants() {
	for i := range st.shards {
		if err := st.shards[i].checkInvariants(); err != nil {
			panic("timingwheel: invariant violated: " + err.Error())
		}
	}
}
