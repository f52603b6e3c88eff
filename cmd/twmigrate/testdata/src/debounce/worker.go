// Package debounce collects changes and flushes them once they stop
// coming for a while: a timer in a worker's loop, reset on every change.
package debounce

import "time"

type worker struct {
	quiet   time.Duration
	changes chan string
	flush   func([]string)
	timer   *time.Timer
	pending []string
}

func newWorker(quiet time.Duration, flush func([]string)) *worker {
	return &worker{
		quiet:   quiet,
		changes: make(chan string),
		flush:   flush,
		timer:   stoppedTimer(),
	}
}

// stoppedTimer returns a timer that is not armed and whose channel is
// empty, so that the first Reset needs no drain.
func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour) // want `time.NewTimer becomes timingwheel.NewTimer: worker.timer, the result of stoppedTimer, parameter t of stopAndDrain, t hold a \*timingwheel.ChanTimer`
	if !t.Stop() {
		<-t.C
	}
	return t
}

func (w *worker) run(done <-chan struct{}) {
	defer stopAndDrain(w.timer)
	for {
		select {
		case c := <-w.changes:
			w.pending = append(w.pending, c)
			stopAndDrain(w.timer)
			w.timer.Reset(w.quiet)
		case <-w.timer.C:
			w.flush(w.pending)
			w.pending = nil
		case <-done:
			return
		}
	}
}

func stopAndDrain(t *time.Timer) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
}
