package conctest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-timingwheel/timingwheel"
)

// tick is the SystemTimer's tick in every history: short, so that timers
// armed for a few ticks run while the operations go on.
const tick = 100 * time.Microsecond

// config says what kind of history to record.
type config struct {
	// raceStop: a SystemTimer.Stop starts at a random moment during the
	// operations, and AfterFunc timers are created concurrently with it.
	raceStop bool
	// maxPending is WithMaxPending's bound; 0: none.
	maxPending int
}

// history is what one run of the operations recorded.
type history struct {
	seed     uint64
	timers   int
	ops      []porcupine.Operation
	problems []string // checks outside the model: SystemTimer.Stop's slice
}

// recorder collects the operations of a history, timed on the monotonic
// clock in ns since base.
type recorder struct {
	base time.Time
	mu   sync.Mutex
	ops  []porcupine.Operation
}

func (r *recorder) now() int64 { return int64(time.Since(r.base)) }

func (r *recorder) add(client int, in input, out output, call, ret int64) {
	r.mu.Lock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	r.mu.Unlock()
}

// pickD draws a duration: at once (0 or negative), a few ticks (the timer
// fires during the history), a few ms, or an hour (it never fires).
func pickD(rng *rand.Rand) time.Duration {
	switch r := rng.IntN(10); {
	case r < 2:
		return 0
	case r < 3:
		return -time.Millisecond
	case r < 6:
		return time.Duration(1+rng.IntN(3)) * tick
	case r < 8:
		return time.Duration(1+rng.IntN(4)) * time.Millisecond
	default:
		return time.Hour
	}
}

// pause lets the other goroutines, the driver and the executor move on.
func pause(rng *rand.Rand) {
	switch rng.IntN(4) {
	case 0:
	case 1:
		runtime.Gosched()
	default:
		time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
	}
}

func errKindOf(err error) errKind {
	switch {
	case err == nil:
		return errNone
	case errors.Is(err, timingwheel.ErrStopped):
		return errStopped
	case errors.Is(err, timingwheel.ErrTooManyPending):
		return errTooMany
	}
	return errOther
}

// record runs one history: a fresh SystemTimer, 2 to 4 timers, 3 or 4
// goroutines per timer each making 3 to 6 random operations on it, and a
// SystemTimer.Stop at the end (and, with cfg.raceStop, one at a random
// moment). Every callback records when it started.
func record(t *testing.T, seed uint64, cfg config) *history {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	opts := []timingwheel.Option{timingwheel.WithTick(tick)}
	if cfg.maxPending > 0 {
		opts = append(opts, timingwheel.WithMaxPending(cfg.maxPending))
	}
	st, err := timingwheel.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	h := &history{seed: seed, timers: 2 + rng.IntN(maxTimers-1)}
	r := &recorder{base: time.Now()}

	var runMu sync.Mutex
	runs := make([][]int64, h.timers)
	callback := func(i int) func() {
		return func() {
			start := r.now()
			runMu.Lock()
			runs[i] = append(runs[i], start)
			runMu.Unlock()
		}
	}

	timers := make([]*timingwheel.Timer, h.timers)
	bound := make([]timingwheel.Timer, h.timers)
	created := make([]chan struct{}, h.timers) // closed once timers[i] is set, or its creation failed
	createCall := make([]int64, h.timers)      // the creator's call time: no run of the timer starts before
	afterD := make([]time.Duration, h.timers)
	client := 0
	create := func(i int) {
		defer close(created[i])
		in := input{kind: opAfterFunc, timer: i, d: afterD[i]}
		call := r.now()
		createCall[i], in.at = call, call
		tm, err := st.AfterFunc(in.d, callback(i))
		ret := r.now()
		r.add(i, in, output{err: errKindOf(err)}, call, ret)
		if err == nil {
			timers[i] = tm
		}
	}
	var later []int // AfterFunc timers created by their first goroutine
	for i := range h.timers {
		created[i] = make(chan struct{})
		if rng.IntN(2) == 0 {
			call := r.now()
			st.Bind(&bound[i], callback(i))
			timers[i] = &bound[i]
			createCall[i] = call
			r.add(i, input{kind: opBind, timer: i, at: call}, output{}, call, r.now())
			close(created[i])
			continue
		}
		afterD[i] = pickD(rng)
		if cfg.raceStop && rng.IntN(2) == 0 {
			later = append(later, i)
			continue
		}
		create(i)
	}
	client = h.timers

	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range h.timers {
		for g := range 3 + rng.IntN(2) {
			grng := rand.New(rand.NewPCG(rng.Uint64(), uint64(client)))
			c := client
			client++
			creator := g == 0 && contains(later, i)
			wg.Go(func() {
				<-gate
				if creator {
					pause(grng)
					create(i)
				}
				<-created[i]
				tm := timers[i]
				if tm == nil {
					return // AfterFunc failed: there is no timer
				}
				for range 3 + grng.IntN(4) {
					pause(grng)
					in := input{timer: i}
					var out output
					switch k := grng.IntN(10); {
					case k < 3:
						in.kind = opStop
						in.at = r.now()
						out.was = tm.Stop()
					case k < 5:
						in.kind, in.d = opReset, pickD(grng)
						in.at = r.now()
						out.was = tm.Reset(in.d)
					case k < 7:
						in.kind, in.d = opPostpone, pickD(grng)
						in.at = r.now()
						out.was = tm.Postpone(in.d)
					default:
						in.kind, in.d = opTryReset, pickD(grng)
						in.at = r.now()
						var err error
						out.was, err = tm.TryReset(in.d)
						out.err = errKindOf(err)
					}
					r.add(c, in, out, in.at, r.now())
				}
			})
		}
	}
	stopClient := client
	client++
	// index maps the timers to their indices, for SystemTimer.Stop's slice.
	index := func() map[*timingwheel.Timer]int {
		m := make(map[*timingwheel.Timer]int)
		for i := range h.timers {
			<-created[i]
			if timers[i] != nil {
				m[timers[i]] = i
			}
		}
		return m
	}
	var problemsMu sync.Mutex
	stoppedAt := int64(math.MaxInt64) // when the first SystemTimer.Stop returned
	stStop := func(c int) {
		call := r.now()
		left := st.Stop()
		ret := r.now()
		problemsMu.Lock()
		stoppedAt = min(stoppedAt, ret)
		problemsMu.Unlock()
		idx := index()
		var mask uint32 // bit i: timers[i] is in left
		for _, tm := range left {
			i, ok := idx[tm]
			problemsMu.Lock()
			switch {
			case !ok:
				h.problems = append(h.problems, fmt.Sprintf("SystemTimer.Stop returned a timer that no AfterFunc or Bind of the history returned: %p", tm))
			case mask&(1<<i) != 0:
				h.problems = append(h.problems, fmt.Sprintf("SystemTimer.Stop returned t%d twice", i))
			}
			problemsMu.Unlock()
			if ok {
				mask |= 1 << i
			}
		}
		// One operation per timer: the SystemTimer closes its shards one
		// after another, so each timer sees it stop at its own moment.
		for i := range h.timers {
			r.add(c, input{kind: opSTStop, timer: i}, output{was: mask&(1<<i) != 0}, call, ret)
		}
	}
	if cfg.raceStop {
		delay := time.Duration(rng.IntN(1500)) * time.Microsecond
		wg.Go(func() {
			<-gate
			time.Sleep(delay)
			stStop(stopClient)
		})
	}
	close(gate)
	wg.Wait()
	stStop(stopClient)

	// No callback starts after Stop returns: the runs are all in.
	runMu.Lock()
	defer runMu.Unlock()
	for i, starts := range runs {
		for _, s := range starts {
			// The model linearizes a run at its hand-off to the
			// executor, which may precede SystemTimer.Stop: the start
			// itself is checked here. The callback records it before it
			// returns, and Stop waits for running callbacks.
			if s > stoppedAt {
				h.problems = append(h.problems, fmt.Sprintf("a run of t%d started at %v, after SystemTimer.Stop returned at %v", i, ns(s), ns(stoppedAt)))
			}
			r.add(client, input{kind: opRun, timer: i}, output{start: s}, createCall[i], s)
			client++
		}
	}
	h.ops = r.ops
	return h
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// checkResult counts the outcomes of the checks.
type checkResult struct {
	histories, checks, unknown int
	seen                       map[string]int // outcomes seen, to show what the histories exercised
}

// tally counts the outcomes of h's operations.
func (res *checkResult) tally(h *history) {
	if res.seen == nil {
		res.seen = make(map[string]int)
	}
	for _, op := range h.ops {
		in, out := op.Input.(input), op.Output.(output)
		k := opNames[in.kind]
		switch in.kind {
		case opRun:
		case opAfterFunc, opBind:
			k += "/" + errNames[out.err]
		case opTryReset:
			k += fmt.Sprintf("/%v/%s", out.was, errNames[out.err])
		default:
			k += fmt.Sprintf("/%v", out.was)
		}
		res.seen[k]++
	}
}

// check checks h against the model: timer by timer when no bound ties the
// timers together, else as a whole. It fails t with the history if it is
// not linearizable, and reports whether it was.
func check(t *testing.T, h *history, maxPending int, res *checkResult) bool {
	t.Helper()
	res.histories++
	res.tally(h)
	if len(h.problems) > 0 {
		t.Errorf("history seed %#x:\n  %s\nthe history:\n%s", h.seed, strings.Join(h.problems, "\n  "), format(h.ops))
	}
	model := newModel(maxPending)
	var parts [][]porcupine.Operation
	if maxPending > 0 {
		parts = [][]porcupine.Operation{h.ops}
	} else {
		for i := range h.timers {
			var part []porcupine.Operation
			for _, op := range h.ops {
				if op.Input.(input).timer == i {
					part = append(part, op)
				}
			}
			parts = append(parts, part)
		}
	}
	ok := len(h.problems) == 0
	for _, part := range parts {
		res.checks++
		result, info := porcupine.CheckOperationsVerbose(model, part, checkTimeout)
		switch result {
		case porcupine.Unknown:
			res.unknown++
		case porcupine.Illegal:
			ok = false
			visualize(t, model, info, h.seed, func(file string) {
				t.Errorf("history seed %#x is not linearizable (visualization: %s; set CONCTEST_VIS_DIR to keep it):\n%s", h.seed, file, format(part))
			})
		}
	}
	return ok
}

// visualize writes porcupine's visualization of a history that is not
// linearizable to CONCTEST_VIS_DIR, or to a temporary directory, and calls
// report with the file's name.
func visualize(t *testing.T, model porcupine.Model, info porcupine.LinearizationInfo, seed uint64, report func(file string)) {
	t.Helper()
	dir := os.Getenv("CONCTEST_VIS_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	file := filepath.Join(dir, fmt.Sprintf("%s-%#x.html", strings.ReplaceAll(t.Name(), "/", "_"), seed))
	if err := porcupine.VisualizePath(model, info, file); err != nil {
		t.Logf("visualization: %v", err)
	}
	report(file)
}

// checkTimeout bounds the search for one partition's linearization.
const checkTimeout = 2 * time.Second

// format prints a history as text, by call time.
func format(ops []porcupine.Operation) string {
	ops = append([]porcupine.Operation(nil), ops...)
	sort.SliceStable(ops, func(a, b int) bool { return ops[a].Call < ops[b].Call })
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "  [%12v .. %12v] client %2d: %s\n", time.Duration(op.Call), time.Duration(op.Return), op.ClientId, describe(op.Input.(input), op.Output.(output)))
	}
	return b.String()
}
