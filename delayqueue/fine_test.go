package delayqueue

import (
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-timingwheel/timingwheel/internal/timerfd"
	"go.uber.org/goleak"
)

// stoppedTimers is the real clock with timers that never fire: those of a
// mock that nobody advances. Only the timerfd can wake Poll.
type stoppedTimers struct {
	clock.Clock
	stopped *clock.Mock
}

func (c stoppedTimers) Timer(d time.Duration) *clock.Timer { return c.stopped.Timer(d) }

func haveTimerfd() bool {
	w := timerfd.New()
	if w != nil {
		w.Close()
	}
	return w != nil
}

// TestPollWakesByTheFineAlarm: with the real clock, Poll sleeps on the
// timerfd beside the runtime's timer, and either wakes it. The runtime's
// timers here never fire.
func TestPollWakesByTheFineAlarm(t *testing.T) {
	if !haveTimerfd() {
		t.Skip("no timerfd here")
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
// the poller would stop the bubble's time. Outside, it uses one; with a
// mock clock, never.
func TestNoTimerfdInABubble(t *testing.T) {
	if fakeTime() {
		t.Fatal("the real clock taken for a bubble's")
	}
	synctest.Test(t, func(t *testing.T) {
		if !fakeTime() {
			t.Fatal("a bubble's clock taken for the real one") // before a Poll that would hang
		}
		q := New[int](nil)
		defer q.Close()
		q.Offer(1, time.Now().Add(time.Hour))
		if _, at, _ := q.Poll(); !time.Now().Equal(at) {
			t.Fatalf("Poll returned at %v, want %v", time.Now(), at)
		}
		if q.fine != nil {
			t.Fatal("a queue polled in a bubble made a timerfd")
		}
	})
	if !haveTimerfd() {
		return
	}
	for _, c := range []clock.Clock{nil, clock.NewMock()} {
		q := New[int](c)
		q.Offer(1, q.clock.Now().Add(time.Millisecond))
		if c != nil {
			go c.(*clock.Mock).Add(time.Millisecond)
		}
		q.Poll()
		if made := q.fine != nil; made != (c == nil) {
			t.Errorf("clock %T: made a timerfd: %v", c, made)
		}
		q.Close()
	}
}

// TestTimerfdOfAnUnclosedQueueEnds: a Queue nobody closes keeps no
// goroutine once it is unreachable (goleak checks).
func TestTimerfdOfAnUnclosedQueueEnds(t *testing.T) {
	made := func() bool { // q dies with this frame
		q := New[int](nil)
		q.Offer(1, time.Now().Add(100*time.Microsecond))
		q.Poll()
		return q.fine != nil
	}()
	if !made {
		t.Skip("no timerfd here")
	}
	// q is unreachable: a collection queues its cleanup, which closes the
	// timerfd. Under the race detector it may take more than one.
	for i := 0; ; i++ {
		runtime.GC()
		err := goleak.Find() // retries a while itself
		if err == nil {
			return
		}
		if i == 10 {
			t.Fatal(err)
		}
	}
}
