// Package scheduler runs jobs after a delay or at a time, by id.
// Scheduling an id again replaces its job, a job can be canceled or moved,
// and every run has a deadline. A janitor trims the history of runs.
package scheduler

import (
	"context"
	"slices"
	"sync"
	"time"
)

// A Job is the work scheduled under an id. Its context is done when the
// run's deadline passes.
type Job func(ctx context.Context) error

// A Result is what one run of a job came to.
type Result struct {
	ID  string
	Err error
}

// Scheduler runs jobs. Its methods are safe for concurrent use.
type Scheduler struct {
	runFor time.Duration
	keep   int

	mu      sync.Mutex             // guards pending and history
	pending map[string]*time.Timer // the armed jobs, by id
	history []Result
	ran     chan Result // every result, for those who wait for one; never blocks a run

	janitor *time.Ticker
	done    chan struct{}
	wg      sync.WaitGroup
}

// New returns a Scheduler whose runs have a deadline of runFor and that
// keeps the last keep results, trimming them every trimEvery.
func New(runFor time.Duration, keep int, trimEvery time.Duration) *Scheduler {
	s := &Scheduler{
		runFor:  runFor,
		keep:    keep,
		pending: make(map[string]*time.Timer),
		ran:     make(chan Result, 64),
		janitor: time.NewTicker(trimEvery),
		done:    make(chan struct{}),
	}
	s.wg.Add(1)
	go s.trim()
	return s
}

// After runs job under id once d has passed, in place of the job the id
// had.
func (s *Scheduler) After(id string, d time.Duration, job Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.pending[id]; ok {
		t.Stop()
	}
	s.pending[id] = s.arm(id, d, job)
}

// At runs job under id at the time at.
func (s *Scheduler) At(id string, at time.Time, job Job) {
	s.After(id, time.Until(at), job)
}

// arm returns the timer that runs job under id after d. After holds mu
// while it arms: the function reads t only once it holds mu too.
func (s *Scheduler) arm(id string, d time.Duration, job Job) *time.Timer {
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		s.mu.Lock()
		if s.pending[id] != t {
			s.mu.Unlock()
			return // replaced or canceled after the timer fired
		}
		delete(s.pending, id)
		s.mu.Unlock()
		s.run(id, job)
	})
	return t
}

func (s *Scheduler) run(id string, job Job) {
	ctx, cancel := context.WithTimeout(context.Background(), s.runFor)
	defer cancel()
	r := Result{ID: id, Err: job(ctx)}

	s.mu.Lock()
	s.history = append(s.history, r)
	s.mu.Unlock()
	select {
	case s.ran <- r:
	default:
	}
}

// Ran delivers the results of runs, as they come, while there is room.
func (s *Scheduler) Ran() <-chan Result { return s.ran }

// Cancel cancels the job of id, and reports whether it was pending.
func (s *Scheduler) Cancel(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.pending[id]
	if ok {
		t.Stop()
		delete(s.pending, id)
	}
	return ok
}

// Move runs the pending job of id after d instead, and reports whether
// there was one.
func (s *Scheduler) Move(id string, d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.pending[id]
	if ok {
		t.Reset(d)
	}
	return ok
}

// Pending returns the ids of the jobs not run yet, sorted.
func (s *Scheduler) Pending() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.pending))
	for id := range s.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// History returns the results kept.
func (s *Scheduler) History() []Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.history)
}

// Watchdog calls onStuck if it is not stopped within d. Its callers hold
// the timer it returns.
func (s *Scheduler) Watchdog(d time.Duration, onStuck func()) *time.Timer {
	return time.AfterFunc(d, onStuck)
}

func (s *Scheduler) trim() {
	defer s.wg.Done()
	for {
		select {
		case <-s.janitor.C:
			s.mu.Lock()
			if n := len(s.history); n > s.keep {
				s.history = slices.Delete(s.history, 0, n-s.keep)
			}
			s.mu.Unlock()
		case <-s.done:
			return
		}
	}
}

// Stop cancels every pending job and returns their ids, sorted.
func (s *Scheduler) Stop() []string {
	close(s.done)
	s.janitor.Stop()
	s.wg.Wait()
	timers := s.takeAll()
	ids := make([]string, 0, len(timers))
	for id, t := range timers {
		t.Stop()
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// takeAll empties pending and returns what it held.
func (s *Scheduler) takeAll() map[string]*time.Timer {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.pending
	s.pending = make(map[string]*time.Timer)
	return all
}
