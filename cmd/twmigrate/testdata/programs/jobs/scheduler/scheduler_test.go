package scheduler

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func newTest(t *testing.T, runFor time.Duration) *Scheduler {
	s := New(runFor, 100, time.Hour)
	t.Cleanup(func() { s.Stop() })
	return s
}

// next waits for the next result.
func next(t *testing.T, s *Scheduler) Result {
	t.Helper()
	select {
	case r := <-s.Ran():
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no job ran")
		return Result{}
	}
}

func ok(context.Context) error { return nil }

func TestRunsAfterDelay(t *testing.T) {
	s := newTest(t, time.Second)
	s.After("a", time.Millisecond, ok)
	if r := next(t, s); r.ID != "a" || r.Err != nil {
		t.Fatalf("got %+v", r)
	}
	if p := s.Pending(); len(p) != 0 {
		t.Fatalf("pending after the run: %v", p)
	}
}

func TestScheduleAgainReplaces(t *testing.T) {
	s := newTest(t, time.Second)
	first := errors.New("first")
	s.After("a", time.Hour, func(context.Context) error { return first })
	s.After("a", time.Millisecond, ok)
	if r := next(t, s); r.ID != "a" || r.Err != nil {
		t.Fatalf("got %+v, want the second job's result", r)
	}
}

func TestCancel(t *testing.T) {
	s := newTest(t, time.Second)
	s.After("a", time.Hour, ok)
	if !s.Cancel("a") {
		t.Fatal("Cancel of a pending job: false")
	}
	if s.Cancel("a") {
		t.Fatal("second Cancel: true")
	}
	if p := s.Pending(); len(p) != 0 {
		t.Fatalf("pending after Cancel: %v", p)
	}
}

func TestMove(t *testing.T) {
	s := newTest(t, time.Second)
	s.After("a", time.Hour, ok)
	if !s.Move("a", time.Millisecond) {
		t.Fatal("Move of a pending job: false")
	}
	if r := next(t, s); r.ID != "a" {
		t.Fatalf("got %+v", r)
	}
	if s.Move("b", time.Millisecond) {
		t.Fatal("Move of an unknown job: true")
	}
}

func TestRunHasDeadline(t *testing.T) {
	s := newTest(t, 10*time.Millisecond)
	s.At("slow", time.Now(), func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if r := next(t, s); !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("got %+v, want a deadline error", r)
	}
}

func TestStopReturnsPending(t *testing.T) {
	s := New(time.Second, 100, time.Hour)
	s.After("b", time.Hour, ok)
	s.After("a", time.Hour, ok)
	if got := s.Stop(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Stop: %v", got)
	}
}

func TestWatchdog(t *testing.T) {
	s := newTest(t, time.Second)
	stuck := make(chan struct{})
	s.Watchdog(time.Millisecond, func() { close(stuck) })
	select {
	case <-stuck:
	case <-time.After(10 * time.Second):
		t.Fatal("the watchdog did not fire")
	}
	calm := s.Watchdog(time.Hour, func() { t.Error("fired") })
	if !calm.Stop() {
		t.Fatal("Stop of a pending watchdog: false")
	}
}

func TestJanitorTrimsHistory(t *testing.T) {
	s := New(time.Second, 1, time.Millisecond)
	t.Cleanup(func() { s.Stop() })
	for _, id := range []string{"a", "b", "c"} {
		s.After(id, 0, ok)
		next(t, s)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(s.History()) > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("history not trimmed: %v", s.History())
		}
		<-time.After(time.Millisecond) // the janitor ticks every millisecond
	}
}
