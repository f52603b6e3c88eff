package conctest

import (
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// maxTimers is how many timers one history (and so the model's state) holds
// at most.
const maxTimers = 4

// opKind names an operation of a history.
type opKind uint8

const (
	opAfterFunc opKind = iota // SystemTimer.AfterFunc(d): creates the timer
	opBind                    // SystemTimer.Bind: creates the timer, idle
	opStop                    // Timer.Stop
	opReset                   // Timer.Reset(d)
	opTryReset                // Timer.TryReset(d)
	opRun                     // the callback ran: Return is its start
	opSTStop                  // SystemTimer.Stop, as it concerns one timer: whether it returned it
	opPostpone                // Timer.Postpone(d)
)

var opNames = [...]string{"AfterFunc", "Bind", "Stop", "Reset", "TryReset", "Run", "SystemTimer.Stop", "Postpone"}

// errKind is an error an operation returned.
type errKind uint8

const (
	errNone errKind = iota
	errStopped
	errTooMany
	errOther
)

var errNames = [...]string{"nil", "ErrStopped", "ErrTooManyPending", "other error"}

// input is an operation's input. timer indexes the timer it concerns.
type input struct {
	kind  opKind
	timer int
	d     time.Duration
	at    int64 // the call time, ns: a deadline armed by this op is at least at+d
}

// output is an operation's result.
type output struct {
	was   bool    // Stop's result; Reset's and TryReset's wasPending; opSTStop: the timer is in the slice it returned
	err   errKind // AfterFunc's, TryReset's error
	start int64   // opRun: when the callback started, ns
}

// tstate is the model of one timer.
type tstate struct {
	exists  bool  // created: AfterFunc succeeded, or Bind
	pending bool  // armed, and neither handed to the executor nor stopped
	lb      int64 // while pending: the deadline is at or after lb
	// owed counts the runs handed to the executor by an op (AfterFunc or
	// Reset with d <= 0) whose Run has not been linearized yet: each one
	// is observed later, or never starts and SystemTimer.Stop returns the
	// timer.
	owed int
	// hidden: a pending timer was handed to the executor (silently, at
	// an unknown moment) and its run never starts: only SystemTimer.Stop,
	// which takes it from the executor's queue and returns the timer,
	// justifies it.
	hidden bool
	// closed: SystemTimer.Stop has been linearized for this timer. The
	// SystemTimer closes its shards one after another, so that each timer
	// has its own moment of closing within the call.
	closed bool
}

// mstate is the model's state: the timers of a SystemTimer.
type mstate struct {
	ts [maxTimers]tstate
}

func (s *mstate) pendingCount() int {
	n := 0
	for i := range s.ts {
		if s.ts[i].pending {
			n++
		}
	}
	return n
}

// newModel returns the model of a SystemTimer made with WithMaxPending(
// maxPending) (0: no bound). The model is nondeterministic: before each
// operation, any subset of the pending timers may be handed to the executor
// for a run that never starts (see tstate.hidden).
func newModel(maxPending int) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{mstate{}} },
		Step: func(st, in, out interface{}) []interface{} {
			return step(st.(mstate), in.(input), out.(output), maxPending)
		},
		DescribeOperation: func(in, out interface{}) string { return describe(in.(input), out.(output)) },
		DescribeState:     func(st interface{}) string { return describeState(st.(mstate)) },
	}
	return nm.ToModel()
}

// step returns the states s can be in after the operation, none if the
// operation's result is not possible in s.
func step(s mstate, in input, out output, maxPending int) []interface{} {
	var next []interface{}
	// Every subset of the pending timers may have been handed off for a
	// run that never starts.
	var pend []int
	for i := range s.ts {
		if s.ts[i].pending {
			pend = append(pend, i)
		}
	}
	for mask := 0; mask < 1<<len(pend); mask++ {
		c := s
		for j, i := range pend {
			if mask&(1<<j) != 0 {
				c.ts[i].pending, c.ts[i].hidden = false, true
			}
		}
		next = apply(c, in, out, maxPending, next)
	}
	return next
}

// apply appends to next the states that s can be in after the operation.
func apply(s mstate, in input, out output, maxPending int, next []interface{}) []interface{} {
	t := &s.ts[in.timer]
	// refusable says whether WithMaxPending's bound refuses to arm the
	// timer now; admissible whether it lets it be armed.
	refusable := maxPending > 0 && in.d > 0 && !t.pending && s.pendingCount() >= maxPending
	admissible := maxPending == 0 || in.d <= 0 || t.pending || s.pendingCount() < maxPending
	switch in.kind {
	case opSTStop:
		switch {
		case t.closed:
			if !out.was { // a later call returns nil
				next = append(next, s)
			}
		case out.was == (t.exists && (t.pending || t.hidden || t.owed > 0)):
			*t = tstate{exists: t.exists, closed: true}
			next = append(next, s)
		}
	case opAfterFunc:
		switch {
		case t.exists:
		case out.err == errStopped:
			if t.closed {
				next = append(next, s) // the timer never exists
			}
		case t.closed:
		case out.err == errTooMany:
			if refusable {
				next = append(next, s)
			}
		case out.err == errNone && admissible:
			t.exists = true
			if in.d > 0 {
				t.pending, t.lb = true, in.at+int64(in.d)
			} else {
				t.owed++
			}
			next = append(next, s)
		}
	case opBind:
		if !t.exists && out.err == errNone {
			t.exists = true
			next = append(next, s)
		}
	case opStop:
		switch {
		case !t.exists:
		case t.closed:
			if !out.was {
				next = append(next, s)
			}
		case out.was == t.pending:
			t.pending = false
			next = append(next, s)
		}
	case opReset, opTryReset:
		try := in.kind == opTryReset
		switch {
		case !t.exists:
		case t.closed:
			if !out.was && (!try || out.err == errStopped) {
				next = append(next, s)
			}
		default:
			// Refused by the bound: not armed. Reset does not say so.
			if refusable && !out.was && (!try || out.err == errTooMany) {
				next = append(next, s)
			}
			if !admissible || out.was != t.pending || try && out.err != errNone {
				break
			}
			if in.d <= 0 {
				t.pending = false
				t.owed++ // handed to the executor at once
			} else {
				t.pending, t.lb = true, in.at+int64(in.d)
			}
			next = append(next, s)
		}
	case opPostpone:
		switch {
		case !t.exists:
		case t.closed:
			if !out.was {
				next = append(next, s)
			}
		case t.pending:
			// Moved only later: the deadline is at or after both.
			if out.was {
				t.lb = max(t.lb, in.at+int64(in.d))
				next = append(next, s)
			}
		default: // as Reset
			if refusable && !out.was {
				next = append(next, s)
			}
			if !admissible || out.was {
				break
			}
			if in.d <= 0 {
				t.owed++ // handed to the executor at once
			} else {
				t.pending, t.lb = true, in.at+int64(in.d)
			}
			next = append(next, s)
		}
	case opRun:
		if !t.exists || t.closed {
			break
		}
		if t.owed > 0 { // a run handed off by an op
			c := s
			c.ts[in.timer].owed--
			next = append(next, c)
		}
		if t.pending && out.start >= t.lb { // handed off by the driver, never early
			t.pending = false
			next = append(next, s)
		}
	}
	return next
}

func describe(in input, out output) string {
	switch in.kind {
	case opSTStop:
		if out.was {
			return fmt.Sprintf("SystemTimer.Stop() returned t%d", in.timer)
		}
		return fmt.Sprintf("SystemTimer.Stop() did not return t%d", in.timer)
	case opRun:
		return fmt.Sprintf("t%d run started at %v", in.timer, ns(out.start))
	case opBind:
		return fmt.Sprintf("t%d = Bind()", in.timer)
	case opStop:
		return fmt.Sprintf("t%d.Stop() = %v", in.timer, out.was)
	case opReset:
		return fmt.Sprintf("t%d.Reset(%v) = %v (deadline >= %v)", in.timer, in.d, out.was, ns(in.at+int64(in.d)))
	case opTryReset:
		return fmt.Sprintf("t%d.TryReset(%v) = %v, %s (deadline >= %v)", in.timer, in.d, out.was, errNames[out.err], ns(in.at+int64(in.d)))
	case opPostpone:
		return fmt.Sprintf("t%d.Postpone(%v) = %v (deadline >= %v, or the later one it had)", in.timer, in.d, out.was, ns(in.at+int64(in.d)))
	case opAfterFunc:
		return fmt.Sprintf("t%d = AfterFunc(%v): %s (deadline >= %v)", in.timer, in.d, errNames[out.err], ns(in.at+int64(in.d)))
	}
	return "?"
}

func describeState(s mstate) string {
	var b strings.Builder
	for i, t := range s.ts {
		if !t.exists {
			continue
		}
		fmt.Fprintf(&b, "t%d{", i)
		if t.pending {
			fmt.Fprintf(&b, "pending, deadline >= %v", ns(t.lb))
		} else {
			b.WriteString("not pending")
		}
		if t.owed > 0 {
			fmt.Fprintf(&b, ", %d runs owed", t.owed)
		}
		if t.hidden {
			b.WriteString(", a run that never starts")
		}
		if t.closed {
			b.WriteString(", closed")
		}
		b.WriteString("} ")
	}
	return b.String()
}

// ns formats a time of the history, ns since its start.
func ns(v int64) string {
	if v > int64(time.Minute) {
		return "never"
	}
	return time.Duration(v).String()
}
