package scheduler

import "time"

// A run is a job's execution with a deadline: a timer per run, kept by
// value in a slice of runs, and told apart by a channel timer.
type run struct {
	id       string
	deadline *time.Timer
}

func startRuns(ids []string, limit time.Duration) []run {
	var runs []run
	for _, id := range ids {
		runs = append(runs, run{id, time.NewTimer(limit)}) // want `time.NewTimer becomes timingwheel.NewTimer: run.deadline holds a \*timingwheel.ChanTimer`
	}
	return runs
}

func (r run) expired() bool {
	select {
	case <-r.deadline.C:
		return true
	default:
		return false
	}
}
