package conctest

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// op builds an operation of a hand-written history; times in µs.
func op(kind opKind, timer int, d time.Duration, call, ret int64, out output) porcupine.Operation {
	call, ret = call*1000, ret*1000
	if kind == opRun {
		out.start = ret
	}
	return porcupine.Operation{Input: input{kind: kind, timer: timer, d: d, at: call}, Output: out, Call: call, Return: ret}
}

// TestModel checks the model on hand-written histories: those the docs
// allow pass, and those they forbid fail, so that the model can catch what
// the randomized tests look for.
func TestModel(t *testing.T) {
	ms := time.Millisecond
	returned, kept := output{was: true}, output{}
	cases := []struct {
		name       string
		maxPending int
		legal      bool
		ops        []porcupine.Operation
	}{
		{"a run at its deadline", 0, true, []porcupine.Operation{
			op(opAfterFunc, 0, ms, 0, 1, output{}),
			op(opRun, 0, 0, 0, 1001, output{}),
			op(opStop, 0, 0, 1100, 1101, output{was: false}),
			op(opSTStop, 0, 0, 1200, 1201, kept),
		}},
		{"Postpone to an earlier deadline keeps the later one", 0, false, []porcupine.Operation{
			op(opAfterFunc, 0, ms, 0, 1, output{}),
			op(opPostpone, 0, 100*time.Microsecond, 10, 11, output{was: true}),
			op(opRun, 0, 0, 0, 500, output{}),
		}},
		{"Postpone to a later deadline moves it", 0, true, []porcupine.Operation{
			op(opAfterFunc, 0, 100*time.Microsecond, 0, 1, output{}),
			op(opPostpone, 0, ms, 10, 11, output{was: true}),
			op(opRun, 0, 0, 0, 1100, output{}),
			op(opSTStop, 0, 0, 1200, 1201, kept),
		}},
		{"a run of a Postpone before its later deadline", 0, false, []porcupine.Operation{
			op(opAfterFunc, 0, 100*time.Microsecond, 0, 1, output{}),
			op(opPostpone, 0, ms, 10, 11, output{was: true}),
			op(opRun, 0, 0, 0, 500, output{}),
		}},
		{"a run before its deadline", 0, false, []porcupine.Operation{
			op(opAfterFunc, 0, ms, 0, 1, output{}),
			op(opRun, 0, 0, 0, 999, output{}),
			op(opSTStop, 0, 0, 1200, 1201, kept),
		}},
		{"Stop reports true after the run started", 0, false, []porcupine.Operation{
			op(opAfterFunc, 0, 100*time.Microsecond, 0, 1, output{}),
			op(opRun, 0, 0, 0, 200, output{}),
			op(opStop, 0, 0, 300, 301, output{was: true}),
			op(opSTStop, 0, 0, 400, 401, kept),
		}},
		{"a hand-off whose run never starts, returned by SystemTimer.Stop", 0, true, []porcupine.Operation{
			op(opAfterFunc, 0, 100*time.Microsecond, 0, 1, output{}),
			op(opStop, 0, 0, 300, 301, output{was: false}),
			op(opSTStop, 0, 0, 400, 401, returned),
		}},
		{"a hand-off whose run never starts, not returned", 0, false, []porcupine.Operation{
			op(opAfterFunc, 0, 100*time.Microsecond, 0, 1, output{}),
			op(opStop, 0, 0, 300, 301, output{was: false}),
			op(opSTStop, 0, 0, 400, 401, kept),
		}},
		{"Reset(0): its run never starts, not returned", 0, false, []porcupine.Operation{
			op(opBind, 0, 0, 0, 1, output{}),
			op(opReset, 0, 0, 10, 11, output{was: false}),
			op(opSTStop, 0, 0, 400, 401, kept),
		}},
		{"Reset(0) of a pending timer: one run", 0, true, []porcupine.Operation{
			op(opBind, 0, 0, 0, 1, output{}),
			op(opTryReset, 0, time.Hour, 10, 11, output{}),
			op(opReset, 0, 0, 20, 21, output{was: true}),
			op(opRun, 0, 0, 0, 30, output{}),
			op(opStop, 0, 0, 40, 41, output{was: false}),
			op(opSTStop, 0, 0, 400, 401, kept),
		}},
		{"two runs of one arming", 0, false, []porcupine.Operation{
			op(opBind, 0, 0, 0, 1, output{}),
			op(opReset, 0, 0, 20, 21, output{was: false}),
			op(opRun, 0, 0, 0, 30, output{}),
			op(opRun, 0, 0, 0, 31, output{}),
			op(opSTStop, 0, 0, 400, 401, kept),
		}},
		// A run that starts after SystemTimer.Stop returned may have been
		// handed off before: record checks the start itself.
		{"a run handed off before SystemTimer.Stop", 0, true, []porcupine.Operation{
			op(opAfterFunc, 0, 0, 0, 1, output{}),
			op(opSTStop, 0, 0, 10, 11, kept),
			op(opRun, 0, 0, 0, 20, output{}),
		}},
		{"a run handed off after SystemTimer.Stop", 0, false, []porcupine.Operation{
			op(opBind, 0, 0, 0, 1, output{}),
			op(opSTStop, 0, 0, 10, 11, kept),
			op(opReset, 0, 0, 12, 13, output{}),
			op(opRun, 0, 0, 0, 20, output{}),
		}},
		{"AfterFunc fails with ErrStopped before SystemTimer.Stop", 0, false, []porcupine.Operation{
			op(opAfterFunc, 0, ms, 0, 1, output{err: errStopped}),
			op(opSTStop, 0, 0, 10, 11, kept),
		}},
		{"AfterFunc fails with ErrStopped during SystemTimer.Stop", 0, true, []porcupine.Operation{
			op(opAfterFunc, 0, ms, 5, 6, output{err: errStopped}),
			op(opSTStop, 0, 0, 0, 11, kept),
		}},
		{"TryReset arms a timer after SystemTimer.Stop returned", 0, false, []porcupine.Operation{
			op(opBind, 0, 0, 0, 1, output{}),
			op(opSTStop, 0, 0, 10, 11, kept),
			op(opTryReset, 0, ms, 20, 21, output{}),
		}},
		{"a refusal with no timer pending", 1, false, []porcupine.Operation{
			op(opBind, 0, 0, 0, 1, output{}),
			op(opBind, 1, 0, 0, 1, output{}),
			op(opTryReset, 0, time.Hour, 10, 11, output{err: errTooMany}),
			op(opSTStop, 0, 0, 400, 401, kept),
			op(opSTStop, 1, 0, 400, 401, kept),
		}},
		{"a refusal while another timer is pending", 1, true, []porcupine.Operation{
			op(opBind, 0, 0, 0, 1, output{}),
			op(opBind, 1, 0, 0, 1, output{}),
			op(opTryReset, 1, time.Hour, 5, 6, output{}),
			op(opTryReset, 0, time.Hour, 10, 11, output{err: errTooMany}),
			op(opSTStop, 0, 0, 400, 401, kept),
			op(opSTStop, 1, 0, 400, 401, returned),
		}},
		{"a pending timer refused", 1, false, []porcupine.Operation{
			op(opBind, 0, 0, 0, 1, output{}),
			op(opTryReset, 0, time.Hour, 5, 6, output{}),
			op(opTryReset, 0, time.Hour, 10, 11, output{err: errTooMany}),
			op(opSTStop, 0, 0, 400, 401, returned),
		}},
	}
	for _, c := range cases {
		got := porcupine.CheckOperations(newModel(c.maxPending), c.ops)
		if got != c.legal {
			t.Errorf("%s: linearizable = %v, want %v:\n%s", c.name, got, c.legal, format(c.ops))
		}
	}
}
