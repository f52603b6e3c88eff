package timingwheel

import (
	"errors"
	"math"
	"math/bits"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"
	"github.com/go-timingwheel/timingwheel/internal/executor"
	"github.com/go-timingwheel/timingwheel/internal/proc"
)

var (
	// ErrStopped says that the SystemTimer has been stopped, so a timer
	// could not be armed. It is returned by [SystemTimer.AfterFunc],
	// [SystemTimer.ScheduleFunc] and [Timer.TryReset] (Reset arms nothing
	// and does not say why); it is
	// the cause (context.Cause) of the contexts of [SystemTimer.WithTimeout]
	// and [SystemTimer.WithDeadline], canceled at birth or when the
	// SystemTimer stops. The packages built on this one wrap it: idleconn's
	// Wrap, and Accept on a listener from idleconn.Listen; purgatory's
	// TryCompleteElseWatch. Test for it with errors.Is. Channel timers
	// never return it: they outlive the SystemTimer (see
	// [SystemTimer.NewTimer]).
	ErrStopped = errors.New("timingwheel: the SystemTimer is stopped")
	// ErrTooManyPending says that arming a timer would exceed the bound of
	// [WithMaxPending]. The calls that return [ErrStopped] return it
	// instead when they find the SystemTimer running and full, and so do
	// [SystemTimer.NewTimer], [SystemTimer.NewTicker], [ChanTimer.TryReset]
	// and [Ticker.TryReset].
	ErrTooManyPending = errors.New("timingwheel: too many pending timers")

	errNilFunc      = errors.New("timingwheel: nil func")
	errNilScheduler = errors.New("timingwheel: nil Scheduler")
)

// A SystemTimer runs functions after delays. It is safe for concurrent use.
// See the package doc for its design and guarantees.
type SystemTimer struct {
	clock     clock.Clock
	realClock bool      // the default clock: now reads the monotonic clock directly
	epoch     time.Time // time zero of the wheels; every deadline is ns since epoch
	tick      int64     // ns
	wheelSize int64
	slotMask  int64 // wheelSize-1 if it is a power of two, else 0
	// neverTick is the due tick of deadlines that never come: those in
	// the tick that reaches math.MaxInt64 ns after the epoch (the largest
	// Duration; no bucket expires there) and beyond, and, with ticks under
	// 8ns, those beyond maxValue ticks (36 years at 1ns). dueTick clamps
	// due ticks to it, and place keeps such timers in a list of their
	// own, which no bucket expiry reaches.
	neverTick int64

	shards     []shard
	shardShift uint        // a timer's shard by address is the top bits of its address hash
	procs      []procCount // each processor's count of pushes; see localShardPush
	// fixedPlace: a timer's shard never depends on the processor
	// (withAddressShards, or a single shard).
	fixedPlace bool
	// placeHook, set by tests before any timer is made, stands for the
	// processor's shard in localShard, so that a test decides where a
	// Reset moves a timer.
	placeHook func() *shard

	pool *executor.Group[*Timer] // a pool per shard: see shard.pool

	maxPending int64
	// free is the number of places in WithMaxPending's bound that neither
	// a timer nor a shard's cache (shard.places) holds; see reserve.
	free atomic.Int64
	// lowPlaces: while free is below it, shards cache no places.
	lowPlaces int64
	rejected  atomic.Uint64
	lateness  []*atomicHistogram // callback start − due time, by executor pool
	workers   int                // WithWorkers

	_      [64]byte // closed is read on every AfterFunc: keep it apart
	closed atomic.Bool
	_      [64]byte

	// cascading counts the drivers re-placing a chunk of a cascade list
	// that is not urgent; at most cascaders (immutable) do at once. See
	// enterCascade. urgentTicks is cascadeUrgent in ticks, at least 1.
	cascading   atomic.Int32
	cascaders   int32
	urgentTicks int64
	// waitDue is the first due tick of the earliest cascade list a
	// refused driver waits to re-place, and waitTick the tick at which it
	// was last refused; see enterCascade. Hints, written without a lock.
	waitDue, waitTick atomic.Int64

	stopped   chan struct{}  // closed when the first Stop has finished
	drivers   sync.WaitGroup // the shards' driver goroutines
	manual    bool
	isDefault bool // Default's: Stop panics (see there); set before it is shared
}

// New returns a running SystemTimer, or an error naming the first invalid
// option.
func New(opts ...Option) (*SystemTimer, error) {
	c, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	st := &SystemTimer{
		clock:      c.clock,
		realClock:  !c.clockSet || reflect.TypeOf(c.clock) == reflect.TypeOf(clock.New()),
		tick:       int64(c.tick),
		wheelSize:  int64(c.wheelSize),
		maxPending: int64(c.maxPending),
		workers:    c.workers,
		stopped:    make(chan struct{}),
		manual:     c.manual,
	}
	st.neverTick = min(ceilDiv(math.MaxInt64, st.tick), maxValue)
	if st.wheelSize&(st.wheelSize-1) == 0 {
		st.slotMask = st.wheelSize - 1
	}
	st.epoch = st.clock.Now()

	nshards := 1 << bits.Len(uint(runtime.GOMAXPROCS(0)-1))
	nshards = min(nshards, 64)
	st.shardShift = uint(64 - bits.TrailingZeros(uint(nshards)))
	st.cascaders = int32(max(1, runtime.GOMAXPROCS(0)/2))
	st.urgentTicks = max(1, ceilDiv(int64(cascadeUrgent), st.tick))
	st.waitDue.Store(math.MaxInt64)
	st.shards = make([]shard, nshards)
	st.fixedPlace = c.byAddress || nshards == 1
	for i := range st.shards {
		st.shards[i].init(st)
	}
	st.free.Store(st.maxPending)
	st.lowPlaces = int64(nshards) * placeBatch
	st.procs = make([]procCount, nshards)

	// A pool of workers per shard (fewer when there are fewer workers):
	// callbacks record their lateness in their worker's pool's histogram,
	// so that workers on different cores seldom write one cache line.
	st.pool = executor.NewGroup(executor.Config[*Timer]{
		Workers: c.workers,
		Run:     runTimer,
		Start:   st.startBatch,
		Yield:   st.driverDue,
		OnPanic: c.onPanic,
		Stall:   min(c.tick, time.Millisecond),
		Manual:  c.manual,
		Busy:    executorBusy,
	}, nshards)
	for i := range st.shards {
		sh := &st.shards[i]
		sh.pool = st.pool.Pool(i)
		sh.home = i % st.pool.Pools()
		sh.poolHome = &st.shards[sh.home]
	}
	st.lateness = make([]*atomicHistogram, st.pool.Pools())
	for i := range st.lateness {
		st.lateness[i] = new(atomicHistogram)
	}
	if !st.manual {
		st.drivers.Add(len(st.shards))
		for i := range st.shards {
			go st.shards[i].drive()
		}
	}
	return st, nil
}

// executorBusy, if set (tests), stands for the executor's reading of the
// process's runnable goroutines (executor.Config.Busy), which goroutines
// outside a test's synctest bubble move.
var executorBusy func() bool

// runTimer runs a timer's function, on a goroutine of the executor (or the
// driver, for channel timers: see shard.hand), after recording how late it
// starts. Contexts and periodic timers have no function: their Timer is the
// first field of a struct that knows what to do, which saves the allocation
// of a method value per timer.
//
// The lateness is b.At, the clock read once for the batch of up to 16
// callbacks the worker took, less the due time: a clock read per callback
// would cost the fire path a third of its time. A callback that waits
// behind others of its batch thus counts less late by their run time,
// which the executor bounds by its stall delay (the tick, at most 1ms).
func runTimer(t *Timer, b *executor.Batch) {
	st := t.shard().st // t may move meanwhile, if re-armed: any shard's st is st
	// The deadline of the run, unless a Reset re-armed the timer since it
	// fired (its run is still owed): then the run goes uncounted.
	if due, s := unpack(t.w.Load()); s == stateFired {
		st.lateness[b.Pool].counts[bucketOf(time.Duration(b.At-st.fromValue(due)))].Add(1)
	}
	switch t.kind {
	case kindContext:
		ctxOf(t).expire()
	case kindPeriodic:
		periodicOf(t).run()
	case kindChan, kindTicker:
		chanOf(t).fire()
	default:
		t.f()
	}
}

// driverDue reports whether a shard's driver sleeps past the time it
// should wake: then a worker yields its processor, so that the processor
// runs the driver's timer; else the worker keeps it (see executor's loop).
// With a clock other than the real one, the drivers also wake every
// millisecond of real time to look at the clock: the worker yields as
// before. It reads two words of each shard, every yieldEvery callbacks.
func (st *SystemTimer) driverDue() bool {
	if !st.realClock {
		return true
	}
	now := int64(-1)
	for i := range st.shards {
		sh := &st.shards[i]
		if !sh.sleeping.Load() {
			continue
		}
		if now < 0 {
			now = st.now()
		}
		if now >= sh.wakeAt.Load() {
			return true
		}
	}
	return false
}

// startBatch runs on a worker before its batch of callbacks. It reads the
// words runTimer starts with, the timer's kind and the first word of its
// function's closure, of every timer of the batch, so that the cache misses
// overlap: that cut the CPU time of a storm of a million timers by a sixth.
// And it reads the clock, once for the batch (see runTimer).
func (st *SystemTimer) startBatch(ts []*Timer, b *executor.Batch) {
	var sum uintptr
	for _, t := range ts {
		if t.f == nil {
			sum += uintptr(t.kind)
		} else {
			sum += **(**uintptr)(unsafe.Pointer(&t.f))
		}
	}
	b.Sink, b.At = sum, st.now()
}

// now returns the current time in ns since the epoch.
func (st *SystemTimer) now() int64 {
	if st.realClock {
		return int64(time.Since(st.epoch))
	}
	return int64(st.clock.Now().Sub(st.epoch))
}

// clockNow reads the clock.
func (st *SystemTimer) clockNow() time.Time {
	if st.realClock {
		return time.Now() // not through the clock.Clock interface
	}
	return st.clock.Now()
}

// deadline returns the wheel time of the absolute time t, in ns since the
// epoch, and the current wheel time. It measures t as time.Until does:
// against a clock reading taken now, on the monotonic clock if t has a
// monotonic reading and on the wall clock if not (a time from time.Date,
// time.Unix, Parse, a cron schedule, or a deadline that came over the wire).
// Measuring a wall-clock time against the epoch instead would move it by
// every step of the wall clock since New, early when the clock was stepped
// back.
func (st *SystemTimer) deadline(t time.Time) (when, now int64) {
	return st.deadlineFrom(t, st.clockNow())
}

// deadlineFrom is deadline measured against n, a clock reading taken
// earlier by the caller (with no lock held: the clock may be the user's).
// The deadline does not depend on when n was read, as long as it was read
// from the same clock: an earlier n makes now smaller and t.Sub(n) larger
// by the same amount; now is only as fresh as n.
func (st *SystemTimer) deadlineFrom(t, n time.Time) (when, now int64) {
	now = int64(n.Sub(st.epoch))
	d := t.Sub(n)
	when = satAdd(now, int64(d))
	if d == math.MaxInt64 {
		// Saturated: t is more than the largest Duration after n, and
		// when may fall short of it (with n as far before the epoch,
		// now saturated too, and their sum was -1). The later of when
		// and t measured from the epoch is never early.
		when = max(when, int64(t.Sub(st.epoch)))
	}
	return when, now
}

// dueTick returns the tick at which a timer with deadline when (ns since
// the epoch) is due: the tick the deadline lies in (the ticks are
// counted from the epoch, tick k covering the deadlines in ((k-1)·tick,
// k·tick]), or neverTick.
func (st *SystemTimer) dueTick(when int64) int64 {
	return min(ceilDiv(when, st.tick), st.neverTick)
}

// unitShift: a state word holds a deadline in units of 1<<unitShift ns,
// 16ns, whatever the tick: so its 60 bits hold every deadline a Duration
// after the epoch reaches. A deadline rounded up to the unit may cross into
// the next tick; a bucket of level 0 comes due at the earliest deadline it
// holds, so that costs the timer less than a unit.
const unitShift = 4

// toValue returns the deadline when, in ns since the epoch, as a timer's
// state word holds it: in units of 16ns, rounded up, so that nothing is
// early by it; maxValue (never) within a unit of math.MaxInt64, the
// horizon, where rounding up would pass it.
func (st *SystemTimer) toValue(when int64) int64 {
	if when > math.MaxInt64-(1<<unitShift-1) {
		return maxValue
	}
	return (when + 1<<unitShift - 1) >> unitShift // floor of a sum: a ceiling
}

// fromValue returns the deadline, in ns since the epoch, of a state word's
// value v: math.MaxInt64 for maxValue, which never comes.
func (st *SystemTimer) fromValue(v int64) int64 {
	if v >= maxValue {
		return math.MaxInt64
	}
	return v << unitShift
}

// never is the delay queue time of a bucket whose expiration lies beyond
// the largest Duration after the epoch: no clock reading reaches it. The
// clock itself can pass epoch+MaxInt64 (a mock set centuries ahead), and
// such a bucket must then not look due while its timers are not.
var never = time.Unix(1<<62, 0)

// timeAt returns the time ns after the epoch; never for math.MaxInt64,
// what a saturated key is.
func (st *SystemTimer) timeAt(ns int64) time.Time {
	if ns == math.MaxInt64 {
		return never
	}
	return st.epoch.Add(time.Duration(ns))
}

// attach binds t, a timer being made or bound, to st: it tags t with its
// address (see Timer.self) and puts it on the shard of the processor (the
// runtime's P) the calling goroutine runs on, so that goroutines on
// different cores arm, stop and reset their timers on shards of their own,
// as the Go runtime keeps its timers per P; with withAddressShards, on the
// shard of t's address (shardOf). If push, the caller is about to push t
// on that shard, and attach counts the push (see localShardPush). A timer
// that is not pending may move later, when a Reset re-arms it on another
// processor (localShard). Placement is locality, never correctness: any
// goroutine may stop, reset or fire any timer.
func (st *SystemTimer) attach(t *Timer, push bool) pushCount {
	t.self = selfTag(t)
	if len(st.shards) == 1 {
		t.sh = &st.shards[0]
		return countOnShard
	}
	var pc pushCount
	t.sh, pc = st.localShardPush(st.shardOf(t), push)
	return pc
}

// localShard returns the shard of the processor the caller runs on, or def
// with withAddressShards.
func (st *SystemTimer) localShard(def *shard) *shard {
	sh, _ := st.localShardPush(def, false)
	return sh
}

// localShardPush is localShard for a caller that is about to push a timer
// on the shard it returns (if push). The processor's id picks the shard
// (internal/proc): shards are as many as processors when New ran, up to
// 64; processors beyond (GOMAXPROCS raised later, or above 64) share
// shards. The push is counted toward drainDepth in the processor's own
// count while the goroutine is pinned to it, with no atomic instruction
// but one in pushBatch, which adds the count to the shard's; it returns
// countedByProc then. A processor that shares its shard, and every one
// under the race detector (which does not see that pinning orders the
// processor's goroutines), returns countOnShard: the pusher counts the
// push on the shard (shard.countPush). A caller that does not push after
// all leaves a push counted that never came: the drain only comes sooner.
func (st *SystemTimer) localShardPush(def *shard, push bool) (*shard, pushCount) {
	if st.fixedPlace {
		return def, countOnShard // inlined: a single shard pays no call
	}
	return st.procShardPush(def, push)
}

// procShardPush is localShardPush with several shards by processor.
func (st *SystemTimer) procShardPush(def *shard, push bool) (*shard, pushCount) {
	if st.placeHook != nil {
		return st.placeHook(), countOnShard
	}
	id := proc.Pin()
	sh, pc := &st.shards[id&(len(st.shards)-1)], countOnShard
	if push && uint(id) < uint(len(st.procs)) && !raceEnabled {
		c := &st.procs[id]
		if c.pushes++; c.pushes >= pushBatch {
			sh.pushed.Add(c.pushes)
			c.pushes = 0
		}
		pc = countedByProc
	}
	proc.Unpin()
	touch(sh, "local") // the processor's shard, for the locality test
	return sh, pc
}

// pushBatch is how many pushes a processor counts before it adds them to
// its shard's pushed count: so the stack may hold up to pushBatch-1 more
// than drainDepth for each processor of the shard.
const pushBatch = 32

// A procCount is a processor's count of the pushes on its shard that it
// has not added to the shard's yet (see localShardPush): written only by
// a goroutine pinned to that processor. Counts are 128 bytes apart, since
// they are written on every arming: never on one cache line, nor on the
// pair of lines an adjacent-line prefetcher fetches together.
type procCount struct {
	pushes uint32
	_      [124]byte
}

// A pushCount says who counts a push toward drainDepth: the pusher, on
// the shard's pushed count, or the processor's count, which counted it
// already (see localShardPush).
type pushCount uint8

const (
	countOnShard  pushCount = iota // the pusher counts it on sh.pushed
	countedByProc                  // counted in the processor's count
)

// shardOf returns the shard of t chosen by a hash of its address (the Go
// heap does not move objects, so the address is stable): the placement of
// withAddressShards, and the fallback when no processor's shard is free.
func (st *SystemTimer) shardOf(t *Timer) *shard {
	h := uint64(uintptr(unsafe.Pointer(t))) * 0x9e3779b97f4a7c15
	return &st.shards[h>>st.shardShift]
}

// mustBeMade panics if st is not a SystemTimer made by New: a nil pointer
// would otherwise fail with a nil dereference, and a zero SystemTimer,
// which has no wheels, with an index out of range, both far from the
// mistake.
func (st *SystemTimer) mustBeMade(method string) {
	if st == nil {
		panic("timingwheel: " + method + " called on a nil *SystemTimer")
	}
	if len(st.shards) == 0 {
		panic("timingwheel: " + method + " called on a SystemTimer not made by New")
	}
}

// AfterFunc arranges for f to run on the executor pool once d has elapsed,
// never earlier and at most one tick later. If d <= 0, f is handed to the
// pool at once.
//
// AfterFunc returns an error, and no Timer, in three cases: f is nil; the
// SystemTimer has been stopped ([ErrStopped]); WithMaxPending's bound of
// pending timers is reached ([ErrTooManyPending]). Test for the last two
// with errors.Is: the callback will never run, so do now what it would
// have done, drop it, or shed the load that wanted it.
func (st *SystemTimer) AfterFunc(d time.Duration, f func()) (*Timer, error) {
	st.mustBeMade("AfterFunc")
	if f == nil {
		return nil, errNilFunc
	}
	t := &Timer{f: f}
	pc := st.attach(t, d > 0)
	if d <= 0 {
		if err := st.fireNew(t); err != nil {
			return nil, err
		}
		return t, nil
	}
	now := st.now()
	if err := st.arm(t, satAdd(now, int64(d)), now, pc); err != nil {
		return nil, err
	}
	return t, nil
}

// arm arms a new timer, one no other goroutine knows of yet, to run at when
// (ns since the epoch); pc is how attach counted its push.
func (st *SystemTimer) arm(t *Timer, when, now int64, pc pushCount) error {
	sh := t.sh // read before the push publishes t: a Reset may move it after
	if when < sh.wakeAt.Load() || st.maxPending > 0 || st.closed.Load() {
		return st.startLocked(t, when, now)
	}
	t.initQueued(st.toValue(when))
	if !sh.push(t) {
		// SystemTimer.Stop has taken the stack; nobody has seen t.
		return ErrStopped
	}
	if !sh.countPush(pc) && when >= sh.wakeAt.Load() {
		return nil // the common case
	}
	st.drainShard(sh, st.now())
	return nil
}

// startLocked arms a new timer under its shard's lock.
func (st *SystemTimer) startLocked(t *Timer, when, now int64) error {
	if st.closed.Load() {
		return ErrStopped
	}
	sh := t.sh
	sh.mu.Lock()
	touch(sh, "lock")
	if sh.closed {
		sh.unlock()
		return ErrStopped
	}
	if st.maxPending > 0 && !t.series() {
		// A periodic timer holds a place of its own (see ScheduleFunc).
		if !st.reserveLocked(sh) {
			sh.unlock()
			return ErrTooManyPending
		}
		if sh.closed {
			sh.release(1)
			sh.unlock()
			return ErrStopped
		}
		t.w.Store(pack(st.toValue(when), statePending))
		sh.admitReserved(t, now)
		sh.unlock()
		return nil
	}
	t.w.Store(pack(st.toValue(when), statePending))
	sh.admit(t, now)
	sh.unlock()
	return nil
}

// WithMaxPending's bound is kept in places: st.free counts those free
// for any shard, and each shard caches some of its own (shard.places), so
// that goroutines arming and stopping timers on their own shards do not
// all write one word: a shard takes placeBatch places from st.free at once
// and gives back what it holds beyond 2×placeBatch, under its lock, so
// st.free is written about once per placeBatch armings or stops of a
// shard. The places a shard caches are free too, and the bound is as
// exact as one word would make it:
//
//   - An arming takes a place (shard.reserve) only while holding its
//     shard's lock, and the place becomes the timer's own when it is placed
//     (admitReserved), or is given back before the lock is released: a
//     place is never counted twice, nor held by an arming that failed.
//   - A timer leaves pending (stopped, fired, returned by SystemTimer.Stop)
//     under its shard's lock, and gives its place back under the same hold.
//   - Before refusing, an arming takes every shard's lock in turn and moves
//     the places it caches to st.free (collectPlaces), then tries once
//     more: every timer that left pending before that has given its place
//     back, and no shard caches any.
//   - While st.free is below lowPlaces (placeBatch per shard), shards take
//     places one at a time and give them straight back to st.free: no
//     shard caches places taken or given back after collectPlaces passed
//     it. So a refusal is made only while the bound is reached by timers
//     pending or being armed, but for armings and stops made while it
//     collects.
//
// One path is approximate: a periodic timer restarted by Reset after its
// series ended holds its shard's lock and does not collect: it takes a
// place its own shard keeps, or one of st.free, and may be refused while
// other shards keep up to 2×placeBatch free places each. Other series
// (ScheduleFunc, Tickers) take their one place at st.free (takeFree),
// collecting before they refuse, and give it back there.

// takeFree takes places from st.free and returns how many: want if it
// holds lowPlaces more than that, else one, or none if it is empty. A
// compare-and-swap, so that a failed attempt never takes a place.
func (st *SystemTimer) takeFree(want int64) int64 {
	for {
		f := st.free.Load()
		if f <= 0 {
			return 0
		}
		take := int64(1)
		if f >= st.lowPlaces+want {
			take = want
		}
		touchShared("pending")
		if st.free.CompareAndSwap(f, f-take) {
			return take
		}
	}
}

// collectAndTake collects the places every shard caches, and takes one
// from st.free, for a series, if one is there. Called with no shard lock
// held.
func (st *SystemTimer) collectAndTake() bool {
	st.collectPlaces()
	return st.takeFree(1) > 0
}

// collectPlaces moves the places every shard caches to st.free, taking
// each shard's lock in turn: every timer that left pending under a lock
// before it has given its place back. Called with no shard lock held.
func (st *SystemTimer) collectPlaces() {
	for i := range st.shards {
		sh := &st.shards[i]
		sh.mu.Lock()
		touch(sh, "collect")
		if sh.places > 0 {
			touchShared("pending")
			st.free.Add(sh.places)
			sh.places = 0
		}
		sh.mu.Unlock()
		failpoint("collect:passed")
	}
}

// reserveLocked takes a place in the bound for an arming on sh, whose lock
// the caller holds; if none is free, it releases the lock to collect the
// places of every shard, takes it again and tries once more. It reports
// false, counted as a rejection, if the bound is reached. The caller must
// look at what it read under the lock again if reserveLocked released it:
// it says so by sh.closed, or the timer's state, having changed.
func (st *SystemTimer) reserveLocked(sh *shard) bool {
	if sh.reserve() {
		return true
	}
	sh.unlock()
	failpoint("reserve:unlocked")
	st.collectPlaces()
	sh.mu.Lock()
	if sh.reserve() {
		return true
	}
	st.rejected.Add(1)
	return false
}

// drainShard places the timers of sh's incoming stack.
func (st *SystemTimer) drainShard(sh *shard, now int64) {
	sh.mu.Lock()
	touch(sh, "lock")
	sh.drain(now)
	sh.unlock()
}

// fireNew hands a new timer to the executor at once.
func (st *SystemTimer) fireNew(t *Timer) error {
	sh := t.sh
	now := st.now() // the clock may be the user's: read it with no lock held
	sh.mu.Lock()
	defer sh.mu.Unlock()
	touch(sh, "lock")
	if sh.closed {
		return ErrStopped
	}
	t.w.Store(pack(st.toValue(now), stateFired)) // due now, for the lateness
	sh.stats.armed++
	sh.fireNow(t) // accepted: the pool closes only after every shard
	return nil
}

// Len returns the number of pending timers: armed, and neither handed to
// the executor nor stopped. It sums the shards one at a time, each under
// its lock: while timers are armed and stopped on other goroutines, the sum
// may count a timer stopped on a shard after Len passed it and another
// armed on a shard it comes to later, though the two were never pending
// at once. A count at rest, or a trend, is what it is for.
func (st *SystemTimer) Len() int {
	st.mustBeMade("Len")
	n := 0
	now := st.now()
	for i := range st.shards {
		sh := &st.shards[i]
		sh.mu.Lock()
		sh.drain(now) // queued timers are pending too
		n += sh.count
		sh.unlock()
	}
	return n
}

// Stop shuts the SystemTimer down: its driver goroutine and its workers
// stop, every timer it holds stops, later calls that would arm a timer
// return [ErrStopped] (see there), and no callback starts after Stop
// returns. It returns the Timers whose callbacks had not started: pending
// ones and ones handed to the executor but not yet run; a periodic timer
// whose run is in progress ends with that run, and is not returned.
// Contexts from WithTimeout and WithDeadline that had not expired are
// canceled instead (their Err is context.Canceled). Channel timers and
// tickers from NewTimer and NewTicker are not returned either: they go on,
// on timers of the clock (the runtime's, by default), as if nothing had
// happened.
//
// Stop waits for the driver, the workers and every callback still running to
// return, except a callback that is itself calling Stop. It is idempotent:
// later calls wait for the first to finish (unless made from a callback) and
// return nil.
//
// Stop panics on the SystemTimer that [Default] returns: that one is shared
// by every package of the program that uses the package-level functions,
// which cannot report [ErrStopped], so a Stop by one of them would break
// all the others, far from the mistake.
func (st *SystemTimer) Stop() []*Timer {
	st.mustBeMade("Stop")
	if st.isDefault {
		panic("timingwheel: Stop called on the default SystemTimer, which the package-level functions share and which never stops; make a SystemTimer of your own with New to stop it")
	}
	return st.stop()
}

// stop is Stop, for any SystemTimer: the tests stop the default with it.
func (st *SystemTimer) stop() []*Timer {
	if !st.closed.CompareAndSwap(false, true) {
		if !st.pool.OnWorker() {
			<-st.stopped
		}
		return nil
	}
	for i := range st.shards {
		st.shards[i].dq.Close()
	}
	st.drivers.Wait()

	// Every pending timer is returned: size the result once, since with
	// millions of timers growing it by appending costs seconds.
	n := 0
	for i := range st.shards {
		sh := &st.shards[i]
		sh.mu.Lock()
		n += sh.count
		sh.mu.Unlock()
	}
	left := make([]*Timer, 0, n+drainDepth*len(st.shards))
	for i := range st.shards {
		sh := &st.shards[i]
		sh.mu.Lock()
		sh.closed = true
		// From here on every push fails: a timer pushed before is on
		// the stack taken here.
		for t := sh.incoming.Swap(closedStack); t != nil; {
			next := t.next
			clearNext(t)
			if takeFromStack(t) {
				left = append(left, t)
			}
			t = next
		}
		counted := 0 // places in WithMaxPending's bound given back
		collect := func(l *lanes) {
			for i := range l.lane {
				root := &l.lane[i]
				for t := root.next; t != root; {
					next := t.next
					t.next, t.prev = nil, nil
					t.w.Store(pack(0, stateReturned))
					switch t.kind {
					case kindPeriodic:
						periodicOf(t).release()
					case kindTicker:
						// Its place is given back by orphan, below.
					default:
						counted++
					}
					left = append(left, t)
					t = next
				}
				root.initList()
			}
		}
		collect(&sh.transit)
		collect(&sh.cascade[0])
		collect(&sh.cascade[1])
		collect(&sh.never)
		for _, lv := range sh.levels {
			lv.eachBucket(func(_ int, b *bucket) { collect(&b.root) })
		}
		sh.count = 0
		if st.maxPending > 0 {
			sh.release(int64(counted))
		}
		sh.mu.Unlock()
		failpoint("stop:closed") // this shard closed, the next not yet
	}
	// Before waiting for the callbacks that run: one of them may wait
	// for a channel timer (a Sleep) or a context of this SystemTimer, and
	// would wait for ever if these were ended only after it returned.
	left = handOver(left)
	n = len(left)
	// The runs handed to the executor that never started, taken back
	// before Wait: a running callback may wait for one of them (a
	// channel timer due, its run queued behind the callback) and would
	// wait for ever if it were ended only after the callback returned.
	for _, t := range st.pool.Shut() {
		// A run handed to the executor is owed even if the timer was
		// reset or stopped since, so a run that never started returns
		// its timer: once, if it was also collected above or was queued
		// twice.
		if _, s := unpack(t.w.Swap(pack(0, stateReturned))); s != stateReturned {
			left = append(left, t)
		}
		if t.kind == kindPeriodic {
			// Its series ends here, with a run that never started:
			// its place in the bound goes back.
			sh := t.sh
			sh.mu.Lock()
			periodicOf(t).release()
			sh.mu.Unlock()
		}
	}
	left = append(left[:n], handOver(left[n:])...)
	st.pool.Wait()
	close(st.stopped)
	return left
}

// handOver ends, outside any lock, the timers of left that are not the
// caller's, and returns the others, in left's array. Contexts are
// canceled. A channel timer goes on on a timer of the clock (orphan).
func handOver(left []*Timer) []*Timer {
	kept := left[:0]
	for _, t := range left {
		switch t.kind {
		case kindContext:
			ctxOf(t).cancel()
		case kindChan, kindTicker:
			chanOf(t).orphan() // its clock's timer takes over
		default:
			kept = append(kept, t)
		}
	}
	clear(left[len(kept):])
	return kept
}

// takeFromStack settles a timer that Stop took off an incoming stack: a
// queued one is returned, and takeFromStack reports true; a stopped one is
// done with.
func takeFromStack(t *Timer) bool {
	for {
		w := t.w.Load()
		switch _, s := unpack(w); s {
		case stateOwned:
			waitOwned() // its pusher makes it queued
		case stateQueued:
			if t.w.CompareAndSwap(w, pack(0, stateReturned)) {
				return true
			}
		case stateQueuedStopped:
			if t.w.CompareAndSwap(w, pack(0, stateStopped)) {
				return false
			}
		default:
			return false // cannot happen: only queued timers are on the stack
		}
	}
}
