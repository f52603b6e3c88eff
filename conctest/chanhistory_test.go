package conctest

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-timingwheel/timingwheel"
)

// chanConfig says what kind of channel timer history to record.
type chanConfig struct {
	ticker bool // a Ticker, else a ChanTimer
	// mutant, if set, puts a fault between the history and the timer
	// (see TestChanMutants).
	mutant func(tm chanTimer, quit <-chan struct{}) chanTimer
}

// chanHistory is what one run of the operations on a channel timer
// recorded.
type chanHistory struct {
	seed uint64
	ops  []porcupine.Operation
	// raceStop: SystemTimer.Stop came at a random moment among the
	// operations, not after them.
	raceStop bool
	// probeWait is how long the receive after the others waited at most;
	// 0 if the history needed none. probeGot: it received a value (else it
	// waited the whole time).
	probeWait time.Duration
	probeGot  bool
}

// chanTimer is what a history does to a ChanTimer or a Ticker.
type chanTimer struct {
	c        <-chan time.Time
	stop     func() bool
	reset    func(time.Duration) bool
	tryReset func(time.Duration) (bool, error)
}

func chanTimerOf(tm *timingwheel.ChanTimer) chanTimer {
	return chanTimer{c: tm.C, stop: tm.Stop, reset: tm.Reset, tryReset: tm.TryReset}
}

func tickerOf(tk *timingwheel.Ticker) chanTimer {
	return chanTimer{
		c:        tk.C,
		stop:     func() bool { tk.Stop(); return false },
		reset:    func(d time.Duration) bool { tk.Reset(d); return false },
		tryReset: func(d time.Duration) (bool, error) { return false, tk.TryReset(d) },
	}
}

// pickChanD draws a duration for a ChanTimer: at once, a tick or less (it
// fires while the operations go on), a few ms (about when they end), or an
// hour (never). For a Ticker, a positive period: a tick or less, a few
// ticks, a few ms, or an hour.
func pickChanD(rng *rand.Rand, ticker bool) time.Duration {
	switch r := rng.IntN(20); {
	case r < 3 && !ticker:
		return 0
	case r < 10:
		return time.Duration(1+rng.IntN(int(tick/time.Microsecond))) * time.Microsecond
	case r < 12 && ticker:
		return time.Duration(2+rng.IntN(4)) * tick
	case r < 16:
		return time.Duration(1+rng.IntN(4)) * time.Millisecond
	default:
		return time.Hour
	}
}

// pickWait draws how long a waiting receive waits: a tick, a few, or a ms.
func pickWait(rng *rand.Rand) time.Duration {
	return []time.Duration{tick, 3 * tick, time.Millisecond}[rng.IntN(3)]
}

// recordChan runs one history: a fresh SystemTimer, one ChanTimer or
// Ticker, and 3 or 4 goroutines each making 4 to 8 random operations on
// it: Stop, Reset(d), TryReset(d), and receives from C, with a select's
// default or waiting a little. In half the histories, SystemTimer.Stop
// comes at a random moment among them (and in half of those, the timer is
// made after the operations start, racing it too). Then, alone: a receive
// that waits long enough to see a value the history may still owe (see
// probeWait); SystemTimer.Stop, if it has not come; Reset to a tick, a
// receive that waits for its value, Stop, and a receive that gets none.
func recordChan(t *testing.T, seed uint64, cfg chanConfig) *chanHistory {
	rng := rand.New(rand.NewPCG(seed, 0xc4a7))
	st, err := timingwheel.New(timingwheel.WithTick(tick))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	quit := make(chan struct{}) // ends a mutant's goroutine
	defer close(quit)
	h := &chanHistory{seed: seed, raceStop: rng.IntN(2) == 0}
	r := &recorder{base: time.Now()}
	add := func(client int, in cinput, out coutput) {
		r.mu.Lock()
		r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: in.call, Output: out, Return: out.ret})
		r.mu.Unlock()
	}

	var tm chanTimer
	made := make(chan struct{}) // closed once tm is set
	newTimer := func(client int, d time.Duration) {
		defer close(made)
		in := cinput{kind: copNew, d: d}
		in.call = r.now()
		var err error
		if cfg.ticker {
			var tk *timingwheel.Ticker
			if tk, err = st.NewTicker(in.d); err == nil {
				tm = tickerOf(tk)
			}
		} else {
			var ct *timingwheel.ChanTimer
			if ct, err = st.NewTimer(in.d); err == nil {
				tm = chanTimerOf(ct)
			}
		}
		add(client, in, coutput{err: errKindOf(err), ret: r.now()})
		if err != nil {
			t.Errorf("New(%v) failed: %v", d, err) // channel timers never fail without a bound
			return
		}
		if cfg.mutant != nil {
			tm = cfg.mutant(tm, quit)
		}
	}
	newD := pickChanD(rng, cfg.ticker)
	lateNew := h.raceStop && rng.IntN(2) == 0
	if !lateNew {
		newTimer(0, newD)
	}

	// do makes the operation in on tm and records it.
	do := func(client int, in cinput) {
		var out coutput
		var v time.Time
		in.call = r.now()
		switch in.kind {
		case copStop:
			out.was = tm.stop()
		case copReset:
			out.was = tm.reset(in.d)
		case copTryReset:
			var err error
			out.was, err = tm.tryReset(in.d)
			out.err = errKindOf(err)
		case copRecv:
			select {
			case v = <-tm.c:
				out.got = true
			default:
			}
		case copWait:
			w := time.NewTimer(in.wait)
			select {
			case v = <-tm.c:
				out.got = true
			case <-w.C:
				// Look once more: a value that came before the wait
				// ended, while this goroutine was not yet in the select,
				// would lose to the timer half the time; the model reads
				// a none as C being empty at call+wait.
				select {
				case v = <-tm.c:
					out.got = true
				default:
				}
			}
			w.Stop()
		}
		out.ret = r.now()
		if out.got {
			out.v = int64(v.Sub(r.base))
		}
		add(client, in, out)
	}

	gate := make(chan struct{})
	var wg sync.WaitGroup
	client := 1
	for g := range 3 + rng.IntN(2) {
		grng := rand.New(rand.NewPCG(rng.Uint64(), uint64(client)))
		c := client
		client++
		wg.Go(func() {
			<-gate
			if lateNew && g == 0 {
				pause(grng)
				newTimer(c, newD)
			}
			<-made
			if tm.c == nil {
				return // New failed
			}
			for range 4 + grng.IntN(5) {
				pause(grng)
				var in cinput
				switch x := grng.IntN(20); {
				case x < 4:
					in.kind = copStop
				case x < 8:
					in.kind, in.d = copReset, pickChanD(grng, cfg.ticker)
				case x < 10:
					in.kind, in.d = copTryReset, pickChanD(grng, cfg.ticker)
				case x < 16:
					in.kind = copRecv
				default:
					in.kind, in.wait = copWait, pickWait(grng)
				}
				do(c, in)
			}
		})
	}
	stStop := func(client int) {
		call := r.now()
		st.Stop()
		add(client, cinput{kind: copSTStop, call: call}, coutput{ret: r.now()})
	}
	if h.raceStop {
		delay := time.Duration(rng.IntN(2000)) * time.Microsecond
		c := client
		wg.Go(func() {
			<-gate
			time.Sleep(delay)
			stStop(c)
		})
	}
	close(gate)
	wg.Wait()
	if tm.c == nil {
		h.ops = r.ops
		return h
	}

	r.mu.Lock()
	ops := append([]porcupine.Operation(nil), r.ops...)
	r.mu.Unlock()
	if w, ok := probeWait(ops, r.now(), cfg.ticker); ok {
		h.probeWait = w
		in := cinput{kind: copWait, wait: w}
		in.call = r.now()
		var out coutput
		select {
		case v := <-tm.c:
			out.got, out.v = true, int64(v.Sub(r.base))
		case <-time.After(w):
			select {
			case v := <-tm.c:
				out.got, out.v = true, int64(v.Sub(r.base))
			default:
			}
		}
		out.ret = r.now()
		h.probeGot = out.got
		add(0, in, out)
	}
	if !h.raceStop {
		stStop(0)
	}
	// After SystemTimer.Stop the timer goes on, on a timer of the clock.
	do(0, cinput{kind: copReset, d: tick})
	do(0, cinput{kind: copWait, wait: maxLate + 2*tick})
	do(0, cinput{kind: copStop}) // no value from before is received after it
	do(0, cinput{kind: copRecv})
	h.ops = r.ops
	return h
}

// probeWait returns how long a receive made after every operation in ops
// returned, at now, must wait so that the model can tell whether a value
// owed was lost: until maxLate past the deadline of every arming that may
// be the last. It reports false, and the history makes no such receive, if
// the last may be a Stop or an arming for an hour, or if a ChanTimer
// arming that may be the last may have had its value received: then the
// receive would most often wait the whole time for nothing. (The Reset
// and receive after it check that the timer still delivers.)
func probeWait(ops []porcupine.Operation, now int64, ticker bool) (time.Duration, bool) {
	// An operation may be linearized last among the mutators if no other
	// mutator was called after it returned.
	var maxCall int64
	mutator := func(in cinput) bool { return in.kind <= copTryReset }
	for _, op := range ops {
		if in := op.Input.(cinput); mutator(in) {
			maxCall = max(maxCall, op.Call)
		}
	}
	var until int64
	for _, op := range ops {
		in, out := op.Input.(cinput), op.Output.(coutput)
		if !mutator(in) || op.Return < maxCall {
			continue
		}
		if in.kind == copStop || out.err != errNone || in.d >= time.Hour {
			return 0, false
		}
		lo, hi := op.Call+int64(in.d), op.Return+int64(in.d)
		if !ticker && received(ops, lo, hi) {
			return 0, false
		}
		until = max(until, hi)
		if ticker {
			until = max(until, now+int64(in.d)) // a tick received since: the next by a period after
		}
	}
	return max(time.Duration(until-now)+maxLate+time.Millisecond, 0), true
}

// received reports whether a receive got a value in [lo, hi].
func received(ops []porcupine.Operation, lo, hi int64) bool {
	for _, op := range ops {
		if in, out := op.Input.(cinput), op.Output.(coutput); (in.kind == copRecv || in.kind == copWait) && out.got && lo <= out.v && out.v <= hi {
			return true
		}
	}
	return false
}

// tallyChan counts the outcomes of h's operations.
func (res *checkResult) tallyChan(h *chanHistory, ticker bool) {
	if res.seen == nil {
		res.seen = make(map[string]int)
	}
	for _, op := range h.ops {
		in, out := op.Input.(cinput), op.Output.(coutput)
		k := chanOpNames[in.kind]
		switch {
		case in.kind == copRecv || in.kind == copWait:
			if out.got {
				k += "/value"
			} else {
				k += "/none"
			}
		case in.kind == copTryReset:
			k += fmt.Sprintf("/%v/%s", out.was, errNames[out.err])
			if ticker {
				k = "TryReset/" + errNames[out.err]
			}
		case (in.kind == copStop || in.kind == copReset) && !ticker:
			k += fmt.Sprintf("/%v", out.was)
		}
		res.seen[k]++
	}
	if h.raceStop {
		res.seen["racing SystemTimer.Stop"]++
	}
	switch {
	case h.probeGot:
		res.seen["probe/value"]++
	case h.probeWait > 0:
		res.seen["probe/none"]++
	}
}

// checkChan checks h against the model of a ChanTimer or Ticker. It fails
// t with the history if it is not linearizable, and reports whether it was.
func checkChan(t *testing.T, h *chanHistory, ticker bool, res *checkResult) bool {
	t.Helper()
	res.histories++
	res.checks++
	res.tallyChan(h, ticker)
	model := newChanModel(ticker)
	result, info := porcupine.CheckOperationsVerbose(model, h.ops, checkTimeout)
	switch result {
	case porcupine.Unknown:
		res.unknown++
	case porcupine.Illegal:
		visualize(t, model, info, h.seed, func(file string) {
			t.Errorf("history seed %#x is not linearizable (visualization: %s; set CONCTEST_VIS_DIR to keep it):\n%s", h.seed, file, formatChan(h.ops, ticker))
		})
		return false
	}
	return true
}

// formatChan prints a channel timer's history as text, by call time.
func formatChan(ops []porcupine.Operation, ticker bool) string {
	ops = append([]porcupine.Operation(nil), ops...)
	sort.SliceStable(ops, func(a, b int) bool { return ops[a].Call < ops[b].Call })
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "  [%12v .. %12v] client %2d: %s\n", time.Duration(op.Call), time.Duration(op.Return), op.ClientId, describeChan(op.Input.(cinput), op.Output.(coutput), ticker))
	}
	return b.String()
}
