package timingwheel_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/internal/isolate"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
)

// The concurrency suite for wheel contexts, through the exported API only:
// a context's cancel races its expiry, SystemTimer.Stop and the cancel of
// its parent, while contexts derived from it (standard and wheel ones,
// through standard and value layers) are made, canceled and expire beside
// them. Each body runs in a child process (a crash or a hang fails that
// test alone) with GOMAXPROCS above the core count; build with -tags
// timingwheel_failpoints to widen the windows. The checks are properties:
//
//   - every context ends, exactly once (its AfterFunc runs once, and its
//     Err and Cause never change once set), with Canceled or
//     DeadlineExceeded, and a cause among those it may have;
//   - DeadlineExceeded never early: an Err read before a clock reading that
//     is still before the deadline is never DeadlineExceeded;
//   - a family nobody cancels ends with DeadlineExceeded throughout;
//   - a cancel is synchronous: when the cancel of a wheel context, or of
//     its wheel parent, or SystemTimer.Stop returns, the context and
//     everything derived from it report done at once (a standard parent's
//     cancel reaches a wheel child's own Err at once, and its descendants a
//     goroutine hop later, as the doc of WithDeadline says);
//   - once every context has ended, Len is 0 and Stop returns nothing; and
//     TestMain's goleak check fails the child if a goroutine is left.

// concTimeout bounds a child process: a hang fails the test then.
const concTimeout = 2 * time.Minute

// stressFor is how long a stress body repeats its rounds (at least a few):
// a time, not a count, since the race detector and the failpoints slow
// every operation down by ten or more.
const stressFor = 1500 * time.Millisecond

// stressRounds runs round with seeds 0, 1, 2, ... in a child process
// (bounded by concTimeout), with preemption, for stressFor and at least
// three rounds, and stops at the first round that fails.
func stressRounds(t *testing.T, round func(t *testing.T, seed uint64)) {
	isolate.Run(t, concTimeout, func(t *testing.T) {
		withPreemption(t)
		end := time.Now().Add(stressFor)
		for r := 0; r < 3 || time.Now().Before(end); r++ {
			round(t, uint64(r))
			if t.Failed() {
				t.Fatalf("round %d failed", r)
			}
		}
	})
}

// withPreemption raises GOMAXPROCS above the core count for the test: more
// Ps than cores make the OS deschedule goroutines at any instruction.
func withPreemption(t *testing.T) {
	old := runtime.GOMAXPROCS(8)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// spinFor spins, yielding, for d: it places a cancel near a deadline. It is
// not a synchronisation point: any interleaving it produces is valid.
func spinFor(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
		runtime.Gosched()
	}
}

// concKey is the key of the value layers between contexts.
type concKey struct{}

// A tracked context records how it ended, from a context.AfterFunc.
type tracked struct {
	name     string
	ctx      context.Context
	deadline time.Time // the zero time: none
	strict   bool      // nobody cancels it or an ancestor but the round's racer: it must expire

	ends       atomic.Int32
	done       chan struct{} // closed by the first AfterFunc run
	err, cause error         // as the AfterFunc saw them; read after done
	racerFirst bool          // the round's racer had started ending the root when the AfterFunc ran
}

func track(t *testing.T, name string, ctx context.Context, rootEnding *atomic.Bool) *tracked {
	tr := &tracked{name: name, ctx: ctx, done: make(chan struct{})}
	tr.deadline, _ = ctx.Deadline()
	context.AfterFunc(ctx, func() {
		if tr.ends.Add(1) != 1 {
			t.Errorf("%s: its AfterFunc ran again: it ended twice", name)
			return
		}
		tr.err, tr.cause = ctx.Err(), context.Cause(ctx)
		tr.racerFirst = rootEnding.Load()
		close(tr.done)
	})
	return tr
}

// notEarly fails t if tr's Err is DeadlineExceeded before its deadline:
// Err is read before the clock, so a deadline still ahead of the clock was
// ahead of the end. It returns the Err it read.
func (tr *tracked) notEarly(t *testing.T) error {
	err := tr.ctx.Err()
	now := time.Now()
	if errors.Is(err, context.DeadlineExceeded) && (tr.deadline.IsZero() || now.Before(tr.deadline)) {
		t.Errorf("%s: DeadlineExceeded %v before its deadline", tr.name, tr.deadline.Sub(now))
	}
	return err
}

// mustBeDone fails t unless tr reports done now: Err non-nil and Done
// closed, what a synchronous cancel promises once after returns.
func (tr *tracked) mustBeDone(t *testing.T, after string) {
	if tr.notEarly(t) == nil {
		t.Errorf("%s: Err is nil after %s returned", tr.name, after)
		return
	}
	select {
	case <-tr.ctx.Done():
	default:
		t.Errorf("%s: Err is set but Done is open after %s returned", tr.name, after)
	}
}

// Family actions: what the goroutine that made a family does to it.
const (
	actExpire      = iota // nothing: the family expires, unless the racer ends it first
	actCancelNow          // cancel the top context at once
	actCancelLater        // cancel it after a spin of up to 3ms, around its deadline
	actCancelTwice        // cancel it from two goroutines at once
	actCancelKid          // cancel a wheel child, then the top context
	numActions
)

// A family is a wheel context, top, and contexts derived from it, parents
// before their children in members.
type family struct {
	action  int
	members []*tracked
	top     context.CancelFunc
	kid     context.CancelFunc // kidMembers' root's
	cancels []context.CancelFunc
	kidLen  int // members[kidAt:kidAt+kidLen] derive from the wheel child
	kidAt   int
}

func newFamily(t *testing.T, st *timingwheel.SystemTimer, parent context.Context, rng *rand.Rand, rootEnding *atomic.Bool) *family {
	f := &family{action: rng.IntN(numActions)}
	short := func() time.Duration { return time.Duration(rng.IntN(3000)) * time.Microsecond }
	// add("name")(st.WithTimeout(...)) tracks a context as a member.
	add := func(name string) func(context.Context, context.CancelFunc) context.Context {
		return func(ctx context.Context, cancel context.CancelFunc) context.Context {
			tr := track(t, name, ctx, rootEnding)
			tr.strict = f.action == actExpire
			f.members = append(f.members, tr)
			f.cancels = append(f.cancels, cancel)
			return ctx
		}
	}
	d := short()
	if f.action != actExpire && rng.IntN(3) == 0 {
		d = time.Hour // canceled long before its deadline: Canceled
	}
	top, cancel := st.WithTimeout(parent, d)
	f.top = cancel
	add("wheel top")(top, cancel)
	// Children with deadlines before and after top's: wheel contexts, or
	// context.WithCancel(top) when top's deadline comes first.
	std, stdCancel := context.WithCancel(top)
	add("std WithCancel(top)")(std, stdCancel)
	add("std WithTimeout(top)")(context.WithTimeout(top, short()))
	add("wheel under std layer")(st.WithTimeout(std, short()+time.Millisecond))
	add("wheel under value layer")(st.WithTimeout(context.WithValue(top, concKey{}, 1), short()))
	f.kidAt = len(f.members)
	kid, kidCancel := st.WithTimeout(top, short()+time.Millisecond)
	f.kid = kidCancel
	add("wheel kid")(kid, kidCancel)
	add("std WithCancel(wheel kid)")(context.WithCancel(kid))
	add("wheel grandkid")(st.WithTimeout(kid, short()))
	f.kidLen = len(f.members) - f.kidAt
	return f
}

// act does f's action; every cancel it makes is checked to be synchronous.
func (f *family) act(t *testing.T, rng *rand.Rand) {
	switch f.action {
	case actCancelNow:
		f.cancelTop(t)
	case actCancelLater:
		spinFor(time.Duration(rng.IntN(3000)) * time.Microsecond)
		f.cancelTop(t)
	case actCancelTwice:
		var wg sync.WaitGroup
		wg.Go(func() { f.cancelTop(t) })
		f.cancelTop(t)
		wg.Wait()
	case actCancelKid:
		f.kid()
		for _, tr := range f.members[f.kidAt : f.kidAt+f.kidLen] {
			tr.mustBeDone(t, "the wheel kid's cancel")
		}
		spinFor(time.Duration(rng.IntN(2000)) * time.Microsecond)
		f.cancelTop(t)
	}
}

func (f *family) cancelTop(t *testing.T) {
	f.top()
	for _, tr := range f.members {
		tr.mustBeDone(t, "the top's cancel")
	}

}

// A ctxScenario says what races the families' own ends.
type ctxScenario struct {
	name       string
	stdRoot    bool // the families' parent is a standard context.WithCancel, not a wheel context
	cancelRoot bool // the racer cancels the parent
	stop       bool // the racer stops the SystemTimer
}

var ctxScenarios = []ctxScenario{
	{name: "CancelVsExpiry"},
	{name: "CancelVsWheelParentCancel", cancelRoot: true},
	{name: "CancelVsStdParentCancel", stdRoot: true, cancelRoot: true},
	{name: "CancelVsSystemTimerStop", stop: true},
	{name: "CancelVsParentCancelVsStop", cancelRoot: true, stop: true},
}

// TestConcurrentContexts runs each scenario, in its own child process, for
// stressFor.
func TestConcurrentContexts(t *testing.T) {
	for _, sc := range ctxScenarios {
		t.Run(sc.name, func(t *testing.T) {
			stressRounds(t, func(t *testing.T, seed uint64) { contextRound(t, sc, seed) })
		})
	}
}

// contextRound is one round: eight goroutines each make families, half of
// them before the start signal and half after it (so that making races
// ending), and act on them; the racer ends the root or stops the
// SystemTimer at a random moment after the start; an observer reads the
// contexts' Err throughout. Then everything is canceled and checked.
func contextRound(t *testing.T, sc ctxScenario, seed uint64) {
	st, err := timingwheel.New()
	if err != nil {
		t.Fatal(err)
	}
	var rootEnding atomic.Bool // set before the racer ends the root or stops st
	var root context.Context
	var cancelRoot context.CancelFunc
	if sc.stdRoot {
		root, cancelRoot = context.WithCancel(context.Background())
	} else {
		// Later than any family's: a family's top context is always a
		// wheel context (with an earlier parent deadline it would be a
		// standard context.WithCancel, whose cancel reaches wheel
		// grandchildren only a goroutine hop later).
		root, cancelRoot = st.WithTimeout(context.Background(), 24*time.Hour)
	}
	rootT := track(t, "root", root, &rootEnding)

	const goroutines, perGoroutine = 8, 12
	pre := make([][]*family, goroutines)  // made before the start: the racer's checks cover them
	post := make([][]*family, goroutines) // made while things end
	var made, wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		made.Add(1)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for range perGoroutine / 2 {
				pre[g] = append(pre[g], newFamily(t, st, root, rng, &rootEnding))
			}
			made.Done()
			<-start
			for _, f := range pre[g] {
				f.act(t, rng)
				nf := newFamily(t, st, root, rng, &rootEnding)
				post[g] = append(post[g], nf)
				nf.act(t, rng)
			}
		})
	}
	made.Wait()
	var all []*family
	for _, fs := range pre {
		all = append(all, fs...)
	}

	stopObserving := make(chan struct{})
	observed := make(chan struct{})
	go func() {
		defer close(observed)
		for {
			for _, f := range all {
				for _, tr := range f.members {
					tr.notEarly(t)
				}
			}
			select {
			case <-stopObserving:
				return
			default:
			}
		}
	}()

	close(start)
	racer := make(chan struct{})
	go func() {
		defer close(racer)
		if !sc.cancelRoot && !sc.stop {
			return
		}
		spinFor(time.Duration(rand.New(rand.NewPCG(seed, 99)).IntN(3000)) * time.Microsecond)
		rootEnding.Store(true)
		var stopped chan struct{}
		if sc.stop {
			stopped = make(chan struct{})
			go func() {
				defer close(stopped)
				st.Stop()
				// Stop cancels every wheel context that had not
				// ended, synchronously; one that another goroutine is
				// ending reports done as soon as its Err is asked (Err
				// finishes what the ender started). Parents come
				// before their children in members, so each child is
				// asked after its parent has reported done.
				rootT.mustBeDone(t, "SystemTimer.Stop")
				for _, f := range all {
					for _, tr := range f.members {
						tr.mustBeDone(t, "SystemTimer.Stop")
					}
				}
			}()
		}
		if sc.cancelRoot {
			cancelRoot()
			rootT.mustBeDone(t, "the root's cancel")
			for _, f := range all {
				if sc.stdRoot {
					// A standard parent's cancel reaches a wheel child's
					// Err at once, and the child's descendants a
					// goroutine hop later: checked at the end.
					f.members[0].mustBeDone(t, "the standard root's cancel")
					continue
				}
				for _, tr := range f.members {
					tr.mustBeDone(t, "the wheel root's cancel")
				}
			}
		}
		if stopped != nil {
			<-stopped
		}
	}()

	wg.Wait()
	<-racer
	close(stopObserving)
	<-observed

	for _, fs := range post {
		all = append(all, fs...)
	}
	// A family nobody cancels ends by itself, within its few ms; only
	// then is everything canceled, which would hide one that never ends.
	for _, f := range all {
		if f.action == actExpire {
			for _, tr := range f.members {
				testwait.Recv(t, tr.done, tr.name+"'s expiry")
			}
		}
	}
	for _, f := range all {
		for _, c := range f.cancels {
			c()
		}
	}
	cancelRoot()
	checkEnded(t, rootT, sc)
	for _, f := range all {
		for _, tr := range f.members {
			checkEnded(t, tr, sc)
		}
	}
	// Every context has ended: none holds a wheel entry. (After Stop, Len
	// is 0 anyway.)
	if n := st.Len(); n != 0 {
		t.Errorf("Len is %d after every context ended", n)
	}
	if left := st.Stop(); len(left) != 0 {
		t.Errorf("Stop returned %d timers; the round armed none but contexts", len(left))
	}
}

// checkEnded waits for tr's end and checks how it ended.
func checkEnded(t *testing.T, tr *tracked, sc ctxScenario) {
	t.Helper()
	testwait.Recv(t, tr.done, tr.name+"'s end")
	if n := tr.ends.Load(); n != 1 {
		t.Errorf("%s ended %d times", tr.name, n)
	}
	if !errors.Is(tr.err, context.Canceled) && !errors.Is(tr.err, context.DeadlineExceeded) {
		t.Errorf("%s ended with %v; want Canceled or DeadlineExceeded", tr.name, tr.err)
	}
	if err := tr.notEarly(t); err != tr.err {
		t.Errorf("%s: Err changed from %v to %v", tr.name, tr.err, err)
	}
	if cause := context.Cause(tr.ctx); cause != tr.cause {
		t.Errorf("%s: Cause changed from %v to %v", tr.name, tr.cause, cause)
	}
	switch tr.cause {
	case context.Canceled, context.DeadlineExceeded:
	case timingwheel.ErrStopped:
		if !sc.stop {
			t.Errorf("%s: cause ErrStopped, but nothing stopped the SystemTimer", tr.name)
		}
	default:
		t.Errorf("%s: cause %v", tr.name, tr.cause)
	}
	if tr.strict && !errors.Is(tr.err, context.DeadlineExceeded) && !tr.racerFirst {
		t.Errorf("%s: ended with %v; nobody canceled it or an ancestor: want DeadlineExceeded", tr.name, tr.err)
	}
}
