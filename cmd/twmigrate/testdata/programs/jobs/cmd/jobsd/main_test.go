package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"example.com/jobs/scheduler"
)

func TestParseLine(t *testing.T) {
	id, d, err := parseLine("backup 1m30s")
	if err != nil || id != "backup" || d != 90*time.Second {
		t.Fatalf("got %q %v %v", id, d, err)
	}
	if _, _, err := parseLine("backup"); !errors.Is(err, errSyntax) {
		t.Fatalf("one field: %v", err)
	}
	if _, _, err := parseLine("backup soon"); err == nil {
		t.Fatal("a bad delay: no error")
	}
}

func TestDeliverRetries(t *testing.T) {
	calls := 0
	rep := &reporter{
		send: func(scheduler.Result) error {
			calls++
			if calls < 3 {
				return errors.New("collector down")
			}
			return nil
		},
		attempts: 3,
		backoff:  time.Millisecond,
	}
	if err := rep.deliver(scheduler.Result{ID: "a"}); err != nil || calls != 3 {
		t.Fatalf("deliver: %v after %d calls", err, calls)
	}
	calls = -10
	if err := rep.deliver(scheduler.Result{ID: "b"}); err == nil {
		t.Fatal("deliver to a collector that stays down: no error")
	}
}

func TestCollectUntilQuiet(t *testing.T) {
	results := make(chan scheduler.Result, 3)
	for _, id := range []string{"a", "b", "c"} {
		results <- scheduler.Result{ID: id}
	}
	var got []string
	collect(results, 20*time.Millisecond, func(r scheduler.Result) { got = append(got, r.ID) })
	if len(got) != 3 {
		t.Fatalf("collected %v", got)
	}
}

func TestSchedulerEndToEnd(t *testing.T) {
	s := scheduler.New(time.Second, 10, time.Hour)
	defer s.Stop()
	w := s.Watchdog(time.Hour, func() { t.Error("watchdog fired") })
	defer w.Stop()
	s.After("x", time.Millisecond, func(context.Context) error { return nil })
	select {
	case r := <-s.Ran():
		if r.ID != "x" {
			t.Fatalf("got %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no result")
	}
}
