package timingwheel

import (
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/go-timingwheel/timingwheel/delayqueue"
	"github.com/go-timingwheel/timingwheel/internal/executor"
)

// A level is one wheel of the hierarchy. Level k has wheelSize buckets, each
// tick = wheelSize^k base ticks wide, and reaches span = tick*wheelSize base
// ticks ahead of its current time. The level above it is created the first
// time a deadline lies beyond span; its tick is this level's span.
//
// All fields are guarded by the owning shard's mutex.
type level struct {
	tick  int64  // bucket width in base ticks
	span  int64  // tick*wheelSize, or math.MaxInt64 once that overflows
	lead  int64  // how early a bucket of this level expires; see place
	shift int    // log2(tick) if tick is a power of two, else -1
	cur   int64  // the shard's wheel time rounded down to tick
	index int    // 0 for the lowest level; immutable
	sh    *shard // owner; immutable

	// pages holds the buckets, pageSize to a page, each page allocated
	// when one of its buckets is first used: a level above 0 holding timers
	// a few minutes out uses only a few of its buckets.
	pages [][]bucket
}

// pageSize is how many buckets are allocated together; a power of two.
const pageSize = 16

// A shard is a complete hierarchy of wheels with its own lock, its own
// delay queue and its own driver goroutine (see driver.go). A timer goes to
// the shard of the processor that arms it (see SystemTimer.shardFor), so
// that goroutines on different cores rarely meet on one lock, and each
// shard's buckets expire on its own driver, in parallel with the others.
type shard struct {
	// incoming is a lock-free stack of timers armed and not placed yet;
	// see shard.push. It is drained under mu.
	incoming atomic.Pointer[Timer]
	// pushed counts the pushes since the last drain: a hint, for
	// drainDepth; a processor arming on its own shard adds its pushes
	// pushBatch at a time (see localShardPush).
	// unstacked counts the timers that Stop popped off the stack, armed
	// and stopped before they were placed: Stats adds them to Armed and
	// Stopped. Both on incoming's cache line, which their writers have
	// just written.
	pushed    atomic.Uint32
	unstacked atomic.Uint64

	// mu guards every field below, the buckets of every level, the link
	// and at fields of every placed timer of the shard, and the changes of
	// their states (but a queued timer's CAS to stopped).
	mu sync.Mutex

	// c0 is the wheel time, in base ticks: the latest expiration the
	// driver has expired in this shard. It never decreases. A timer due at
	// tick D <= c0 whose deadline has passed is due now.
	c0      int64
	levels  []*level
	transit lanes // timers of an expired level-0 bucket, not yet re-placed
	// Timers of expired upper-level buckets, not yet re-placed: those of
	// level 1 (near, due within a quarter bucket, re-placed back to back)
	// and those of the levels above (far, re-placed at a pace). Kept apart:
	// one list would make a far list as urgent as the first near list to
	// join it (see paceCascade).
	cascade [2]lanes
	never   lanes // timers due at neverTick: no bucket expiry reaches them
	count   int   // pending timers: linked in a bucket or a list above
	places  int64 // free places of WithMaxPending's bound this shard keeps (see reserve)
	stats   shardStats
	closed  bool // the SystemTimer has stopped
	wakeDQ  bool // a push made a new delay queue head; wake the poller after unlocking

	// cascadeDue[i] is the earliest tick at which a timer of cascade[i]
	// may be due, or math.MaxInt64 when the list is empty. Only the
	// shard's driver reads and writes it (it may stay low after Stop
	// empties the list: that only makes the driver look sooner).
	cascadeDue [2]int64

	st *SystemTimer // immutable
	// pool runs the callbacks the shard fires: the executor's pool of the
	// shard, whose goroutines take them with no lock that other shards'
	// callbacks take (see the executor's Group). poolHome is the shard
	// whose index names that pool (the shard itself, unless there are
	// fewer workers than shards), for the locality test, and home its
	// index. Immutable.
	pool     *executor.Pool[*Timer]
	poolHome *shard
	home     int
	// dq holds the expirations of the shard's buckets that hold timers;
	// the shard's driver sleeps on it. Pushed to with mu held (see place),
	// polled by the driver alone; it has a lock of its own. Immutable.
	dq *delayqueue.Queue[bucketRef]

	// The shard's driver's own: its scratch space for due timers, and
	// when it next re-places a chunk of a cascade list due later than
	// cascadePaceSlack (ns since the epoch) and whether dq holds the ref
	// that wakes it then.
	batch      []*Timer
	nextPace   int64
	paceQueued bool
	// transitTick is the tick of the level-0 bucket whose timers are in
	// transit (see place): one of them due later has been pushed back by
	// a Reset.
	transitTick int64

	_ [64]byte // the driver's words below are read by every arming on the shard
	// wakeAt bounds when the shard's driver next drains the incoming
	// stack, in ns since the epoch: it is the time of dq's head, or
	// later. An arming may leave a timer due at or after wakeAt on the
	// stack instead of placing it; see shard.push. The driver stores it
	// before each drain; a push of a new head lowers it (lowerWake).
	wakeAt   atomic.Int64
	sleeping atomic.Bool // the driver is in dq's Poll
	// lag is the driver's lag at its last expiry of a level-0 bucket: how
	// far the clock was past the bucket's time, in ns; lagAt is when it
	// expired it, in ns since the epoch, so that Stats reports the most
	// recent expiry of any shard. Only the driver writes them.
	lag, lagAt atomic.Int64
	// handing is 1 while the driver holds timers it marked fired under
	// mu and has not yet handed to the executor (see replace): every
	// other path hands a timer over under the lock that marked it. Only
	// the driver writes it; tests read it to wait for every owed run.
	handing atomic.Int32

	_ [64]byte // keep neighbouring shards' locks off one cache line
}

func (sh *shard) init(st *SystemTimer) {
	sh.st = st
	sh.dq = delayqueue.New[bucketRef](st.clock)
	sh.wakeAt.Store(math.MaxInt64)
	sh.transit.init(make([]Timer, numLanes))
	for i := range sh.cascade {
		sh.cascade[i].init(make([]Timer, 1))
		sh.cascadeDue[i] = math.MaxInt64
	}
	sh.never.init(make([]Timer, 1))
	sh.c0 = floorDiv(st.now(), st.tick)
	sh.addLevel()
}

// addLevel creates the overflow wheel above the current top level.
func (sh *shard) addLevel() {
	n := sh.st.wheelSize
	tick := int64(1)
	if k := len(sh.levels); k > 0 {
		tick = sh.levels[k-1].span
		if tick == math.MaxInt64 {
			panic("timingwheel: internal error: no level above the top one")
		}
	}
	span := int64(math.MaxInt64)
	if tick <= math.MaxInt64/n {
		span = tick * n
	}
	lv := &level{tick: tick, span: span, shift: -1, cur: sh.c0 - floorMod(sh.c0, tick)}
	if tick&(tick-1) == 0 {
		lv.shift = bits.TrailingZeros64(uint64(tick))
	}
	if k := len(sh.levels); k > 0 {
		// A quarter of the bucket width, in whole buckets of the level
		// below; see place.
		lv.lead = n / 4 * sh.levels[k-1].tick
	}
	lv.index, lv.sh = len(sh.levels), sh
	lv.pages = make([][]bucket, (n+pageSize-1)/pageSize)
	sh.levels = append(sh.levels, lv)
}

// bucket returns the bucket in slot of lv, allocating its page on first
// use.
func (sh *shard) bucket(lv *level, slot int64) *bucket {
	pg := lv.pages[slot/pageSize]
	if pg == nil {
		first := slot / pageSize * pageSize
		pg = make([]bucket, min(pageSize, sh.st.wheelSize-first))
		k := 1
		if lv.index == 0 {
			k = numLanes
		}
		sentinels := make([]Timer, len(pg)*k)
		for i := range pg {
			b := &pg[i]
			b.root.init(sentinels[i*k : (i+1)*k : (i+1)*k])
			b.queued = notQueued
			b.minD = math.MaxInt64
		}
		lv.pages[slot/pageSize] = pg
	}
	return &pg[slot%pageSize]
}

// eachBucket calls f for every bucket of lv allocated so far.
func (lv *level) eachBucket(f func(slot int, b *bucket)) {
	for p, pg := range lv.pages {
		for i := range pg {
			f(p*pageSize+i, &pg[i])
		}
	}
}

// advance moves the wheel time forward to tick to.
func (sh *shard) advance(to int64) {
	if to <= sh.c0 {
		return
	}
	sh.c0 = to
	for _, lv := range sh.levels {
		lv.cur = to - floorMod(to, lv.tick)
	}
}

// place links t, with deadline v (its state word's value), into the
// lowest level whose window holds its due tick d, or reports that t is due
// now and links it nowhere. now is the current time, in ns since the epoch.
//
// A timer is due now only if both the wheel time and the clock have reached
// it: the wheel, its due tick d; the clock, its deadline. If the wheel has passed d but the
// clock has not reached the deadline, the deadline lies later in a tick the
// wheel has begun (see expire), or the clock went backwards; the timer
// then waits in the first bucket the wheel can still expire, which is
// late, never early.
//
// A bucket of level 0 is queued to expire at the earliest deadline of its
// timers placed with exact set, or else at the end of its tick: so that a
// timer alone in its bucket fires at its deadline, as a runtime timer
// does, not up to a tick later. The timers of an expired level-0 bucket
// that are not due yet come back with exact unset (replace), so that a
// bucket is expired at most twice for what it held (see expire).
func (sh *shard) place(t *Timer, v, now int64, exact bool) (due bool) {
	st := sh.st
	when := st.fromValue(v)
	d := st.dueTick(when)
	if d >= st.neverTick {
		sh.never.pushBack(t)
		return false
	}
	// The wheel has passed d, or, for a timer of the level-0 bucket the
	// driver is expiring (exact unset), d is the bucket's tick. A timer
	// of that bucket due later was pushed back by a Reset since it was
	// placed: it must run after the bucket's others, so it is placed
	// again as a new timer is, by its deadline, and runs at once if that
	// has passed.
	if when <= now && (d <= sh.c0 || !exact && d <= sh.transitTick) {
		return true
	}
	exact = exact || d > sh.transitTick
	if d <= sh.c0 {
		d = sh.c0 + 1
	}
	for k := 0; ; k++ {
		if k == len(sh.levels) {
			sh.addLevel()
		}
		lv := sh.levels[k]
		if d-lv.cur >= lv.span {
			continue
		}
		// The bucket of d's turn of this level: vid = ⌊d/tick⌋, slot =
		// vid mod wheelSize, without dividing when both are powers of two
		// (the default): the arithmetic shift floors negative ticks too.
		var vid, slot int64
		if lv.shift >= 0 {
			vid = d >> lv.shift
		} else {
			vid = floorDiv(d, lv.tick)
		}
		if m := st.slotMask; m != 0 {
			slot = vid & m
		} else {
			slot = floorMod(vid, st.wheelSize)
		}
		b := sh.bucket(lv, slot)
		if b.queued == notQueued {
			b.placed = 0 // empty: what it counted has expired
		}
		b.placed++
		b.root.pushBack(t)
		b.minD = min(b.minD, when)
		// A bucket of level 0 expires at the end of its tick, or at the
		// earliest exact deadline it holds (see above). A bucket of a
		// higher level expires lead ticks (a quarter of its width)
		// before its start, if that is still ahead of the wheel time:
		// the driver then re-places its timers, a chunk at a time
		// between due buckets, while none is due yet; the quarter that
		// does not fit the level below yet comes back to this bucket,
		// which expires again at its start. So the driver has a quarter
		// of a bucket's width to cascade it, and cascading a large bucket
		// delays nothing: at 1M timers a second and ~150ns per timer
		// cascaded, a cascade needs 15% of the width.
		exp := vid * lv.tick
		if lv.lead > 0 && exp-lv.lead > sh.c0 {
			exp -= lv.lead
		}
		key := satMul(exp, st.tick) // ns since the epoch
		if k == 0 && exact {
			key = when
		}
		// A bucket's timers share one expiration, except right after the
		// clock jumped: then a bucket can still hold timers of an earlier
		// turn of its wheel, queued under their earlier expiration. The
		// earlier expiration wins; expiring the bucket re-places every
		// timer, so the later ones find their own bucket then.
		if key < b.queued {
			b.queued = key
			touch(sh, "delay queue")
			head, err := sh.dq.Push(bucketRef{b, lv, key}, st.timeAt(key))
			if err == nil && head {
				sh.wakeDQ = true
				sh.lowerWake(key)
			}
		}
		return false
	}
}

// unlock releases mu, then wakes the delay queue's poller if a push made a
// new head: the wake is a channel send and never happens under the lock.
func (sh *shard) unlock() {
	wake := sh.wakeDQ
	sh.wakeDQ = false
	sh.mu.Unlock()
	if wake {
		touch(sh, "delay queue")
		sh.dq.Wake()
	}
}

// link places t, pending and linked nowhere, in the bucket of its deadline
// (exact as place says), or, if it is due now, marks it fired and reports
// true: the caller hands it to the executor (and counts it no longer
// pending if it was). A Reset may postpone t meanwhile, without the lock:
// marking it fired is a compare-and-swap against the deadline that placing
// it read, and a timer postponed since is placed again by its new
// deadline. Called with mu held.
func (sh *shard) link(t *Timer, now int64, exact bool) (fired bool) {
	for {
		w := t.w.Load()
		if debugChecks {
			if _, s := unpack(w); s != statePending {
				panic(fmt.Sprintf("timingwheel: internal error: link of a timer in state %d", s))
			}
		}
		if !sh.place(t, w>>stateBits, now, exact) {
			return false
		}
		// The deadline stays in the word, for the lateness runTimer
		// records.
		if t.w.CompareAndSwap(w, pack(w>>stateBits, stateFired)) {
			return true
		}
	}
}

// admit places t, newly armed (pending, with its due tick, and linked
// nowhere), or hands it to the executor if it is due: how every arming of a
// timer enters the wheel. Called with mu held.
func (sh *shard) admit(t *Timer, now int64) {
	sh.stats.armed++
	if sh.link(t, now, true) {
		sh.stats.fired++
		touch(sh.poolHome, "executor")
		sh.pool.Submit(t)
		return
	}
	sh.addPendingOf(t, 1)
}

// admitReserved is admit for a timer that holds a place in WithMaxPending's
// bound, reserved by the caller under mu: the place becomes the timer's, or
// is given back if the timer is due at once. Called with mu held.
func (sh *shard) admitReserved(t *Timer, now int64) {
	sh.stats.armed++
	if sh.link(t, now, true) {
		sh.release(1)
		sh.stats.fired++
		touch(sh.poolHome, "executor")
		sh.pool.Submit(t)
		return
	}
	sh.count++
}

// relink places t again after its due tick moved (pending, counted, and
// linked nowhere), or hands it to the executor if it is due now. Called
// with mu held.
func (sh *shard) relink(t *Timer, now int64) {
	if sh.link(t, now, true) {
		sh.addPendingOf(t, -1)
		sh.stats.fired++
		touch(sh.poolHome, "executor")
		sh.pool.Submit(t)
	}
}

// fireNow hands t, linked nowhere and just marked fired, to the executor.
// Called with mu held.
func (sh *shard) fireNow(t *Timer) {
	sh.stats.fired++
	touch(sh.poolHome, "executor")
	sh.pool.Submit(t)
}

// A push that succeeded is final: the timer is on a stack that the driver,
// a pusher that finds it deep, Len or SystemTimer.Stop takes, under the
// shard's lock, and so it is placed or returned. A pusher drains the stack
// itself when it finds it drainDepth deep (to bound the memory stopped
// timers keep there) or when its deadline is before wakeAt (the driver may
// sleep past it).

// drainDepth is how many pushes a shard takes before the pusher drains its
// stack itself: it bounds the work a drain does under the lock, and the
// memory a stack keeps. The count is shard.pushed, a hint: a timer its
// Stop popped again still counts, which only brings the drain sooner; a
// processor arming on its own shard adds its pushes pushBatch at a time
// (see localShardPush), so the stack may hold up to pushBatch-1 more for
// each processor of the shard.
const drainDepth = 1024

// closedStack is the head of a closed shard's incoming stack: SystemTimer.Stop
// swaps it in when it takes the stack, and a push that finds it fails. So a
// timer is never pushed on a stack nobody will take, and lost.
var closedStack = new(Timer)

// push puts t, queued (or owned by its pusher), on its shard's incoming
// stack without taking a lock, to be placed in a bucket later by whoever
// drains the stack, and reports true; or reports false, pushing nothing,
// if the shard is closed. The caller counts the push (countPush). Leaving
// t on the stack is safe for a timer due at or after wakeAt, because the
// driver drains every stack before it sleeps past wakeAt; the driver
// publishes wakeAt before it drains, and the pusher reads it after
// pushing, so one of them sees the other. Only a timer that is neither on
// the stack nor in a drainer's hands is pushed (see the states in
// timer.go). A push reads nothing of the timer below it, which may be
// popped and reused by its owner meanwhile (see Timer.Stop).
func (sh *shard) push(t *Timer) bool {
	touch(sh, "push")
	for {
		h := sh.incoming.Load()
		if h == closedStack {
			return false
		}
		t.next = h
		failpoint("push:head")
		if sh.incoming.CompareAndSwap(h, t) {
			return true
		}
	}
}

// countPush counts a push on sh as pc says, and reports whether its
// pusher is to drain the stack: whether the count reached drainDepth.
// Every pusher looks at the count, however it was counted, so a drain the
// count calls for comes with the next push even when the push counted
// last never came (see localShardPush).
func (sh *shard) countPush(pc pushCount) bool {
	if pc == countedByProc {
		return sh.pushed.Load() >= drainDepth
	}
	return sh.pushed.Add(1) >= drainDepth
}

// drain places every timer of the incoming stack that is still queued, and
// submits those that are due. Called with mu held.
func (sh *shard) drain(now int64) {
	if sh.closed {
		return // Stop took the stack; a later push is taken back by its pusher
	}
	sh.pushed.Store(0)         // before the swap: a push in between counts, but is drained
	t := sh.incoming.Swap(nil) // not closedStack: only Stop puts it there, under mu, with closed
	if t == nil {
		return
	}
	for t != nil {
		// Read the link first: once t leaves the queued states it may be
		// pushed again. Clear it, so that a drained timer its owner keeps
		// does not keep the rest of the stack alive.
		next := t.next
		clearNext(t)
		failpoint("drain:popped")
		for {
			w := t.w.Load()
			v, s := unpack(w)
			if s == stateOwned {
				waitOwned() // its pusher makes it queued, without the lock
				continue
			}
			if s == stateQueuedStopped {
				if t.w.CompareAndSwap(w, pack(0, stateStopped)) {
					sh.stats.armed++ // armed and stopped before it got here
					sh.stats.stopped++
					break
				}
				continue
			}
			if s != stateQueued {
				break // cannot happen: only queued timers are on the stack
			}
			if !t.w.CompareAndSwap(w, pack(v, statePending)) {
				continue
			}
			sh.admit(t, now)
			break
		}
		t = next
	}
}

// clearNext clears the stack link of t, just popped with the whole stack:
// atomically, since a Stop that has made t owned may be reading it, to pop
// t if it is still on top (it is not: see shard.unstack).
func clearNext(t *Timer) {
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&t.next)), nil)
}

// addPendingOf adjusts the count of pending timers by n timers like t.
// Under WithMaxPending, a periodic timer holds its place in the bound for
// its whole series, pending or running, so its moves in and out of the
// wheel do not count there (see ScheduleFunc).
func (sh *shard) addPendingOf(t *Timer, n int) {
	sh.count += n
	if sh.st.maxPending > 0 && !t.series() {
		if n < 0 {
			sh.release(int64(-n))
		} else {
			// Not reached: an arming under the bound reserves its
			// place first (admitReserved). Counted all the same.
			touchShared("pending")
			sh.st.free.Add(int64(-n))
		}
	}
}

// placeBatch is how many places a shard takes from st.free at once.
const placeBatch = 16

// reserve takes a place in WithMaxPending's bound for an arming on sh, from
// its cache or from st.free, and reports false if it finds none (then the
// caller collects; see reserveLocked). Called with sh.mu held.
func (sh *shard) reserve() bool {
	if sh.places > 0 {
		sh.places--
		return true
	}
	n := sh.st.takeFree(placeBatch)
	sh.places += max(n-1, 0)
	return n > 0
}

// release gives n places back: to sh's cache, or to st.free when it is low
// or the cache is full. Called with sh.mu held.
func (sh *shard) release(n int64) {
	st := sh.st
	if st.free.Load() < st.lowPlaces {
		touchShared("pending")
		st.free.Add(n + sh.places)
		sh.places = 0
		return
	}
	sh.places += n
	if sh.places > 2*placeBatch {
		touchShared("pending")
		st.free.Add(sh.places - placeBatch)
		sh.places = placeBatch
	}
}

// checkInvariants verifies the shard's structure. Tests switch it on with
// debugChecks; it is far too slow for production.
func (sh *shard) checkInvariants() error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := 0
	checkList := func(root *Timer, where func() string) error {
		prev := root
		for t := root.next; t != root; t = t.next {
			if t.prev != prev {
				return fmt.Errorf("%s: broken prev link", where())
			}
			if _, s := unpack(t.w.Load()); s != statePending {
				return fmt.Errorf("%s: linked timer in state %d", where(), s)
			}
			if t.sh != sh {
				return fmt.Errorf("%s: timer of another shard", where())
			}
			n++
			prev = t
		}
		if root.prev != prev {
			return fmt.Errorf("%s: broken tail link", where())
		}
		return nil
	}
	checkLanes := func(l *lanes, where func() string) error {
		for i := range l.lane {
			if err := checkList(&l.lane[i], where); err != nil {
				return err
			}
		}
		return nil
	}
	if err := checkLanes(&sh.transit, func() string { return "transit" }); err != nil {
		return err
	}
	for i := range sh.cascade {
		if err := checkLanes(&sh.cascade[i], func() string { return fmt.Sprintf("cascade[%d]", i) }); err != nil {
			return err
		}
		// The driver relies on cascadeDue to re-place a list before the
		// wheel passes its first timer: it may be low, never high.
		for l := range sh.cascade[i].lane {
			root := &sh.cascade[i].lane[l]
			for t := root.next; t != root; t = t.next {
				if v, _ := unpack(t.w.Load()); sh.st.dueTick(sh.st.fromValue(v)) < sh.cascadeDue[i] {
					return fmt.Errorf("cascade[%d]: a timer due at tick %d before cascadeDue %d", i, sh.st.dueTick(sh.st.fromValue(v)), sh.cascadeDue[i])
				}
			}
		}
	}
	if err := checkLanes(&sh.never, func() string { return "never" }); err != nil {
		return err
	}
	for i := range sh.never.lane {
		for root, t := &sh.never.lane[i], sh.never.lane[i].next; t != root; t = t.next {
			if v, _ := unpack(t.w.Load()); sh.st.dueTick(sh.st.fromValue(v)) < sh.st.neverTick {
				return fmt.Errorf("never: a timer due at tick %d, before %d", sh.st.dueTick(sh.st.fromValue(v)), sh.st.neverTick)
			}
		}
	}
	for k, lv := range sh.levels {
		if want := sh.c0 - floorMod(sh.c0, lv.tick); lv.cur != want {
			return fmt.Errorf("level %d: cur %d, want %d", k, lv.cur, want)
		}
		var err error
		lv.eachBucket(func(i int, b *bucket) {
			if err == nil && !b.root.empty() {
				where := func() string { return fmt.Sprintf("level %d bucket %d", k, i) }
				if err = checkLanes(&b.root, where); err == nil {
					err = sh.checkBucket(lv, b, where)
				}
			}
		})
		if err != nil {
			return err
		}
	}
	if n != sh.count {
		return fmt.Errorf("count is %d, but %d timers are linked", sh.count, n)
	}
	return nil
}

// checkBucket checks that a bucket holding timers is queued in time for
// each of them. Called with mu held.
func (sh *shard) checkBucket(lv *level, b *bucket, where func() string) error {
	if b.queued == notQueued {
		return fmt.Errorf("%s: holds timers but is not queued", where())
	}
	for j := range b.root.lane {
		for root, t := &b.root.lane[j], b.root.lane[j].next; t != root; t = t.next {
			// A Reset may postpone t without the lock: its deadline only
			// grows, so the limits below hold for the one it was placed by.
			v, _ := unpack(t.w.Load())
			when := sh.st.fromValue(v)
			d := sh.st.dueTick(when)
			// The bucket must expire no later than the start of the
			// timer's own bucket at this level (or than the next tick,
			// for a timer parked after the clock went backwards), so the
			// timer is never late.
			limit := satMul(max(floorDiv(d, lv.tick)*lv.tick, sh.c0+1), sh.st.tick)
			if b.queued > limit {
				return fmt.Errorf("%s: queued at %d ns, later than %d for a timer due at %d", where(), b.queued, limit, when)
			}
			if b.minD > max(when, satMul(sh.c0+1, sh.st.tick)) {
				return fmt.Errorf("%s: earliest deadline %d, but a timer is due at %d", where(), b.minD, when)
			}
		}
	}
	return nil
}

// Integer helpers. Times are int64 nanoseconds since the SystemTimer's epoch
// and may be negative if an injected clock is set before it.

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// satAdd returns a+b, clamped to the int64 range.
func satAdd(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// satMul returns a*b for b > 0, clamped to the int64 range.
func satMul(a, b int64) int64 {
	switch {
	case a > math.MaxInt64/b:
		return math.MaxInt64
	case a < math.MinInt64/b:
		return math.MinInt64
	}
	return a * b
}
