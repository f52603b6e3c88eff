package timingwheel

import (
	"math"
	"time"
)

// The driver. One goroutine owns the advance of time (in tests of the
// manual harness, step plays its part). It has two kinds of work:
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
// Before any bucket expiring at tick e is handled, every cascade list that
// may hold a timer due by e is re-placed, so the wheel time never passes a
// timer that is not placed yet, and timers fire in deadline order, tick by
// tick, even when the driver falls behind. The driver sleeps while a
// cascade list holds timers only between the chunks of a paced one.

// drive is the driver goroutine. It runs until the delay queue is closed.
func (st *SystemTimer) drive() {
	defer close(st.driverDone)
	for {
		// Stop closes the delay queue; stop working through a backlog
		// as soon as it has.
		for !st.closed.Load() && st.turn() {
		}
		// turn just settled: wakeAt is published and the incoming
		// stacks are drained, so it is safe to sleep until the head.
		st.sleeping.Store(true)
		ref, _, ok := st.dq.Poll()
		st.sleeping.Store(false)
		if !ok {
			return
		}
		st.handle(ref)
	}
}

// step expires everything due by the clock and runs the callbacks it made
// due, on the calling goroutine, until nothing is left. It is the driver
// and the workers of a SystemTimer made with withManual.
func (st *SystemTimer) step() {
	for {
		for st.turn() {
		}
		st.pool.RunQueued()
		if !st.turn() {
			if debugChecks {
				st.checkInvariants()
			}
			return
		}
	}
}

// turn does one piece of the driver's work without blocking: it handles
// one due bucket, or re-places one chunk of a cascade list. It reports
// whether there was anything to do.
func (st *SystemTimer) turn() bool {
	st.settle()
	if ref, _, ok := st.dq.TryPoll(); ok {
		st.handle(ref)
		return true
	}
	// Lists due within cascadePaceSlack: back to back.
	now := st.now()
	if st.cascadeChunk(floorDiv(now, st.tick) + int64(cascadePaceSlack)/st.tick) {
		return true
	}
	return st.paceCascade(now)
}

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
func (st *SystemTimer) paceCascade(now int64) bool {
	due := int64(math.MaxInt64)
	for i := range st.shards {
		due = min(due, st.shards[i].cascadeDue[0], st.shards[i].cascadeDue[1])
	}
	if due == math.MaxInt64 {
		return false
	}
	if now >= st.nextPace {
		st.nextPace = now + int64(cascadePace)
		return st.cascadeChunk(math.MaxInt64)
	}
	if !st.paceQueued {
		// A ref without a bucket: handle only lets turn run again.
		at := ceilDiv(st.nextPace, st.tick)
		if _, err := st.dq.Push(bucketRef{exp: at}, st.tickTime(at)); err == nil {
			st.paceQueued = true
		}
	}
	return false
}

// handle expires a bucket the delay queue gave up, unless cascade lists
// may hold timers due by its expiration: then one chunk of those is
// re-placed and the bucket goes back to the queue, behind any bucket that
// chunk made. Expiring a bucket moves its shard's wheel time forward, and a
// cascade timer the wheel time has passed would be due the moment it is
// placed, out of deadline order.
func (st *SystemTimer) handle(ref bucketRef) {
	if ref.b == nil {
		st.paceQueued = false // the pace of a cascade: see paceCascade
		return
	}
	if st.cascadeChunk(ref.exp) {
		// Once the queue is closed the push fails, and Stop collects
		// the bucket's timers.
		_, _ = st.dq.Push(ref, st.tickTime(ref.exp))
		return
	}
	st.expire(ref)
	if debugChecks {
		st.checkInvariants()
	}
}

// expire advances a shard's wheels to a due bucket's expiration and takes
// all the bucket's timers out at once, under the lock: a level-0 bucket's
// into the transit list, which is then re-placed in full, a chunk per lock
// hold so that AfterFunc and Stop are never held up for long; a higher
// bucket's into the cascade list.
func (st *SystemTimer) expire(ref bucketRef) {
	b := ref.b
	sh := ref.lv.sh
	sh.mu.Lock()
	if b.queued != ref.exp {
		sh.mu.Unlock() // stale: the bucket was queued again under an earlier time
		return
	}
	b.queued = notQueued
	sh.advance(ref.exp)
	if ref.lv.index > 0 {
		i := min(ref.lv.index, 2) - 1 // near (level 1) or far
		sh.cascadeDue[i] = min(sh.cascadeDue[i], b.minD)
		b.minD = math.MaxInt64
		b.root.moveAllTo(&sh.cascade[i])
		sh.mu.Unlock()
		return
	}
	b.minD = math.MaxInt64
	b.root.moveAllTo(&sh.transit)
	sh.mu.Unlock()
	st.lag.Store(st.now() - satMul(ref.exp, st.tick))
	st.replace(sh, &sh.transit, true)
}

// cascadeChunk re-places one chunk of the cascade list due first, of any
// shard, if that is due by tick limit. It reports whether it did anything.
func (st *SystemTimer) cascadeChunk(limit int64) bool {
	var first *shard
	fi := 0
	for i := range st.shards {
		sh := &st.shards[i]
		for j, due := range sh.cascadeDue {
			if due == math.MaxInt64 || due > limit {
				continue // empty, or nothing due by limit
			}
			if first == nil || due < first.cascadeDue[fi] {
				first, fi = sh, j
			}
		}
	}
	if first == nil {
		return false
	}
	st.replace(first, &first.cascade[fi], false)
	return true
}

// replaceChunk is how many timers are re-placed per lock hold.
const replaceChunk = 256

// replace re-places the timers of list, sh's transit or cascade list: all of
// them, a chunk per lock hold, or one chunk. Due timers go to the executor.
//
// A chunk is detached by walking its next links and joining the list's
// root to what follows: the walk writes only to the timers it handles, never
// to their neighbours, which matters when the list is a million timers
// scattered over the heap.
func (st *SystemTimer) replace(sh *shard, list *lanes, all bool) {
	batch := st.batch[:0]
	for {
		nowTick := floorDiv(st.now(), st.tick)
		sh.mu.Lock()
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
				if sh.place(t, t.w.Load()>>stateBits, nowTick) {
					// Due, the common case for a level-0 bucket;
					// place linked it nowhere.
					batch = append(batch, t)
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
			st.handing.Add(1)
		}
		fired := batch[:due]
		for _, t := range batch[due:] {
			t.next, t.prev = nil, nil
			if sh.link(t, nowTick) {
				fired = append(fired, t)
				sh.addPendingOf(t, -1)
			}
		}
		clear(batch[len(fired):])
		batch = fired
		sh.stats.fired += uint64(len(batch) - due)
		ci := sh.cascadeIndex(list)
		if ci >= 0 {
			sh.stats.cascaded += uint64(n)
		} else {
			// Each timer of an expired level-0 bucket is due, unless it
			// was pushed back by a Reset since it was placed (or the
			// clock went back): then it was placed again.
			sh.stats.postponed += uint64(n - (len(batch) - due))
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
			st.pool.Submit(batch...)
			clear(batch)
			batch = batch[:0]
		}
		if marking {
			st.handing.Add(-1)
		}
		if done || !all {
			break
		}
	}
	st.batch = batch
}

// cascadeIndex returns i if list is sh.cascade[i], else -1.
func (sh *shard) cascadeIndex(list *lanes) int {
	for i := range sh.cascade {
		if list == &sh.cascade[i] {
			return i
		}
	}
	return -1
}

// settle publishes wakeAt, then drains every shard's incoming stack. The
// driver calls it before each piece of work and so before each sleep.
func (st *SystemTimer) settle() {
	w := int64(math.MaxInt64)
	if at, ok := st.dq.Peek(); ok {
		w = int64(at.Sub(st.epoch))
	}
	st.wakeAt.Store(w)
	now := st.now()
	for i := range st.shards {
		if sh := &st.shards[i]; sh.incoming.Load() != nil {
			st.drainShard(sh, now)
		}
	}
}

// lowerWake lowers wakeAt to w: a bucket due at w became the delay queue's
// head, so the driver will drain by then.
func (st *SystemTimer) lowerWake(w int64) {
	touchShared("delay queue")
	for {
		cur := st.wakeAt.Load()
		if w >= cur || st.wakeAt.CompareAndSwap(cur, w) {
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
