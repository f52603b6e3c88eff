package timingwheel_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/internal/isolate"
)

// The concurrency suite for periodic timers (ScheduleFunc), through the
// exported API: Reset and Stop from several goroutines, from inside runs and
// outside them, racing the runs and SystemTimer.Stop. Helpers shared with
// context_concurrent_test.go: concTimeout, stressFor, withPreemption,
// spinFor.

// panickyScheduler gives runs a second apart, and panics on its call number
// panicAt (ScheduleFunc makes the first call).
type panickyScheduler struct {
	calls   atomic.Int32
	panicAt int32
}

func (s *panickyScheduler) Next(prev time.Time) time.Time {
	if s.calls.Add(1) == s.panicAt {
		panic("boom")
	}
	return prev.Add(time.Second)
}

// stallingScheduler gives runs a second apart, then, on its second call, the
// time it is given plus back (zero or negative: not after it).
type stallingScheduler struct {
	calls atomic.Int32
	back  time.Duration
}

func (s *stallingScheduler) Next(prev time.Time) time.Time {
	if s.calls.Add(1) == 2 {
		return prev.Add(s.back)
	}
	return prev.Add(time.Second)
}

// TestConcurrentScheduleNextPanics: a Scheduler whose Next panics, called
// after a run, hands the panic to the panic handler and ends the series:
// no more runs, Stop returns false, and the process lives on. rearm calls
// Next with the shard's lock released; a deferred unlock kept across that
// call would run on an unlocked mutex when Next panics: "fatal error: sync:
// unlock of unlocked mutex", the whole process gone (hence the child
// process).
func TestConcurrentScheduleNextPanics(t *testing.T) {
	seriesEndsAtNext(t, &panickyScheduler{panicAt: 2}, "when Next panics", func(v any) bool { return v == "boom" }, "Next's panic value, boom")
}

// TestConcurrentScheduleNextNotAfterPrev: a Next that returns a time not
// after the one it was given ends the series, and the panic handler gets
// an error that says so: the series does not end silently.
func TestConcurrentScheduleNextNotAfterPrev(t *testing.T) {
	for _, back := range []time.Duration{0, -time.Second} {
		t.Run("back="+back.String(), func(t *testing.T) {
			seriesEndsAtNext(t, &stallingScheduler{back: back}, "at a Next not after prev", func(v any) bool {
				err, ok := v.(error)
				return ok && strings.Contains(err.Error(), "not after")
			}, "an error saying Next's time is not after prev")
		})
	}
}

// seriesEndsAtNext runs, in a child process and a synctest bubble, a
// series of s, whose Next gives runs a second apart and fails at its
// second call, and checks that the series ends after its first run (why
// says at what): the panic handler gets one value, which isWanted accepts
// (want describes it), and the series is gone from Stop, Len and
// SystemTimer.Stop.
func seriesEndsAtNext(t *testing.T, s timingwheel.Scheduler, why string, isWanted func(v any) bool, want string) {
	isolate.Run(t, concTimeout, func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			panics := make(chan any, 4)
			st, err := timingwheel.New(timingwheel.WithPanicHandler(func(v any) { panics <- v }))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Stop()
			var runs atomic.Int32
			tm, err := st.ScheduleFunc(s, func() { runs.Add(1) })
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Second) // the first run at 1s, then Next fails
			synctest.Wait()
			if n := runs.Load(); n != 1 {
				t.Errorf("%d runs; want 1: the series ends %s", n, why)
			}
			select {
			case v := <-panics:
				if !isWanted(v) {
					t.Errorf("the panic handler got %v; want %s", v, want)
				}
			default:
				t.Error("the panic handler got nothing: the series ended silently")
			}
			if len(panics) != 0 {
				t.Errorf("the panic handler got %d more values", len(panics))
			}
			if tm.Stop() {
				t.Error("Stop returned true after the series ended")
			}
			if n := st.Len(); n != 0 {
				t.Errorf("Len is %d after the series ended", n)
			}
			if left := st.Stop(); len(left) != 0 {
				t.Errorf("Stop returned %d timers after the series ended", len(left))
			}
		})
	})
}

// stepScheduler gives runs step apart and up to 400µs more, a function of
// prev alone (Next may be called on any goroutine).
type stepScheduler time.Duration

func (s stepScheduler) Next(prev time.Time) time.Time {
	return prev.Add(time.Duration(s) + time.Duration(prev.Nanosecond()%5)*100*time.Microsecond)
}

// A stopRecord is a Stop call made while no Reset of its series was in
// flight, with what it returned: runs that start after it, while no Reset
// has started since, are bounded (none after true, one after false: the
// run already handed over).
type stopRecord struct {
	resets int64 // the series' Reset count when Stop was called
	ok     bool
	after  atomic.Int32
}

// A series is one periodic timer of the stress, with what its runs check.
type series struct {
	name string
	// tm is the series' timer, written once ScheduleFunc returns it; the
	// first run may start before that, so runs wait for ready, closed
	// after the write, before they read it.
	tm    *timingwheel.Timer
	ready chan struct{}
	step  time.Duration // the least time between two scheduled runs
	owned bool          // only its own runs Reset or Stop it

	inRun    atomic.Int32
	runs     atomic.Int64
	started  atomic.Int64 // Reset calls begun
	finished atomic.Int64 // Reset calls returned
	lastStop atomic.Pointer[stopRecord]
	// notBefore is, for an owned series, the earliest its next run may
	// start, in ns since the round's base: each run advances it by step, or
	// sets it to the time a Reset in the run set.
	notBefore atomic.Int64
}

// reset is Reset, counted.
func (s *series) reset(d time.Duration) {
	s.started.Add(1)
	s.tm.Reset(d)
	s.finished.Add(1)
}

// stop is Stop, recorded if no Reset was in flight: finished is read
// before started, so equal counts mean none was in flight from the first
// read on and none began until the second.
func (s *series) stop() bool {
	f := s.finished.Load()
	r := s.started.Load()
	ok := s.tm.Stop()
	if f == r {
		s.lastStop.Store(&stopRecord{resets: r, ok: ok})
	}
	return ok
}

// scheduleRound is the shared state of one round of the stress.
type scheduleRound struct {
	t          *testing.T
	st         *timingwheel.SystemTimer
	base       time.Time
	quiet      atomic.Bool // set at the end: runs stop resetting and stopping
	sysStopped atomic.Bool // set once SystemTimer.Stop has returned
}

// run is a series' function: it checks the run, then, now and then, resets
// or stops its own series.
func (r *scheduleRound) run(s *series) {
	t := r.t
	<-s.ready
	if s.inRun.Add(1) != 1 {
		t.Errorf("%s: two runs at once", s.name)
	}
	defer s.inRun.Add(-1)
	start := time.Since(r.base)
	s.runs.Add(1)
	if r.sysStopped.Load() {
		t.Errorf("%s: a run started after SystemTimer.Stop returned", s.name)
	}
	if rec := s.lastStop.Load(); rec != nil && s.started.Load() == rec.resets {
		if rec.ok {
			t.Errorf("%s: a run started after Stop returned true, with no Reset since", s.name)
		} else if rec.after.Add(1) > 1 {
			t.Errorf("%s: two runs started after Stop returned false, with no Reset since", s.name)
		}
	}
	if s.owned {
		if nb := time.Duration(s.notBefore.Load()); start < nb {
			t.Errorf("%s: a run %v early", s.name, nb-start)
		}
	}
	if r.quiet.Load() {
		return
	}
	switch n := rand.IntN(8); {
	case n < 3:
		d := time.Duration(rand.IntN(2500)) * time.Microsecond
		at := time.Since(r.base) + d // read before the Reset: a bound on its time
		s.reset(d)
		if s.owned {
			s.notBefore.Store(int64(at))
		}
		return
	case n == 3 && !s.owned:
		s.stop()
	case n == 4 && !s.owned:
		s.stop()
		s.reset(time.Duration(rand.IntN(2500)) * time.Microsecond)
	}
	if s.owned {
		// The next scheduled time is at least step after this one,
		// which is at least notBefore.
		s.notBefore.Add(int64(s.step))
	}
}

// TestConcurrentScheduleStress races, on 12 shared periodic timers (Every
// and a custom Scheduler, 1 to 3ms apart), Reset and Stop from six outside
// goroutines and from the runs themselves; 6 owned timers are reset only
// by their own runs, so that when each run may start is known. Optionally
// SystemTimer.Stop races all of it. Checks: runs of a series never overlap;
// no run starts after a Stop that returned true, nor more than one (the
// one handed over) after a Stop that returned false, unless a Reset came
// since; an owned series' runs are never early; no run starts after
// SystemTimer.Stop returned, which returns each timer at most once, after
// which Stop returns false and TryReset ErrStopped; Len never exceeds the
// number of series, and is 0 once all are stopped.
func TestConcurrentScheduleStress(t *testing.T) {
	for _, stop := range []bool{false, true} {
		name := "ResetStop"
		if stop {
			name = "ResetStopVsSystemTimerStop"
		}
		t.Run(name, func(t *testing.T) {
			stressRounds(t, func(t *testing.T, seed uint64) { scheduleStressRound(t, stop, seed) })
		})
	}
}

func scheduleStressRound(t *testing.T, sysStop bool, seed uint64) {
	r := &scheduleRound{t: t, base: time.Now()}
	st, err := timingwheel.New(timingwheel.WithPanicHandler(func(v any) { t.Errorf("panic in a run: %v", v) }))
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
	const nShared, nOwned = 12, 6
	var all []*series
	byTimer := make(map[*timingwheel.Timer]*series)
	for i := range nShared + nOwned {
		s := &series{owned: i >= nShared, step: time.Duration(1+i%3) * time.Millisecond, ready: make(chan struct{})}
		var sched timingwheel.Scheduler = timingwheel.Every(s.step)
		s.name = "Every"
		if i%2 == 1 {
			sched = stepScheduler(s.step)
			s.name = "custom"
		}
		if s.owned {
			s.name = "owned " + s.name
		}
		s.notBefore.Store(int64(time.Since(r.base) + s.step))
		s.tm, err = st.ScheduleFunc(sched, func() { r.run(s) })
		if err != nil {
			t.Fatal(err)
		}
		close(s.ready)
		all = append(all, s)
		byTimer[s.tm] = s
	}
	shared := all[:nShared]

	stopRace := make(chan struct{})
	var wg sync.WaitGroup
	timingwheel.Hammer(&wg, 6, seed, stopRace, func(_ int, rng *rand.Rand) {
		s := shared[rng.IntN(len(shared))]
		stopped := r.sysStopped.Load() // before the call: it holds during it
		switch rng.IntN(4) {
		case 0:
			s.reset(time.Duration(rng.IntN(3000)) * time.Microsecond)
		case 1:
			if s.stop() && stopped {
				t.Errorf("%s: Stop returned true after SystemTimer.Stop", s.name)
			}
		case 2:
			s.started.Add(1)
			_, err := s.tm.TryReset(time.Duration(rng.IntN(3000)) * time.Microsecond)
			s.finished.Add(1)
			if stopped && !errors.Is(err, timingwheel.ErrStopped) {
				t.Errorf("%s: TryReset after SystemTimer.Stop = %v; want ErrStopped", s.name, err)
			} else if !stopped && err != nil && !errors.Is(err, timingwheel.ErrStopped) {
				t.Errorf("%s: TryReset: %v", s.name, err)
			}
		case 3:
			s.stop()
			s.reset(time.Duration(rng.IntN(3000)) * time.Microsecond)
		}
		if n := st.Len(); n > len(all) {
			t.Errorf("Len is %d with %d series", n, len(all))
		}
		spinFor(time.Duration(rng.IntN(1000)) * time.Microsecond) // leave the series time to run
	})
	var left []*timingwheel.Timer
	racer := make(chan struct{})
	go func() {
		defer close(racer)
		if sysStop {
			spinFor(time.Duration(rand.New(rand.NewPCG(seed, 99)).IntN(150_000)) * time.Microsecond)
			left = st.Stop()
			r.sysStopped.Store(true)
		}
	}()
	spinFor(200 * time.Millisecond)
	close(stopRace)
	wg.Wait()
	<-racer

	// The end: runs stop resetting; then every series is stopped until a
	// pass finds none running or being reset, each Stop false (none
	// pending). A run that starts after that pass sees quiet and resets
	// nothing: no series is pending, and none becomes so.
	r.quiet.Store(true)
	for settled := false; !settled; {
		settled = true
		for _, s := range all {
			busy := s.inRun.Load() != 0
			if s.stop() || busy || s.started.Load() != s.finished.Load() {
				settled = false
			}
		}
		if !settled {
			spinFor(100 * time.Microsecond) // a running callback finishes
		}
	}
	if n := st.Len(); n != 0 {
		t.Errorf("Len is %d after every series was stopped", n)
	}
	if !sysStop {
		left = st.Stop()
	}
	seen := make(map[*timingwheel.Timer]bool)
	for _, tm := range left {
		if byTimer[tm] == nil {
			t.Errorf("SystemTimer.Stop returned a timer of no series")
		}
		if seen[tm] {
			t.Errorf("SystemTimer.Stop returned %s twice", byTimer[tm].name)
		}
		seen[tm] = true
	}
	r.sysStopped.Store(true)
	for _, s := range all {
		if s.tm.Stop() {
			t.Errorf("%s: Stop returned true after SystemTimer.Stop", s.name)
		}
	}
}
