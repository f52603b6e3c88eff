package conctest

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// cop builds an operation of a hand-written channel timer history; times
// in µs. For a receive, out.v is in µs too, and d is how long it waited
// (copWait).
func cop(kind chanOp, d time.Duration, call, ret int64, out coutput) porcupine.Operation {
	call, ret = call*1000, ret*1000
	in := cinput{kind: kind, d: d, call: call}
	if kind == copWait {
		in.d, in.wait = 0, d
	}
	out.ret, out.v = ret, out.v*1000
	return porcupine.Operation{Input: in, Output: out, Call: call, Return: ret}
}

// stStop is SystemTimer.Stop over [call, ret] µs.
func stStop(call, ret int64) porcupine.Operation { return cop(copSTStop, 0, call, ret, coutput{}) }

// ops joins operations and lists of them into a history.
func ops(parts ...any) []porcupine.Operation {
	var h []porcupine.Operation
	for _, p := range parts {
		switch p := p.(type) {
		case porcupine.Operation:
			h = append(h, p)
		case []porcupine.Operation:
			h = append(h, p...)
		}
	}
	return h
}

// TestChanModel checks the ChanTimer's model on hand-written histories:
// those that the time package's semantics allow pass, and each kind of
// wrong result fails, so that the randomized tests can catch it.
func TestChanModel(t *testing.T) {
	us, ms := time.Microsecond, time.Millisecond
	value := func(v int64) coutput { return coutput{got: true, v: v} }
	none, was, wasNot := coutput{}, coutput{was: true}, coutput{}
	late := maxLate.Microseconds()
	cases := []struct {
		name  string
		legal bool
		ops   []porcupine.Operation
	}{
		{"a value at its deadline", true, ops(
			cop(copNew, ms, 0, 1, none),
			cop(copRecv, 0, 1001, 1002, value(1000)),
			cop(copStop, 0, 1100, 1101, wasNot),
		)},
		{"a value received before its due time", false, ops(
			cop(copNew, ms, 0, 1, none),
			cop(copRecv, 0, 500, 501, value(1000)),
		)},
		{"the deadline anywhere in the arming call plus d", true, ops(
			cop(copNew, time.Hour, 0, 1, none),
			cop(copReset, 100*us, 10, 60, was),
			cop(copRecv, 0, 170, 171, value(150)),
		)},
		{"a value that is not the deadline", false, ops(
			cop(copNew, ms, 0, 1, none),
			cop(copRecv, 0, 2000, 2001, value(1500)),
		)},
		{"two values for one arming", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 200, 201, value(100)),
			cop(copWait, ms, 300, 301, value(100)),
		)},
		{"late: none past the deadline, then the value", true, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 150, 151, none),
			cop(copWait, 300*us, 160, 300, value(100)),
		)},
		{"a lost value: none maxLate past the deadline", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copWait, maxLate, 200, 200+late, none),
		)},
		{"none just within maxLate of the deadline", true, ops(
			cop(copNew, 100*us, 0, 1, none), // due by 101µs
			cop(copWait, maxLate-100*us, 150, 150+late, none),
		)},
		{"none just past maxLate after the deadline", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copWait, maxLate, 150, 150+late, none),
		)},
		{"none maxLate past the deadline of a stopped timer", true, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copStop, 0, 50, 51, was),
			cop(copWait, maxLate, 200, 200+late, none),
		)},
		{"Stop and the receive race for the value: one gets it", true, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copStop, 0, 90, 200, wasNot),
			cop(copRecv, 0, 95, 210, value(100)),
		)},
		{"Stop and the receive race for the value: both get it", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copStop, 0, 90, 200, was),
			cop(copRecv, 0, 95, 210, value(100)),
		)},
		{"a stale value after Stop returned", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copStop, 0, 200, 201, was),
			cop(copRecv, 0, 300, 301, value(100)),
		)},
		{"a stale value after Reset returned", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copReset, time.Hour, 200, 201, was),
			cop(copRecv, 0, 300, 301, value(100)),
		)},
		{"the old value after a Reset to a nearer deadline", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copReset, 50*us, 200, 201, was),
			cop(copRecv, 0, 300, 301, value(100)),
		)},
		{"Reset(0): the value at once, its call's time", true, ops(
			cop(copNew, time.Hour, 0, 1, none),
			cop(copTryReset, 0, 10, 11, was),
			cop(copRecv, 0, 12, 13, value(10)),
			cop(copReset, 0, 20, 21, wasNot),
			cop(copStop, 0, 30, 31, was),
			cop(copRecv, 0, 40, 41, none),
		)},
		{"Stop reports true after the value was received", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 200, 201, value(100)),
			cop(copStop, 0, 300, 301, was),
		)},
		{"Stop reports false while nobody received the value", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copStop, 0, 200, 201, wasNot),
		)},
		{"Reset reports false while its value is in C", false, ops(
			cop(copNew, 0, 0, 1, none),
			cop(copReset, time.Hour, 10, 11, wasNot),
		)},
		// A channel timer outlives its SystemTimer: SystemTimer.Stop changes
		// nothing.
		{"SystemTimer.Stop: a value delivered before it is received after", true, ops(
			cop(copNew, 100*us, 0, 1, none),
			stStop(200, 300),
			cop(copRecv, 0, 400, 401, value(100)),
			cop(copStop, 0, 500, 501, wasNot),
		)},
		{"SystemTimer.Stop: the value comes after it", true, ops(
			cop(copNew, ms, 0, 1, none),
			stStop(100, 200),
			cop(copRecv, 0, 2000, 2001, value(1000)),
		)},
		{"SystemTimer.Stop: the value is lost", false, ops(
			cop(copNew, ms, 0, 1, none),
			stStop(100, 200),
			cop(copWait, maxLate+ms, 300, 1300+late, none),
		)},
		{"SystemTimer.Stop: Stop reports the arming", true, ops(
			cop(copNew, ms, 0, 1, none),
			stStop(10, 20),
			cop(copStop, 0, 30, 31, was),
			cop(copStop, 0, 40, 41, wasNot),
		)},
		{"SystemTimer.Stop: Stop forgets the arming", false, ops(
			cop(copNew, ms, 0, 1, none),
			stStop(10, 20),
			cop(copStop, 0, 30, 31, wasNot),
		)},
		{"SystemTimer.Stop: TryReset after it arms", true, ops(
			cop(copNew, time.Hour, 0, 1, none),
			stStop(10, 20),
			cop(copTryReset, 100*us, 30, 31, was),
			cop(copWait, ms, 40, 140, value(130)),
			cop(copTryReset, 0, 150, 151, wasNot),
			cop(copRecv, 0, 160, 161, value(150)),
		)},
		{"SystemTimer.Stop, then NewTimer", true, ops(
			stStop(0, 10),
			cop(copNew, 100*us, 20, 21, none),
			cop(copWait, ms, 30, 130, value(120)),
		)},
		{"SystemTimer.Stop: TryReset after it fails", false, ops(
			cop(copNew, time.Hour, 0, 1, none),
			stStop(10, 20),
			cop(copTryReset, ms, 30, 31, coutput{was: true, err: errStopped}),
		)},
	}
	for _, c := range cases {
		if got := porcupine.CheckOperations(newChanModel(false), c.ops); got != c.legal {
			t.Errorf("%s: linearizable = %v, want %v:\n%s", c.name, got, c.legal, formatChan(c.ops, false))
		}
	}
}

// TestTickerModel checks the Ticker's model as TestChanModel does the
// ChanTimer's.
func TestTickerModel(t *testing.T) {
	us, ms := time.Microsecond, time.Millisecond
	value := func(v int64) coutput { return coutput{got: true, v: v} }
	none := coutput{}
	late := maxLate.Microseconds()
	cases := []struct {
		name  string
		legal bool
		ops   []porcupine.Operation
	}{
		{"ticks on the schedule; missed ones skipped", true, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 150, 151, value(100)),
			cop(copRecv, 0, 160, 161, none),
			cop(copWait, ms, 350, 351, value(300)),
			cop(copRecv, 0, 5000, 5001, value(400)), // a slow receiver gets an old tick
		)},
		{"the schedule's origin anywhere in the arming call plus d", true, ops(
			cop(copNew, 100*us, 0, 40, none),
			cop(copRecv, 0, 150, 151, value(130)),
			cop(copRecv, 0, 250, 251, value(230)),
		)},
		{"a tick before its time", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 50, 51, value(100)),
		)},
		{"the first tick before a period has passed", false, ops(
			cop(copNew, ms, 0, 1, none),
			cop(copRecv, 0, 600, 601, value(500)),
		)},
		{"a tick off the schedule", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 150, 151, value(100)),
			cop(copRecv, 0, 300, 301, value(250)),
		)},
		{"a tick off the schedule that an uncertain origin cannot explain", false, ops(
			cop(copNew, 100*us, 0, 40, none),
			cop(copRecv, 0, 150, 151, value(130)),
			cop(copRecv, 0, 250, 251, value(220)),
		)},
		{"the same tick twice", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 150, 151, value(100)),
			cop(copRecv, 0, 160, 161, value(100)),
		)},
		{"ticks out of order", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 350, 351, value(300)),
			cop(copRecv, 0, 360, 361, value(200)),
		)},
		{"a tick after Stop returned", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copStop, 0, 150, 151, none),
			cop(copRecv, 0, 160, 161, value(100)),
		)},
		{"Reset: the new schedule", true, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 150, 151, value(100)),
			cop(copReset, 70*us, 160, 161, none),
			cop(copRecv, 0, 240, 241, value(230)),
			cop(copRecv, 0, 310, 311, value(300)),
		)},
		{"a tick of the old schedule after Reset returned", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copReset, ms, 150, 151, none),
			cop(copRecv, 0, 200, 201, value(100)),
		)},
		{"the old period after Reset", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copTryReset, 70*us, 160, 161, none),
			cop(copRecv, 0, 240, 241, value(230)),
			cop(copRecv, 0, 340, 341, value(330)),
		)},
		{"late: none past a tick, within maxLate", true, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 150, 151, value(100)),
			cop(copWait, ms, 160, 1200, none),
		)},
		{"the ticks stop: none maxLate past the next", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 150, 151, value(100)),
			cop(copWait, maxLate+ms, 200, 1200+late, none),
		)},
		{"ticks go on after SystemTimer.Stop", true, ops(
			cop(copNew, 100*us, 0, 1, none),
			stStop(110, 120),
			cop(copRecv, 0, 150, 151, value(100)),
			cop(copReset, 70*us, 160, 161, none),
			cop(copWait, ms, 240, 241, value(230)),
		)},
		{"ticks stop after SystemTimer.Stop", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 150, 151, value(100)),
			stStop(160, 170),
			cop(copWait, maxLate+ms, 200, 1200+late, none),
		)},
		{"no first tick, just within maxLate of it", true, ops(
			cop(copNew, 100*us, 0, 1, none), // due by 101µs
			cop(copWait, maxLate, 50, 50+late, none),
		)},
		{"no first tick, just past maxLate after it", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copWait, maxLate, 150, 150+late, none),
		)},
		{"none just within maxLate of the next tick", true, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 150, 151, value(100)), // the next due by 251µs
			cop(copWait, maxLate, 200, 200+late, none),
		)},
		{"none just past maxLate after the next tick", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 150, 151, value(100)),
			cop(copWait, maxLate, 300, 300+late, none),
		)},
		{"TryReset fails", false, ops(
			cop(copNew, 100*us, 0, 1, none),
			stStop(10, 20),
			cop(copTryReset, 100*us, 30, 31, coutput{err: errStopped}),
		)},
		{"none maxLate past the next tick of a stopped Ticker", true, ops(
			cop(copNew, 100*us, 0, 1, none),
			cop(copRecv, 0, 150, 151, value(100)),
			cop(copStop, 0, 160, 161, none),
			cop(copWait, maxLate+ms, 200, 1200+late, none),
		)},
	}
	for _, c := range cases {
		if got := porcupine.CheckOperations(newChanModel(true), c.ops); got != c.legal {
			t.Errorf("%s: linearizable = %v, want %v:\n%s", c.name, got, c.legal, formatChan(c.ops, true))
		}
	}
}
