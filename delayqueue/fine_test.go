package delayqueue

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-timingwheel/timingwheel/internal/timerfd"
)

// stoppedTimers is the real clock with timers that never fire: those of a
// mock that nobody advances. Only the timerfd can wake Poll.
type stoppedTimers struct {
	clock.Clock
	stopped *clock.Mock
}

func (c stoppedTimers) Timer(d time.Duration) *clock.Timer { return c.stopped.Timer(d) }

// TestPollWakesByTheFineAlarm: with the real clock, Poll sleeps on the
// timerfd beside the runtime's timer, and either wakes it. The runtime's
// timers here never fire.
func TestPollWakesByTheFineAlarm(t *testing.T) {
	if w := timerfd.New(); w == nil {
		t.Skip("no timerfd here")
	} else {
		w.Close()
	}
	q := New[int](stoppedTimers{clock.New(), clock.NewMock()})
	q.realClk, q.precise = true, true // the real clock, but for its timers
	defer q.Close()

	for i := range 20 {
		at := time.Now().Add(time.Duration(i%4+1) * 300 * time.Microsecond)
		q.Offer(i, at)
		got := make(chan time.Time, 1)
		go func() {
			_, _, ok := q.Poll()
			if ok {
				got <- time.Now()
			}
		}()
		select {
		case now := <-got:
			if now.Before(at) {
				t.Fatalf("item %d due at %v came out at %v", i, at, now)
			}
		case <-time.After(10 * time.Second): // liveness, not promptness
			t.Fatal("Poll slept through the timerfd")
		}
	}
}

// TestNoTimerfdInABubble: in a synctest bubble the queue keeps to the
// runtime's timers, which the bubble fakes; a timerfd's goroutine parked in
// the poller would stop the bubble's time. Outside, it uses one.
func TestNoTimerfdInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New[int](nil)
		defer q.Close()
		if q.precise {
			t.Fatal("a queue made in a bubble would use a timerfd")
		}
		q.Offer(1, time.Now().Add(time.Hour))
		if _, at, _ := q.Poll(); !time.Now().Equal(at) {
			t.Fatalf("Poll returned at %v, want %v", time.Now(), at)
		}
	})
	if q := New[int](nil); !q.precise {
		t.Fatal("a queue on the real clock outside a bubble would not use a timerfd")
	}
	if q := New[int](clock.NewMock()); q.precise {
		t.Fatal("a queue on a mock clock would use a timerfd")
	}
}
