// Package scheduler runs jobs at a delay, keyed by id: a later schedule
// of an id replaces the earlier one, and a job can be canceled.
package scheduler

import (
	"sync"
	"time"
)

// timerSet holds the pending jobs' timers by id.
type timerSet map[string]*time.Timer

type scheduler struct {
	mu     sync.Mutex
	jobs   timerSet
	reaped chan *time.Timer
}

func newScheduler() *scheduler {
	return &scheduler{jobs: make(timerSet), reaped: make(chan *time.Timer, 16)}
}

func (s *scheduler) schedule(id string, d time.Duration, job func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.jobs[id]; ok {
		t.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() { // want `time.AfterFunc becomes timingwheel.AfterFunc: type timerSet, scheduler.jobs, scheduler.reaped, result t of scheduler.timerFor, and 4 more hold a \*timingwheel.Timer`
		job()
		s.mu.Lock()
		if s.jobs[id] == t {
			delete(s.jobs, id)
		}
		s.mu.Unlock()
		s.reaped <- t
	})
	s.jobs[id] = t
}

// timerFor returns the timer of a pending job.
func (s *scheduler) timerFor(id string) (t *time.Timer, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok = s.jobs[id]
	return
}

func (s *scheduler) cancel(id string) bool {
	t, ok := s.timerFor(id)
	if !ok {
		return false
	}
	stopAll(t)
	s.mu.Lock()
	delete(s.jobs, id)
	s.mu.Unlock()
	return true
}

// cancelAll cancels every pending job and returns their timers.
func (s *scheduler) cancelAll() []*time.Timer {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ts []*time.Timer
	for id, t := range s.jobs {
		ts = append(ts, t)
		delete(s.jobs, id)
	}
	stopAll(ts...)
	return ts
}

func stopAll(ts ...*time.Timer) {
	for _, t := range ts {
		t.Stop()
	}
}
