package main

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/go-timingwheel/timingwheel"
)

// The soak's checker. Every timer the soak arms lives in a slot of a
// preallocated slice, indexed by a uint32 id; a slot is reused for a new
// timer once its last one has run or been stopped, and each reuse bumps the
// slot's generation. A callback is a closure holding the id and the
// generation of its timer, and nothing else: 16 bytes, no pointer. The
// hot path takes no lock and touches no map: a callback does one
// compare-and-swap on its slot's state word, and the goroutine that owns a
// slot (the churner that armed it) does two per arming.
//
// A slot's state word counts the runs outstanding: armings (AfterFunc, Reset)
// whose callback has neither run nor been stopped. An arming adds one, a
// callback takes one, a Stop or Reset that returns true takes one. A
// callback that finds no run outstanding, or a newer generation, ran twice or
// ran after Stop returned true. The slot also keeps the earliest and latest
// deadline of its outstanding runs; a callback is early if it starts before
// the earliest and late by the latest. Usually one run is outstanding and
// both are its deadline; two are outstanding only when a Reset meets a
// callback already handed to the executor, and the pair then bounds both.

// The bits of a slot's state word.
const (
	soakOutMask     = 0xff   // runs outstanding
	soakLock        = 1 << 8 // the owner is writing the deadlines
	soakOverdue     = 1 << 9 // counted overdue by a sweep: its late run is not counted again
	soakSeqShift    = 16     // a counter bumped by every lock, so a CAS sees any write
	soakSeqMask     = 0xffff << soakSeqShift
	soakGenShift    = 32 // the generation: the timer the slot holds
	soakMaxExamples = 5  // details kept per kind of violation
)

// A soakSlot is the checker's record of the timer in one slot. Times are ns
// on the checker's clock (see soakChecker.now).
type soakSlot struct {
	state atomic.Uint64
	// dmin and dmax bound the deadlines of the runs outstanding. They are
	// written by the slot's owner with soakLock set; a reader loads them
	// between a load of state and a CAS of the same value, so a CAS that
	// succeeds proves they went with that state.
	dmin, dmax atomic.Int64
	armed      atomic.Int64 // when the slot was last armed, for reports
}

// lock sets soakLock and bumps the sequence; only the slot's owner calls
// it, and it never calls the library while it holds the lock. It returns
// the new state without the lock bit.
func (s *soakSlot) lock() uint64 {
	for {
		v := s.state.Load()
		n := v&^soakSeqMask | (v+1<<soakSeqShift)&soakSeqMask
		if s.state.CompareAndSwap(v, n|soakLock) {
			return n
		}
	}
}

// unlock publishes v as the state, and so the deadlines written under the
// lock.
func (s *soakSlot) unlock(v uint64) { s.state.Store(v &^ soakLock) }

func soakOut(v uint64) int     { return int(v & soakOutMask) }
func soakGen(v uint64) uint32  { return uint32(v >> soakGenShift) }
func (s *soakSlot) out() int   { return soakOut(s.state.Load()) }
func (s *soakSlot) gen() int64 { return int64(soakGen(s.state.Load())) }

// A soakViolation is a kind of broken promise.
type soakViolation int

const (
	vEarly           soakViolation = iota // a callback started before its deadline
	vLate                                 // a callback started more than a tick plus -soak-late after its deadline
	vOverdue                              // a timer had not run more than a tick plus -soak-late after its deadline
	vExtraRun                             // a callback ran with no run outstanding: twice, or after Stop returned true
	vStopTrue                             // Timer.Stop returned true, but the callback had run
	vStopFalseEarly                       // Timer.Stop returned false before the deadline: handed over early
	vResetTrue                            // Timer.Reset returned true for a timer that had run or was stopped
	vResetFalseEarly                      // Timer.Reset returned false before the deadline
	vAfterStop                            // a callback started after SystemTimer.Stop returned
	vLost                                 // pending by the checker, yet not returned by SystemTimer.Stop
	vUnexpected                           // returned by SystemTimer.Stop, yet not pending by the checker
	vAPI                                  // an error from the library, or a count that does not add up
	numSoakViolations
)

var soakViolationNames = [numSoakViolations]string{
	vEarly:           "early run",
	vLate:            "late run",
	vOverdue:         "overdue (not run)",
	vExtraRun:        "extra run",
	vStopTrue:        "Stop true after run",
	vStopFalseEarly:  "Stop false before deadline",
	vResetTrue:       "Reset true, not pending",
	vResetFalseEarly: "Reset false before deadline",
	vAfterStop:       "run after SystemTimer.Stop",
	vLost:            "lost at SystemTimer.Stop",
	vUnexpected:      "unexpected in SystemTimer.Stop",
	vAPI:             "library error",
}

// soakShards spreads the callbacks' counters over cache lines.
const soakShards = 8

// soakLateBuckets is the size of the lateness histogram; see lateBucket.
const soakLateBuckets = 248

type soakRunShard struct {
	runs atomic.Int64
	late [soakLateBuckets]atomic.Int64
	_    [64]byte
}

// A soakChecker holds what the soak knows of every timer.
type soakChecker struct {
	base      time.Time // time zero of the checker's clock
	tick      int64     // the library's tick, ns
	lateLimit int64     // a run later than this is a violation: tick + -soak-late

	slots   []soakSlot
	handles []*timingwheel.Timer // by slot; written by the slot's owner only
	plan    []uint8              // by slot: what the owner will do with it; owner only

	closed  atomic.Bool  // SystemTimer.Stop has returned
	maxLate atomic.Int64 // ns
	// intervalLate is the max lateness since the sampler last took it;
	// watchLate since the watcher last did (see soakWatch).
	intervalLate, watchLate atomic.Int64
	shards                  [soakShards]soakRunShard

	counts [numSoakViolations]atomic.Int64

	mu       sync.Mutex // guards examples
	examples [numSoakViolations][]string
}

func newSoakChecker(slots int, tick, late time.Duration) *soakChecker {
	return &soakChecker{
		base:      time.Now(),
		tick:      int64(tick),
		lateLimit: int64(tick + late),
		slots:     make([]soakSlot, slots),
		handles:   make([]*timingwheel.Timer, slots),
		plan:      make([]uint8, slots),
	}
}

// now reads the checker's clock: ns since base, on the monotonic clock, as
// the library reads its own.
func (c *soakChecker) now() int64 { return int64(time.Since(c.base)) }

// violate counts a violation and keeps its details, up to a few per kind.
// It is the cold path: it may format and lock.
func (c *soakChecker) violate(k soakViolation, id uint32, format string, args ...any) {
	if c.counts[k].Add(1) > soakMaxExamples {
		return
	}
	msg := fmt.Sprintf("slot %d (gen %d, armed at %s): ", id, c.slots[id].gen(), soakAt(c.slots[id].armed.Load())) +
		fmt.Sprintf(format, args...)
	c.mu.Lock()
	c.examples[k] = append(c.examples[k], msg)
	c.mu.Unlock()
}

// note counts a violation that concerns no one slot, and keeps its
// message.
func (c *soakChecker) note(k soakViolation, format string, args ...any) {
	c.counts[k].Add(1)
	c.mu.Lock()
	c.examples[k] = append(c.examples[k], fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

// violations returns the number of violations so far.
func (c *soakChecker) violations() int64 {
	var n int64
	for i := range c.counts {
		n += c.counts[i].Load()
	}
	return n
}

// runs returns the number of callbacks run so far.
func (c *soakChecker) runs() int64 {
	var n int64
	for i := range c.shards {
		n += c.shards[i].runs.Load()
	}
	return n
}

// soakAt writes a time of the checker's clock.
func soakAt(ns int64) string { return "t+" + formatNanos(float64(ns)) }

// soakCurrent is the checker of the soak that is running: one at a time.
// Callbacks find it here rather than in their closure, so that a closure
// holds no pointer: 16 bytes the garbage collector marks without scanning,
// where ten million of them would otherwise cost each GC cycle ten million
// cache misses.
var soakCurrent *soakChecker

// callback returns the callback of the timer of generation gen in slot id.
func soakCallback(id, gen uint32) func() {
	return func() { soakCurrent.fire(id, gen) }
}

// fire is every callback: it checks the run against the slot and counts it.
func (c *soakChecker) fire(id, gen uint32) {
	now := c.now()
	if c.closed.Load() {
		c.violate(vAfterStop, id, "callback of gen %d started at %s, after SystemTimer.Stop returned", gen, soakAt(now))
	}
	sh := &c.shards[id%soakShards]
	sh.runs.Add(1)
	s := &c.slots[id]
	for {
		v := s.state.Load()
		if v&soakLock != 0 {
			runtime.Gosched() // the owner holds it for a few stores
			continue
		}
		if g := soakGen(v); g != gen {
			c.violate(vExtraRun, id, "callback of gen %d ran at %s, after the slot went to gen %d: it ran after Stop returned true, or twice", gen, soakAt(now), g)
			return
		}
		if soakOut(v) == 0 {
			c.violate(vExtraRun, id, "callback ran at %s with no run outstanding: twice, or after Stop returned true", soakAt(now))
			return
		}
		dmin, dmax := s.dmin.Load(), s.dmax.Load()
		if !s.state.CompareAndSwap(v, v-1) {
			continue
		}
		if now < dmin {
			c.violate(vEarly, id, "callback ran at %s, %s before its deadline %s", soakAt(now), formatNanos(float64(dmin-now)), soakAt(dmin))
		}
		late := now - dmax
		sh.late[lateBucket(late)].Add(1)
		soakMax(&c.maxLate, late)
		soakMax(&c.intervalLate, late)
		soakMax(&c.watchLate, late)
		if late > c.lateLimit && v&soakOverdue == 0 {
			c.violate(vLate, id, "callback ran at %s, %s after its deadline %s", soakAt(now), formatNanos(float64(late)), soakAt(dmax))
		}
		return
	}
}

// soakMax raises m to v.
func soakMax(m *atomic.Int64, v int64) {
	for cur := m.Load(); v > cur && !m.CompareAndSwap(cur, v); cur = m.Load() {
	}
}

// beginArm records a new timer in slot id, due d after r0, and returns its
// generation; the caller then calls AfterFunc with a callback of that
// generation. The slot must have no run outstanding.
func (c *soakChecker) beginArm(id uint32, r0 int64, d time.Duration) uint32 {
	s := &c.slots[id]
	dl := r0 + int64(d)
	v := s.lock()
	gen := soakGen(v) + 1
	s.dmin.Store(dl)
	s.dmax.Store(dl)
	s.armed.Store(r0)
	s.unlock(uint64(gen)<<soakGenShift | v&soakSeqMask | 1)
	return gen
}

// abortArm undoes beginArm after AfterFunc failed.
func (c *soakChecker) abortArm(id uint32) {
	s := &c.slots[id]
	s.unlock(s.lock() &^ soakOutMask)
}

// stopped records that Timer.Stop returned ok for the timer of slot id; the
// caller calls it after Stop returned, so a clock read here is later than
// the call.
func (c *soakChecker) stopped(id uint32, ok bool) {
	s := &c.slots[id]
	for {
		v := s.state.Load() // never locked: only the caller, the owner, locks
		if !ok {
			// The callback was handed to the executor, or the timer
			// was stopped before. Either is possible only once a
			// deadline has passed, or with no run outstanding.
			if soakOut(v) > 0 {
				if r1, dmin := c.now(), s.dmin.Load(); r1 < dmin {
					c.violate(vStopFalseEarly, id, "Stop returned false at %s, before the deadline %s, with %d run(s) outstanding", soakAt(r1), soakAt(dmin), soakOut(v))
				}
			}
			return
		}
		if soakOut(v) == 0 {
			c.violate(vStopTrue, id, "Stop returned true at %s, but the callback had already run", soakAt(c.now()))
			return
		}
		if s.state.CompareAndSwap(v, v-1) {
			return
		}
	}
}

// A soakReset is what beginReset saw, for endReset.
type soakReset struct {
	old    int   // runs outstanding before the Reset
	oldMin int64 // their earliest deadline
	dl     int64 // the new deadline
}

// beginReset records that the timer of slot id is about to be reset to run
// d after r0: one more run outstanding, until Reset says the old one was
// pending.
func (c *soakChecker) beginReset(id uint32, r0 int64, d time.Duration) soakReset {
	s := &c.slots[id]
	dl := r0 + int64(d)
	v := s.lock()
	r := soakReset{old: soakOut(v), oldMin: s.dmin.Load(), dl: dl}
	if r.old > 0 {
		s.dmin.Store(min(r.oldMin, dl))
		s.dmax.Store(max(s.dmax.Load(), dl))
	} else {
		s.dmin.Store(dl)
		s.dmax.Store(dl)
		v &^= soakOverdue // that flag was for an arming that is gone
	}
	s.armed.Store(r0)
	if r.old == soakOutMask {
		panic("wheelbench: soak: too many runs outstanding in one slot")
	}
	s.unlock(v + 1)
	return r
}

// endReset records that Timer.Reset returned was; the caller calls it after
// Reset returned.
func (c *soakChecker) endReset(id uint32, r soakReset, was bool) {
	s := &c.slots[id]
	if !was {
		if r.old > 0 {
			if r1 := c.now(); r1 < r.oldMin {
				c.violate(vResetFalseEarly, id, "Reset returned false at %s, before the deadline %s, with %d run(s) outstanding", soakAt(r1), soakAt(r.oldMin), r.old)
			}
		}
		return
	}
	if r.old == 0 {
		c.violate(vResetTrue, id, "Reset returned true at %s, but the timer had run or been stopped", soakAt(c.now()))
		return
	}
	// The old run was pending and is canceled.
	v := s.lock()
	if soakOut(v) == 0 {
		c.violate(vExtraRun, id, "Reset returned true at %s, but both the old and the new run have run", soakAt(c.now()))
		s.unlock(v)
		return
	}
	if r.old == 1 && soakOut(v) == 2 {
		// Only the new run is left.
		s.dmin.Store(r.dl)
		s.dmax.Store(r.dl)
	}
	s.unlock(v - 1)
}

// sweep walks every slot: it counts the pending timers (runs outstanding),
// and counts as overdue, once, each that has not run more than lateLimit
// after the latest of its deadlines.
func (c *soakChecker) sweep(now int64) (pending int) {
	for i := range c.slots {
		s := &c.slots[i]
		v := s.state.Load()
		if soakOut(v) == 0 {
			continue
		}
		pending++
		if v&(soakLock|soakOverdue) != 0 {
			continue
		}
		if dmax := s.dmax.Load(); now-dmax > c.lateLimit && s.state.CompareAndSwap(v, v|soakOverdue) {
			c.violate(vOverdue, uint32(i), "%d run(s) outstanding at %s, %s after the deadline %s", soakOut(v), soakAt(now), formatNanos(float64(now-dmax)), soakAt(dmax))
		}
	}
	return pending
}

// reconcile compares the timers SystemTimer.Stop returned, left, with the
// slots that have runs outstanding: they must be the same timers, each
// once. stopAt is the clock read before the Stop call. It returns how many
// slots had runs outstanding, and how many of those Stop returned.
//
// Timers are matched by address, in two sorted lists: the heap does not
// move objects, and sorting ten million addresses takes a second where a
// map of them takes several and much more memory.
func (c *soakChecker) reconcile(left []*timingwheel.Timer, stopAt int64) (believed, matched int) {
	type ref struct {
		addr uintptr
		id   uint32
	}
	var want []ref // the timers of the slots with runs outstanding
	for i := range c.slots {
		if c.slots[i].out() > 0 {
			want = append(want, ref{uintptr(unsafe.Pointer(c.handles[i])), uint32(i)})
		}
	}
	believed = len(want)
	got := make([]uintptr, len(left))
	for i, t := range left {
		got[i] = uintptr(unsafe.Pointer(t))
	}
	slices.SortFunc(want, func(a, b ref) int { return cmp.Compare(a.addr, b.addr) })
	slices.Sort(got)
	var unexpected []uintptr
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || i < len(want) && want[i].addr < got[j]:
			id := want[i].id
			c.violate(vLost, id, "%d run(s) outstanding (deadline %s), but SystemTimer.Stop did not return the timer", c.slots[id].out(), soakAt(c.slots[id].dmax.Load()))
			i++
		case i == len(want) || got[j] < want[i].addr:
			if len(unexpected) == 0 || unexpected[len(unexpected)-1] != got[j] {
				unexpected = append(unexpected, got[j])
			} else {
				c.note(vAPI, "SystemTimer.Stop returned a timer more than once")
			}
			j++
		default:
			id := want[i].id
			s := &c.slots[id]
			if v, dmax := s.state.Load(), s.dmax.Load(); v&soakOverdue == 0 && stopAt-dmax > c.lateLimit {
				c.violate(vOverdue, id, "still pending at SystemTimer.Stop (%s), %s after its deadline %s", soakAt(stopAt), formatNanos(float64(stopAt-dmax)), soakAt(dmax))
			}
			matched++
			i++
			for j++; j < len(got) && got[j] == want[i-1].addr; j++ {
				c.note(vAPI, "slot %d: SystemTimer.Stop returned the timer more than once", id)
			}
		}
	}
	if len(unexpected) == 0 {
		return believed, matched
	}
	// Timers returned that no slot holds as pending: name their slots.
	found := 0
	for i, t := range c.handles {
		if t == nil {
			continue
		}
		if _, ok := slices.BinarySearch(unexpected, uintptr(unsafe.Pointer(t))); ok {
			found++
			c.violate(vUnexpected, uint32(i), "SystemTimer.Stop returned the timer, but it had run or been stopped")
		}
	}
	if n := len(unexpected) - found; n > 0 {
		c.note(vUnexpected, "SystemTimer.Stop returned %d timers that no slot holds any more: replaced after they ran or were stopped", n)
	}
	return believed, matched
}

// lateBucket maps a lateness in ns to a histogram bucket: 0 for none, then
// four buckets per power of two.
func lateBucket(ns int64) int {
	if ns <= 0 {
		return 0
	}
	u := uint64(ns)
	l := bits.Len64(u)
	if l <= 2 {
		return int(u)
	}
	return 4*(l-2) + int(u>>(l-3)&3)
}

// lateBucketTop returns the least lateness above every value of bucket b.
func lateBucketTop(b int) int64 {
	if b < 4 {
		return int64(b) + 1
	}
	l := b/4 + 2
	if l-3 >= 59 {
		return math.MaxInt64
	}
	return int64(4+b%4+1) << (l - 3)
}

// latePercentile returns an upper bound of the p-th percentile of the
// lateness histogram h (nearest rank, within a quarter of a power of two).
func latePercentile(h []int64, p float64) int64 {
	var n int64
	for _, x := range h {
		n += x
	}
	if n == 0 {
		return 0
	}
	rank := max(int64(float64(n)*p/100+0.999999), 1)
	for b, x := range h {
		if rank -= x; rank <= 0 {
			if b == 0 {
				return 0
			}
			return lateBucketTop(b)
		}
	}
	return lateBucketTop(len(h) - 1)
}

// lateHistogram sums the shards' histograms.
func (c *soakChecker) lateHistogram() []int64 {
	h := make([]int64, soakLateBuckets)
	for i := range c.shards {
		for b := range h {
			h[b] += c.shards[i].late[b].Load()
		}
	}
	return h
}

// A soakProbe measures the lateness of the runtime's own timers under the
// same load: a goroutine that sleeps a millisecond at a time and records by
// how much each sleep overran. Lateness of the wheel's callbacks that the
// probe sees too at the same time is the machine's or the runtime's (CPU
// taken by other processes, a GC cycle), not the wheel's.
type soakProbe struct {
	late     [soakLateBuckets]atomic.Int64
	max      atomic.Int64
	interval atomic.Int64 // the max since the sampler last took it
}

// run probes until stop is set.
func (p *soakProbe) run(stop *atomic.Bool) {
	for !stop.Load() {
		want := time.Now().Add(time.Millisecond)
		time.Sleep(time.Millisecond)
		late := int64(time.Since(want))
		p.late[lateBucket(late)].Add(1)
		soakMax(&p.max, late)
		soakMax(&p.interval, late)
	}
}

func (p *soakProbe) histogram() []int64 {
	h := make([]int64, soakLateBuckets)
	for b := range h {
		h[b] = p.late[b].Load()
	}
	return h
}
