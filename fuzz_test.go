package timingwheel

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/go-timingwheel/timingwheel/internal/testwait"
)

// FuzzWheelAgainstModel runs random sequences of AfterFunc, Stop, Reset and
// clock advances through a SystemTimer with no goroutines (the manual
// harness: the driver and workers run inside step) under a fake clock, and
// through a trivial model: a slice of deadlines. After every operation the
// same callbacks must have run, each as often as the model says, in deadline
// order within a tick, none before its deadline and none left waiting once
// the clock has passed its deadline rounded up to the tick; and Len, Stop and
// Reset must report what the model says.
func FuzzWheelAgainstModel(f *testing.F) {
	for cfg := range byte(len(fuzzConfigs)) {
		tick, n := fuzzConfigs[cfg].tick, fuzzConfigs[cfg].size
		// One add and one advance per boundary: 0, tick-1, tick, each
		// level's reach, the largest duration.
		for i := range byte(len(fuzzBoundaries(tick, n))) {
			f.Add([]byte{cfg, opAdd, 0, i, opAdd, 0, i + 1, opAdvance, 1, i, opStop, 0, opAdvance, 1, i + 1})
		}
	}
	f.Add([]byte{2, opAdd, 1, 0, 10, opReset, 0, 1, 0, 3, opAdvance, 2, 0, 5, opAdd, 3, 0, opAdvance, 0, 1})
	f.Add([]byte{4, opAdd, 2, 0, 0, 1, 0, opAdd, 2, 0, 0, 2, 0, opAdvance, 2, 255, 255, opAdvance, 1, 12, opReset, 1, 0, 7})

	fuzzModel(f, fuzzConfigs, false)
}

// FuzzWheelInterleaved is FuzzWheelAgainstModel with more to it: 1ns ticks,
// whose reach saturates the int64 range; timers bound with Bind and armed
// by Reset; and turns of the driver, one due bucket or one cascade chunk at
// a time, between the operations, so that Reset (to a later deadline
// without the lock, to an earlier one, of a stopped or fired timer) and
// Stop meet a driver in the middle of its work. After a turn the model
// checks that nothing ran early or twice; after any other operation it
// settles the wheel and checks everything. (A target of its own, so that
// the corpus of FuzzWheelAgainstModel keeps testing what it tested.)
func FuzzWheelInterleaved(f *testing.F) {
	for cfg := range byte(len(interleavedConfigs)) {
		tick, n := interleavedConfigs[cfg].tick, interleavedConfigs[cfg].size
		for i := range byte(len(fuzzBoundaries(tick, n))) {
			f.Add([]byte{cfg, opBind, opReset, 0, 0, i, opAdd, 0, i + 1, opTurn, opReset, 1, 0, i + 2, opTurn, opAdvance, 1, i, opReset, 0, 1, 0, 40, opTurn, opTurn, opStop, 1, opAdvance, 1, i + 1})
		}
	}
	// Push back, again and again, a timer whose bucket is being expired.
	f.Add([]byte{1, opAdd, 1, 0, 10, opAdd, 1, 0, 20, opAdvance, 2, 8, 0, opTurn, opReset, 0, 1, 0, 80, opTurn, opReset, 1, 1, 0, 90, opAdvance, 2, 200, 0, opTurn, opTurn, opTurn})
	fuzzModel(f, interleavedConfigs, true)
}

// fuzzModel fuzzes runModel: an input's first byte picks one of configs,
// the rest are the operations.
func fuzzModel(f *testing.F, configs []fuzzConfig, interleaved bool) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		cfg := configs[int(data[0])%len(configs)]
		r := &byteReader{b: data[1:]}
		runModel(t, cfg.tick, cfg.size, r, interleaved)
	})
}

// A fuzzConfig is a wheel's tick and size.
type fuzzConfig struct {
	tick time.Duration
	size int
}

var interleavedConfigs = append([]fuzzConfig{
	{time.Nanosecond, 2},
	{time.Nanosecond, defaultWheelSize},
	{7 * time.Nanosecond, 3}, // under 8ns: the horizon is 2^60 ticks
}, fuzzConfigs...)

var fuzzConfigs = []fuzzConfig{
	{time.Millisecond, 2},
	{time.Millisecond, 3},
	{time.Millisecond, 4},
	{3 * time.Millisecond, 8},
	{time.Millisecond, defaultWheelSize},
}

const (
	opAdd byte = iota
	opStop
	opReset
	opAdvance
	opBind // from here on, FuzzWheelInterleaved only
	opTurn
	numInterleavedOps
)

const numOps = opBind

// fuzzBoundaries are the delays and advances worth hitting exactly.
func fuzzBoundaries(tick time.Duration, size int) []time.Duration {
	ds := []time.Duration{0, 1, tick - 1, tick, tick + 1}
	for span := tick * time.Duration(size); span > 0 && span < 50*365*24*time.Hour; span *= time.Duration(size) {
		ds = append(ds, span-1, span, span+1)
	}
	return append(ds, math.MaxInt64)
}

type byteReader struct{ b []byte }

func (r *byteReader) next() (byte, bool) {
	if len(r.b) == 0 {
		return 0, false
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, true
}

func (r *byteReader) u16() int64 {
	var buf [2]byte
	n := copy(buf[:], r.b)
	r.b = r.b[n:]
	return int64(binary.LittleEndian.Uint16(buf[:]))
}

func (r *byteReader) u32() int64 {
	var buf [4]byte
	n := copy(buf[:], r.b)
	r.b = r.b[n:]
	return int64(binary.LittleEndian.Uint32(buf[:]))
}

// delay decodes a delay: a boundary, a few ticks, up to weeks, or <= 0.
func (r *byteReader) delay(bounds []time.Duration, tick time.Duration) time.Duration {
	kind, _ := r.next()
	switch kind % 4 {
	case 0:
		i, _ := r.next()
		return bounds[int(i)%len(bounds)]
	case 1:
		return time.Duration(r.u16()) * tick / 16
	case 2:
		return time.Duration(r.u32()) * time.Millisecond / 4
	default:
		i, _ := r.next()
		return -time.Duration(i)
	}
}

// advance decodes a clock advance: a fraction of a tick, a boundary, or up
// to a few thousand ticks.
func (r *byteReader) advance(bounds []time.Duration, tick time.Duration) time.Duration {
	kind, _ := r.next()
	switch kind % 3 {
	case 0:
		i, _ := r.next()
		return time.Duration(i) * tick / 16
	case 1:
		i, _ := r.next()
		d := bounds[int(i)%len(bounds)]
		if d > 100*365*24*time.Hour {
			d = 0 // keep the clock within a century of the epoch
		}
		return d
	default:
		return time.Duration(r.u16()) * tick / 8
	}
}

type modelTimer struct {
	tm      *Timer
	pending bool
	due     int64 // tick at or after which it must have run, while pending
	when    int64 // its deadline, ns since the epoch: it must not run before
	want    int   // runs the model expects
	got     int   // runs seen
}

func runModel(t *testing.T, tick time.Duration, size int, r *byteReader, interleaved bool) {
	fc := newFakeClock()
	st := newManual(t, fc, WithTick(tick), WithWheelSize(size))
	bounds := fuzzBoundaries(tick, size)
	var timers []*modelTimer
	var ran []*modelTimer // order of runs within a step
	nowNs := func() int64 { return int64(fc.Now().Sub(st.epoch)) }
	// A deadline in the tick that reaches the largest Duration after New,
	// or past it, or past 2^60 ticks, never comes. A deadline is kept
	// rounded up to 16ns, and is due in the tick of the rounded deadline.
	horizon := min(ceilDiv(math.MaxInt64, int64(tick)), 1<<60-1)
	dueTick := func(d time.Duration) int64 {
		when := satAdd(nowNs(), int64(d))
		if when > math.MaxInt64-15 {
			return horizon
		}
		return min(ceilDiv((when+15)&^15, int64(tick)), horizon)
	}
	ops := numOps
	if interleaved {
		ops = numInterleavedOps
	}

	// partial checks what holds in the middle of the driver's work: what
	// ran was due and ran once.
	partial := func(step int) {
		t.Helper()
		nowTick := floorDiv(nowNs(), int64(tick))
		for _, m := range ran {
			if !m.pending || m.when > nowNs() || m.due >= horizon || m.got != m.want+1 {
				t.Fatalf("op %d: timer due at %d (tick %d, pending=%v) ran at %d (tick %d), run %d of %d", step, m.when, m.due, m.pending, nowNs(), nowTick, m.got, m.want)
			}
			m.pending = false
			m.want++
		}
		ran = ran[:0]
	}
	check := func(step int) {
		t.Helper()
		partial(step)
		st.step()
		nowTick := floorDiv(nowNs(), int64(tick))
		// In deadline order within a tick; none early.
		for i, m := range ran {
			if i > 0 && m.due < ran[i-1].due {
				t.Fatalf("op %d: timer due at tick %d ran after one due at %d", step, m.due, ran[i-1].due)
			}
			if m.when > nowNs() {
				t.Fatalf("op %d: timer due at %d (tick %d) ran at %d (tick %d)", step, m.when, m.due, nowNs(), nowTick)
			}
		}
		ran = ran[:0]
		pending := 0
		for i, m := range timers {
			// A timer may run once its deadline has passed (alone in its
			// bucket, it runs at its deadline), and must once its tick
			// has.
			if m.pending && (m.due <= nowTick && m.due < horizon || m.when <= nowNs() && m.got == m.want+1) {
				m.pending = false
				m.want++
			}
			if m.got != m.want {
				t.Fatalf("op %d: timer %d (due tick %d, now %d) ran %d times, want %d", step, i, m.due, nowTick, m.got, m.want)
			}
			if m.pending {
				pending++
			}
		}
		if got := st.Len(); got != pending {
			t.Fatalf("op %d: Len() = %d, want %d", step, got, pending)
		}
	}

	for step := 0; len(r.b) > 0 && step < 400; step++ {
		op, _ := r.next()
		switch op % ops {
		case opAdd:
			d := r.delay(bounds, tick)
			m := &modelTimer{due: dueTick(d), when: satAdd(nowNs(), int64(d))}
			if d <= 0 {
				m.due = floorDiv(nowNs(), int64(tick))
				m.want = 1 // runs at the next step, without a tick
			} else {
				m.pending = true
			}
			tm, err := st.AfterFunc(d, func() { m.got++; ran = append(ran, m) })
			if err != nil {
				t.Fatalf("op %d: AfterFunc(%v): %v", step, d, err)
			}
			m.tm = tm
			timers = append(timers, m)
		case opStop:
			if len(timers) == 0 {
				continue
			}
			i, _ := r.next()
			m := timers[int(i)%len(timers)]
			if got := m.tm.Stop(); got != m.pending {
				t.Fatalf("op %d: Stop() = %v, model says pending=%v", step, got, m.pending)
			}
			m.pending = false
		case opReset:
			if len(timers) == 0 {
				continue
			}
			i, _ := r.next()
			m := timers[int(i)%len(timers)]
			d := r.delay(bounds, tick)
			if got := m.tm.Reset(d); got != m.pending {
				t.Fatalf("op %d: Reset(%v) = %v, model says pending=%v", step, d, got, m.pending)
			}
			if d <= 0 {
				m.pending, m.due, m.when = false, floorDiv(nowNs(), int64(tick)), nowNs()
				m.want++
			} else {
				m.pending, m.due, m.when = true, dueTick(d), satAdd(nowNs(), int64(d))
			}
		case opAdvance:
			fc.Add(r.advance(bounds, tick))
		case opBind:
			m := &modelTimer{tm: &Timer{}}
			st.Bind(m.tm, func() { m.got++; ran = append(ran, m) })
			timers = append(timers, m)
		case opTurn:
			st.turnFirst()
			st.pool.RunQueued()
			partial(step)
			continue
		}
		check(step)
	}

	var want []*Timer
	for _, m := range timers {
		if m.pending {
			want = append(want, m.tm)
		}
	}
	left := st.Stop()
	slices.SortFunc(left, cmpTimer)
	slices.SortFunc(want, cmpTimer)
	if !slices.Equal(left, want) {
		t.Fatalf("Stop returned %d timers, the model has %d pending", len(left), len(want))
	}
}

func cmpTimer(a, b *Timer) int {
	pa, pb := uintptr(unsafe.Pointer(a)), uintptr(unsafe.Pointer(b))
	switch {
	case pa < pb:
		return -1
	case pa > pb:
		return 1
	}
	return 0
}

// FuzzOptions feeds arbitrary option values to New: it returns a working
// SystemTimer or an error naming the option, and never panics or hangs.
func FuzzOptions(f *testing.F) {
	f.Add(int64(time.Millisecond), 512, 2, 0)
	f.Add(int64(0), 1, 0, -1)
	f.Add(int64(-1), 0, -5, 10)
	f.Add(int64(1), 2, 1, 1)
	f.Add(int64(1<<62), 1<<16, 1<<16, 1<<40)
	f.Add(int64(1<<62), 1<<16+1, 1<<16+1, 0)
	f.Add(int64(1), 2, 2, 0)             // 1ns ticks with the largest delays
	f.Add(int64(1), 512, 2, 0)           // ... and the default wheel size
	f.Add(int64(7), 3, 1, 1)             // under 8ns: the horizon is 2^60 ticks
	f.Add(int64(time.Minute), 2, 1, 3)   // the largest tick
	f.Add(int64(time.Minute+1), 2, 1, 3) // and one past it
	f.Fuzz(func(t *testing.T, tick int64, size, workers, maxPending int) {
		st, err := New(WithTick(time.Duration(tick)), WithWheelSize(size), WithWorkers(workers), WithMaxPending(maxPending))
		valid := tick > 0 && tick <= int64(maxTick) && size >= 2 && size <= maxWheelSize && workers >= 1 && workers <= maxWorkers && maxPending >= 0
		if !valid {
			if err == nil {
				st.Stop()
				t.Fatalf("New accepted tick=%d size=%d workers=%d maxPending=%d", tick, size, workers, maxPending)
			}
			return
		}
		if err != nil {
			t.Fatalf("New rejected valid options: %v", err)
		}
		defer st.Stop()
		// It works: d <= 0 runs at once; a far timer is pending and stops.
		ran := make(chan struct{})
		if _, err := st.AfterFunc(0, func() { close(ran) }); err != nil {
			t.Fatal(err)
		}
		testwait.Recv(t, ran, "an immediate callback")
		tm, err := st.AfterFunc(time.Hour, func() {})
		if err != nil {
			t.Fatal(err)
		}
		if !tm.Stop() {
			t.Fatal("Stop of a pending timer returned false")
		}
		// The largest delays, whatever the tick: AfterFunc, Reset of a
		// stopped and of a pending timer, a deadline past 2262. None may
		// fire, and the driver must survive them (with a 1ns tick it
		// panicked: "no level above the top one").
		far, err := st.AfterFunc(math.MaxInt64, func() { t.Error("the largest delay fired") })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tm.TryReset(math.MaxInt64); err != nil && (maxPending != 1 || !errors.Is(err, ErrTooManyPending)) {
			t.Fatal(err)
		}
		if !far.Reset(math.MaxInt64 - 1) {
			t.Fatal("Reset of a pending timer returned false")
		}
		ctx, cancel := st.WithDeadline(context.Background(), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC))
		defer cancel()
		st.Len() // drains the incoming stacks
		// Up to two timers are pending here: with a bound of 1 or 2 the
		// context is refused, and says so.
		if err := ctx.Err(); err != nil && !(maxPending >= 1 && maxPending <= 2 && errors.Is(context.Cause(ctx), ErrTooManyPending)) {
			t.Fatalf("a deadline in 2300 expired: %v", err)
		}
		if !far.Stop() {
			t.Fatal("Stop of the largest delay returned false")
		}
	})
}
