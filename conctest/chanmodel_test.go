package conctest

import (
	"fmt"
	"math"
	"time"

	"github.com/anishathalye/porcupine"
)

// maxLate bounds how late the model lets a channel timer deliver: a
// receive that finds nothing at a time past the deadline by more than
// maxLate is a lost value. The library promises a tick (100µs here) plus
// scheduling delay; the bound is far above that, so that a stalled driver
// on a loaded machine under the race detector does not fail a correct
// history, and it is still the only thing that can catch a value that never
// comes.
const maxLate = 100 * time.Millisecond

// chanOp names an operation of a channel timer's history.
type chanOp uint8

const (
	copNew      chanOp = iota // NewTimer(d) or NewTicker(d)
	copStop                   // Stop
	copReset                  // Reset(d)
	copTryReset               // TryReset(d)
	copRecv                   // a receive from C with a select's default: a value or none
	copWait                   // a receive from C that waits up to in.wait for a value
	copSTStop                 // SystemTimer.Stop: the timer goes on as if nothing happened
)

var chanOpNames = [...]string{"New", "Stop", "Reset", "TryReset", "Recv", "Wait", "SystemTimer.Stop"}

// cinput is an operation's input. Times are ns since the history began.
type cinput struct {
	kind chanOp
	d    time.Duration // New, Reset, TryReset
	wait time.Duration // copWait: how long it waited before it gave up
	call int64         // the call time: a deadline armed by this op is at least call+d
}

// coutput is an operation's result.
type coutput struct {
	was bool    // ChanTimer's Stop, Reset and TryReset: whether it was pending
	err errKind // TryReset's error
	got bool    // a receive: whether it received a value
	v   int64   // the value received, as a time of the history
	ret int64   // the return time: a deadline armed by this op is at most ret+d
}

// cstate is the model of one ChanTimer or Ticker.
//
// A ChanTimer is pending from an arming until a receive takes its value or
// a Stop or Reset ends it: whether the value is still due or already in C
// makes no difference to Stop and Reset, which report both as pending, and
// to a receive it makes one only through time, which the model knows only
// as bounds. So the state is the bounds of the deadline, and a receive is
// checked against them: a value must be the deadline (within [lo, hi]) and
// not later than the receive's return (the value is the time it was due,
// and it is never sent before that time); none is wrong only if the
// deadline is more than maxLate in the past when the receive looked.
//
// A Ticker's ticks are the points origin + k*period, k >= 0, of its
// arming's schedule, with the origin in [lo, hi]; each receive narrows lo
// and hi to the origins that put its value on the schedule, so that later
// values must fall on the same points.
type cstate struct {
	made bool
	// pending: ChanTimer: armed, or its value is in C; Stop would return
	// true. Ticker: armed.
	pending bool
	lo, hi  int64 // while pending: the deadline (Ticker: the origin) is in [lo, hi]
	period  int64 // Ticker: the period of the arming
	last    int64 // Ticker: the last tick received since the arming; math.MinInt64: none
	// nextBy, Ticker: the next tick is due at or before nextBy; the arming's
	// first tick by hi, and after a receive at or before ret, by ret+period:
	// the run that delivered the last tick armed the next at most a period
	// after it, and a tick that finds C full is dropped, so C is empty after
	// the receive until the next tick that the wheel delivers.
	nextBy int64
}

// newChanModel returns the model of a ChanTimer, or of a Ticker.
// SystemTimer.Stop changes nothing: a channel timer outlives its
// SystemTimer, on a timer of the clock, "as if nothing had happened".
func newChanModel(ticker bool) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{cstate{}} },
		Step: func(st, in, out interface{}) []interface{} {
			s, i, o := st.(cstate), in.(cinput), out.(coutput)
			if ticker {
				return stepTicker(s, i, o)
			}
			return stepChan(s, i, o)
		},
		DescribeOperation: func(in, out interface{}) string { return describeChan(in.(cinput), out.(coutput), ticker) },
		DescribeState:     func(st interface{}) string { return describeCState(st.(cstate), ticker) },
	}
	return nm.ToModel()
}

// emptyAt returns a time at which a receive that got nothing saw C empty:
// its call for a select with default, its call plus the wait for one that
// waited (it looks once more after the wait, so that a value that came
// while it was not yet waiting is received).
func (in cinput) emptyAt() int64 {
	if in.kind == copWait {
		return in.call + int64(in.wait)
	}
	return in.call
}

// arm returns s armed by in: the deadline is read from the clock during
// the call, so it lies in [call+d, ret+d].
func (s cstate) arm(in cinput, out coutput) cstate {
	s.pending = true
	s.lo, s.hi = in.call+int64(in.d), out.ret+int64(in.d)
	return s
}

// stepShared takes the steps in which a ChanTimer and a Ticker are alike:
// the call that makes the timer (armed by arm), SystemTimer.Stop, which
// changes neither, and any call before the timer is made, which is not
// possible. It reports done false for the others, with nothing taken.
func stepShared(s cstate, in cinput, out coutput, arm func(cstate, cinput, coutput) cstate) (next []interface{}, done bool) {
	switch {
	case in.kind == copNew:
		if s.made || out.err != errNone {
			return nil, true
		}
		s = arm(s, in, out)
		s.made = true
		return []interface{}{s}, true
	case in.kind == copSTStop:
		return []interface{}{s}, true // before the timer is made, or after
	case !s.made:
		return nil, true
	}
	return nil, false
}

// stepChan returns the states a ChanTimer can be in after the operation,
// none if its result is not possible in s.
func stepChan(s cstate, in cinput, out coutput) []interface{} {
	if next, done := stepShared(s, in, out, cstate.arm); done {
		return next
	}
	switch in.kind {
	case copStop:
		if out.was != s.pending {
			return nil
		}
		s.pending = false
	case copReset, copTryReset:
		// Channel timers never fail with ErrStopped; WithMaxPending is not
		// modelled.
		if out.was != s.pending || out.err != errNone {
			return nil
		}
		s = s.arm(in, out)
	case copRecv, copWait:
		if out.got {
			// The value of the pending arming, its deadline, received at or
			// after that time; once.
			if !s.pending || out.v < s.lo || out.v > s.hi || out.v > out.ret {
				return nil
			}
			s.pending = false
			break
		}
		if s.pending && in.emptyAt() > s.hi+int64(maxLate) {
			return nil // its value should have been there
		}
	}
	return []interface{}{s}
}

// armTicker returns s armed by in, a NewTicker, Reset or TryReset.
func (s cstate) armTicker(in cinput, out coutput) cstate {
	s = s.arm(in, out)
	s.period, s.last, s.nextBy = int64(in.d), math.MinInt64, s.hi
	return s
}

// stepTicker returns the states a Ticker can be in after the operation,
// none if its result is not possible in s.
func stepTicker(s cstate, in cinput, out coutput) []interface{} {
	if next, done := stepShared(s, in, out, cstate.armTicker); done {
		return next
	}
	switch in.kind {
	case copStop:
		s.pending = false
	case copReset, copTryReset:
		if out.err != errNone {
			return nil
		}
		s = s.armTicker(in, out)
	case copRecv, copWait:
		if !out.got {
			if s.pending && in.emptyAt() > s.nextBy+int64(maxLate) {
				return nil // a tick should have been there
			}
			break
		}
		// A tick of the arming's schedule, after the last one received,
		// received at or after its time.
		v, p := out.v, s.period
		if !s.pending || v <= s.last || v > out.ret || v < s.lo {
			return nil
		}
		// The origins in [lo, min(hi, v)] that put v on the schedule.
		lo := s.lo + (v-s.lo)%p
		hi := v - ceilDiv(v-min(s.hi, v), p)*p
		if lo > hi {
			return nil
		}
		s.lo, s.hi, s.last, s.nextBy = lo, hi, v, out.ret+p
	}
	return []interface{}{s}
}

// ceilDiv returns ⌈a/b⌉ for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func describeChan(in cinput, out coutput, ticker bool) string {
	name := "ChanTimer"
	if ticker {
		name = "Ticker"
	}
	deadline := fmt.Sprintf("deadline in [%v, %v]", ns(in.call+int64(in.d)), ns(out.ret+int64(in.d)))
	switch in.kind {
	case copNew:
		if ticker {
			return fmt.Sprintf("NewTicker(%v): %s (first tick in [%v, %v])", in.d, errNames[out.err], ns(in.call+int64(in.d)), ns(out.ret+int64(in.d)))
		}
		return fmt.Sprintf("NewTimer(%v): %s (%s)", in.d, errNames[out.err], deadline)
	case copStop:
		if ticker {
			return "Stop()"
		}
		return fmt.Sprintf("Stop() = %v", out.was)
	case copReset:
		if ticker {
			return fmt.Sprintf("Reset(%v) (first tick in [%v, %v])", in.d, ns(in.call+int64(in.d)), ns(out.ret+int64(in.d)))
		}
		return fmt.Sprintf("Reset(%v) = %v (%s)", in.d, out.was, deadline)
	case copTryReset:
		if ticker {
			return fmt.Sprintf("TryReset(%v) = %s (first tick in [%v, %v])", in.d, errNames[out.err], ns(in.call+int64(in.d)), ns(out.ret+int64(in.d)))
		}
		return fmt.Sprintf("TryReset(%v) = %v, %s (%s)", in.d, out.was, errNames[out.err], deadline)
	case copRecv, copWait:
		what := "<-C (default)"
		if in.kind == copWait {
			what = fmt.Sprintf("<-C (waiting %v)", in.wait)
		}
		if out.got {
			return fmt.Sprintf("%s = %v", what, ns(out.v))
		}
		return fmt.Sprintf("%s: none, empty at %v", what, ns(in.emptyAt()))
	case copSTStop:
		return "SystemTimer.Stop(), with a " + name
	}
	return "?"
}

func describeCState(s cstate, ticker bool) string {
	var d string
	switch {
	case !s.made:
		return "not made"
	case !s.pending && ticker:
		d = "stopped"
	case !s.pending:
		d = "not pending"
	case ticker && s.last != math.MinInt64:
		d = fmt.Sprintf("armed, period %v, schedule origin in [%v, %v], last tick received %v, next due by %v", time.Duration(s.period), ns(s.lo), ns(s.hi), ns(s.last), ns(s.nextBy))
	case ticker:
		d = fmt.Sprintf("armed, period %v, first tick in [%v, %v]", time.Duration(s.period), ns(s.lo), ns(s.hi))
	default:
		d = fmt.Sprintf("pending, deadline in [%v, %v]", ns(s.lo), ns(s.hi))
	}
	return d
}
