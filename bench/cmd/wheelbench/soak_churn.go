package main

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// The soak's churn. Each churner goroutine owns a share of the pending
// slots and a share of the churn slots, and is the only one to arm, stop or
// reset their timers, so it needs no lock to plan what to do with them.
// Each step is one of the kinds below, chosen at random in these
// proportions (percent); together they take every path of the library: the
// lock-free stack and its CAS, buckets of levels 0 and 1, cascades, firing,
// the executor, Stop racing the firing, Reset of a queued, pending, firing,
// fired or stopped timer.
const (
	// AfterFunc(10ms..60s), then Stop at once: mostly a push on the
	// incoming stack and a CAS off it.
	soakMixQuick = 35
	// AfterFunc(50µs..4s), Stop after 0..1.25× the delay: a timer in a
	// bucket of level 0 or 1, or one that fired first (Stop false).
	soakMixStopLater = 25
	// AfterFunc(0, or 50µs..3s), left to fire: level 0, cascades from
	// level 1, the executor.
	soakMixFire = 20
	// AfterFunc(200ms..4s), Reset(0, or 50µs..3s) at once (10%) or after
	// 0..1.5× the delay; then Stop (40%), Reset again (20%) or fire.
	soakMixReset = 15
	// Replace a random pending timer of the churner's share: Stop and a
	// new AfterFunc, or Reset, minutes to hours out.
	soakMixReplace = 5
)

// soakRefillPerStep is how many pending slots each step looks at, to arm a
// new timer, minutes to hours out, in those whose timer has fired: so the
// pending timers stay about as many as -soak-pending.
const soakRefillPerStep = 4

// soakStepBatch is how many steps a churner takes between looks at the
// clock.
const soakStepBatch = 32

// Plans: what the owner will do with a churn slot when its later action is
// due.
const (
	planNone uint8 = iota
	planStop
	planReset
)

// A soakRange draws durations log-uniformly from [lo, hi]: from a table,
// between whose points it interpolates linearly, as math.Exp per draw
// costs more than the rest of a step's arithmetic.
type soakRange struct {
	pts  [soakRangePoints + 1]float64 // lo × (hi/lo)^(i/soakRangePoints)
	step float64                      // pts[i+1]/pts[i] − 1
}

const soakRangePoints = 256

func newSoakRange(lo, hi time.Duration) *soakRange {
	r := new(soakRange)
	ln := math.Log(float64(hi) / float64(lo))
	for i := range r.pts {
		r.pts[i] = float64(lo) * math.Exp(ln*float64(i)/soakRangePoints)
	}
	r.step = math.Exp(ln/soakRangePoints) - 1
	return r
}

func (r *soakRange) draw(rng *rand.Rand) time.Duration {
	return time.Duration(r.pts[rng.IntN(soakRangePoints)] * (1 + rng.Float64()*r.step))
}

var (
	soakQuickDelays = newSoakRange(10*time.Millisecond, time.Minute)
	soakStopDelays  = newSoakRange(50*time.Microsecond, 4*time.Second)
	soakShortDelays = newSoakRange(50*time.Microsecond, 3*time.Second)
	soakResetDelays = newSoakRange(200*time.Millisecond, 4*time.Second)
)

// soakCounts are a churner's calls, written by it and read by the sampler.
type soakCounts struct {
	afterFuncs, stops, stopsTrue, resets, resetsTrue atomic.Int64
	full                                             atomic.Int64 // steps skipped: no churn slot free
	_                                                [64]byte
}

func (n *soakCounts) calls() int64 {
	return n.afterFuncs.Load() + n.stops.Load() + n.resets.Load()
}

// A soakChurner is one churn goroutine.
type soakChurner struct {
	c   *soakChecker
	st  *timingwheel.SystemTimer
	rng *rand.Rand

	pendLo, pendHi   uint32 // its pending slots
	churnLo, churnHi uint32 // its churn slots
	next             uint32 // the next churn slot to try
	refill           uint32 // the next pending slot to look at
	pending          *soakRange
	later            soakLater

	n soakCounts
}

func newSoakChurner(c *soakChecker, st *timingwheel.SystemTimer, seed uint64, pend, churn [2]uint32, pending *soakRange) *soakChurner {
	return &soakChurner{
		c: c, st: st,
		rng:    rand.New(rand.NewPCG(5, seed)),
		pendLo: pend[0], pendHi: pend[1],
		churnLo: churn[0], churnHi: churn[1],
		next: churn[0], refill: pend[0],
		pending: pending,
		later:   newSoakLater(),
	}
}

// setup arms a timer, minutes to hours out, in each of its pending slots.
func (ch *soakChurner) setup() {
	for id := ch.pendLo; id < ch.pendHi; id++ {
		ch.arm(id, ch.pending.draw(ch.rng))
	}
}

// run churns at perSec calls a second (AfterFunc, Stop, Reset) until stop is
// set: as fast as it can when it falls behind, but it forgives a debt of
// more than 100ms. It parks while pause holds a soakPause.
func (ch *soakChurner) run(stop *atomic.Bool, pause *atomic.Pointer[soakPause], perSec float64) {
	start := time.Now()
	base := ch.n.calls()
	for !stop.Load() {
		if p := pause.Load(); p != nil {
			p.parked.Done()
			<-p.resume
		}
		now := ch.c.now()
		ch.later.due(now, func(id uint32) { ch.act(id, now) })
		for range soakStepBatch {
			ch.step(now)
		}
		elapsed := time.Since(start)
		ahead := float64(ch.n.calls()-base) - perSec*elapsed.Seconds()
		switch {
		case ahead > perSec/1000: // a millisecond's worth
			time.Sleep(time.Duration(ahead / perSec * 1e9))
		case ahead < -perSec/10:
			base -= int64(-ahead - perSec/10)
		}
	}
}

// A soakPause holds the churners still while the sampler collects garbage
// for the heap check: a GC that marks ten million timers takes seconds, and
// what the churn allocates meanwhile counts as live, so a GC measures the
// heap only with the churn paused.
type soakPause struct {
	parked sync.WaitGroup // each churner is Done once parked
	resume chan struct{}  // closed, after the pause is cleared, to resume
}

// step takes one step of the churn.
func (ch *soakChurner) step(now int64) {
	for range soakRefillPerStep {
		id := ch.refill
		if ch.refill++; ch.refill == ch.pendHi {
			ch.refill = ch.pendLo
		}
		if ch.c.slots[id].out() == 0 {
			ch.arm(id, ch.pending.draw(ch.rng))
		}
	}
	r := ch.rng.IntN(100)
	if r >= 100-soakMixReplace {
		ch.replace()
		return
	}
	id, ok := ch.alloc()
	if !ok {
		return
	}
	switch {
	case r < soakMixQuick:
		ch.arm(id, soakQuickDelays.draw(ch.rng))
		ch.stop(id)
	case r < soakMixQuick+soakMixStopLater:
		d := soakStopDelays.draw(ch.rng)
		ch.arm(id, d)
		ch.plan(id, planStop, now+ch.within(d, 1.25))
	case r < soakMixQuick+soakMixStopLater+soakMixFire:
		ch.arm(id, ch.short())
	default:
		d := soakResetDelays.draw(ch.rng)
		ch.arm(id, d)
		if ch.rng.IntN(10) == 0 {
			ch.resetChain(id, now) // still on the incoming stack, most likely
		} else {
			ch.plan(id, planReset, now+ch.within(d, 1.5))
		}
	}
}

// short draws a short delay: 0 (5%), or 50µs..3s.
func (ch *soakChurner) short() time.Duration {
	if ch.rng.IntN(20) == 0 {
		return 0
	}
	return soakShortDelays.draw(ch.rng)
}

// within draws a time in [0, f×d], in ns.
func (ch *soakChurner) within(d time.Duration, f float64) int64 {
	return int64(ch.rng.Float64() * f * float64(d))
}

// alloc finds a churn slot that is free: no run outstanding and no plan.
// Slots are taken round-robin, so a slot is reused seconds after its last
// use; one whose timer is still pending is passed over.
func (ch *soakChurner) alloc() (uint32, bool) {
	for range 64 {
		id := ch.next
		if ch.next++; ch.next == ch.churnHi {
			ch.next = ch.churnLo
		}
		if ch.c.plan[id] == planNone && ch.c.slots[id].out() == 0 {
			return id, true
		}
	}
	ch.n.full.Add(1)
	return 0, false
}

func (ch *soakChurner) plan(id uint32, p uint8, at int64) {
	ch.c.plan[id] = p
	ch.later.add(at, id)
}

// act carries out the plan of slot id, now due.
func (ch *soakChurner) act(id uint32, now int64) {
	p := ch.c.plan[id]
	ch.c.plan[id] = planNone
	switch p {
	case planStop:
		ch.stop(id)
	case planReset:
		ch.resetChain(id, now)
	}
}

// resetChain resets the timer of slot id to a short delay, and plans what
// comes next: a Stop, another Reset, or nothing (it fires).
func (ch *soakChurner) resetChain(id uint32, now int64) {
	d := ch.short()
	ch.reset(id, d)
	switch r := ch.rng.IntN(10); {
	case r < 4:
		ch.plan(id, planStop, now+ch.within(d, 1.25))
	case r < 6:
		ch.plan(id, planReset, now+ch.within(d, 1.5))
	}
}

// replace replaces a random pending timer of the churner's share with one
// minutes to hours out: Stop and AfterFunc, or Reset.
func (ch *soakChurner) replace() {
	id := ch.pendLo + uint32(ch.rng.IntN(int(ch.pendHi-ch.pendLo)))
	if ch.c.slots[id].out() != 1 {
		return // it fired; the refill will arm it again
	}
	d := ch.pending.draw(ch.rng)
	if ch.rng.IntN(2) == 0 {
		ch.reset(id, d)
	} else if ch.stop(id) {
		ch.arm(id, d)
	}
}

// arm arms a new timer in slot id, which has no run outstanding.
func (ch *soakChurner) arm(id uint32, d time.Duration) {
	c := ch.c
	gen := c.beginArm(id, c.now(), d)
	t, err := ch.st.AfterFunc(d, soakCallback(id, gen))
	ch.n.afterFuncs.Add(1)
	if err != nil {
		c.abortArm(id)
		c.violate(vAPI, id, "AfterFunc(%v): %v", d, err)
		return
	}
	c.handles[id] = t
}

// stop stops the timer of slot id and reports what Stop returned.
func (ch *soakChurner) stop(id uint32) bool {
	ok := ch.c.handles[id].Stop()
	ch.c.stopped(id, ok)
	ch.n.stops.Add(1)
	if ok {
		ch.n.stopsTrue.Add(1)
		if ch.c.slots[id].out() == 0 {
			ch.c.handles[id] = nil // garbage now, whatever the slot's reuse
		}
	}
	return ok
}

// reset resets the timer of slot id to run after d.
func (ch *soakChurner) reset(id uint32, d time.Duration) {
	c := ch.c
	r := c.beginReset(id, c.now(), d)
	was := c.handles[id].Reset(d)
	c.endReset(id, r, was)
	ch.n.resets.Add(1)
	if was {
		ch.n.resetsTrue.Add(1)
	}
}

// A soakLater holds the slots whose plan is due at a later time, in buckets
// of soakLaterRes: a timing wheel of one level, owned by one churner.
type soakLater struct {
	buckets [][]uint32
	cur     int64 // the first bucket not handled yet, in soakLaterRes since the checker's time zero
}

const (
	soakLaterRes     = int64(5 * time.Millisecond)
	soakLaterBuckets = 4096 // 20s ahead; the churn plans up to 6s ahead
)

func newSoakLater() soakLater {
	return soakLater{buckets: make([][]uint32, soakLaterBuckets), cur: -1}
}

// add plans slot id for time at (ns), or the nearest bucket that can hold it.
func (l *soakLater) add(at int64, id uint32) {
	b := at / soakLaterRes
	if l.cur < 0 {
		l.cur = b
	}
	// due handles bucket cur-1 while adds go to cur and later: keep
	// clear of it.
	b = min(max(b, l.cur), l.cur+soakLaterBuckets-2)
	i := b % soakLaterBuckets
	l.buckets[i] = append(l.buckets[i], id)
}

// due calls f for every slot planned for now or earlier.
func (l *soakLater) due(now int64, f func(id uint32)) {
	if l.cur < 0 {
		return
	}
	for l.cur*soakLaterRes <= now {
		i := l.cur % soakLaterBuckets
		l.cur++
		ids := l.buckets[i]
		for _, id := range ids {
			f(id)
		}
		l.buckets[i] = ids[:0]
	}
}
