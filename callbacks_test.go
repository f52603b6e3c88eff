package timingwheel

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Callbacks that misbehave (block, run for seconds, use their own timer,
// exit their goroutine) hold up no other timer and no driver.

// TestBlockedCallbacksDueTogetherAllStart: N callbacks due in the same tick
// that all block (a network write to a dead peer) all start within a tick
// plus the stall delay of their deadline, with 8 workers: the executor
// replaces goroutines stuck in a callback at once, and does not make them
// wait one behind the other, a stall delay each. Then they are released,
// and Stop waits for every goroutine.
func TestBlockedCallbacksDueTogetherAllStart(t *testing.T) {
	const tick = defaultTick
	const stall = min(tick, time.Millisecond) // the executor's stall delay
	for _, n := range []int{8, 40, 200} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := mustNew(t, WithWorkers(8))
				defer st.Stop()
				release := make(chan struct{})
				var once sync.Once
				unblock := func() { once.Do(func() { close(release) }) }
				defer unblock() // before Stop, also when a check fails
				late := make(chan time.Duration, n)
				const d = 5 * tick
				deadline := time.Now().Add(d)
				for range n {
					_, err := st.AfterFunc(d, func() {
						late <- time.Since(deadline)
						<-release
					})
					require.NoError(t, err)
				}
				for i := range n {
					l := testwait.Recv(t, late, fmt.Sprintf("callback %d of %d to start", i+1, n))
					assert.GreaterOrEqual(t, l, time.Duration(0), "early")
					assert.LessOrEqual(t, l, tick+stall, "held up by blocked callbacks")
				}
				unblock()
				assert.Empty(t, st.Stop())
				assert.Zero(t, wheelGoroutines(), "goroutines outlived Stop")
			})
		})
	}
}

// TestBlockedCallbacksDoNotHoldUpOthers blocks every worker, for ever as far
// as the test is concerned, and checks that other timers still fire within
// a tick plus the executor's stall delay, and that the driver keeps going.
func TestBlockedCallbacksDoNotHoldUpOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tick = time.Millisecond
		const stall = time.Millisecond // min(tick, 1ms)
		st := mustNew(t, WithTick(tick), WithWorkers(2))
		release := make(chan struct{})
		for range 2 {
			_, err := st.AfterFunc(tick, func() { <-release })
			require.NoError(t, err)
		}
		var lates []time.Duration
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 50 {
			d := time.Duration(2+i) * tick
			deadline := time.Now().Add(d)
			wg.Add(1)
			_, err := st.AfterFunc(d, func() {
				mu.Lock()
				lates = append(lates, time.Since(deadline))
				mu.Unlock()
				wg.Done()
				if i%10 == 0 {
					<-release // some of these block too
				}
			})
			require.NoError(t, err)
		}
		wg.Wait()
		for _, late := range lates {
			assert.GreaterOrEqual(t, late, time.Duration(0))
			assert.LessOrEqual(t, late, tick+stall, "held up by blocked callbacks")
		}
		close(release)
		st.Stop()
	})
}

// TestChannelTimersDoNotWaitBehindBlockedCallbacks blocks the one worker
// for ever, as far as the test is concerned, and checks that channel
// timers and a Ticker, which their driver delivers itself, still fire at
// their deadlines, not a stall delay later; and that a callback due with
// them in one bucket, which goes to the workers, does not hold up the
// driver.
func TestChannelTimersDoNotWaitBehindBlockedCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithWorkers(1))
		release := make(chan struct{})
		blocked := make(chan struct{})
		_, err := st.AfterFunc(time.Millisecond, func() { close(blocked); <-release })
		require.NoError(t, err)
		<-blocked
		start := time.Now()
		tm, err := st.NewTimer(5 * time.Millisecond)
		require.NoError(t, err)
		assert.Equal(t, start.Add(5*time.Millisecond), <-tm.C, "the value sent")
		assert.Equal(t, 5*time.Millisecond, time.Since(start), "when it came")
		tk, err := st.NewTicker(3 * time.Millisecond)
		require.NoError(t, err)
		for i := 1; i <= 3; i++ {
			<-tk.C
			assert.Equal(t, time.Duration(5+3*i)*time.Millisecond, time.Since(start), "tick %d", i)
		}
		tk.Stop()
		// A callback and a channel timer due in the same bucket: the
		// callback blocks in the queue behind the blocked worker until the
		// stall delay starts a goroutine for it, never on the driver.
		ran := make(chan struct{})
		_, err = st.AfterFunc(2*time.Millisecond, func() { close(ran); <-release })
		require.NoError(t, err)
		tm, err = st.NewTimer(2 * time.Millisecond)
		require.NoError(t, err)
		<-tm.C
		<-ran
		tm, err = st.NewTimer(time.Millisecond)
		require.NoError(t, err)
		at := time.Now()
		<-tm.C
		assert.Equal(t, time.Millisecond, time.Since(at), "a timer after the blocked callbacks")
		close(release)
		st.Stop()
	})
}

// TestSlowCallbacks: callbacks that take seconds hold up nothing else.
func TestSlowCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t, WithWorkers(1))
		defer st.Stop()
		start := time.Now()
		var order []int
		var mu sync.Mutex
		var wg sync.WaitGroup
		wg.Add(4)
		for i, d := range []time.Duration{time.Second, time.Second, 1500 * time.Millisecond, 2 * time.Second} {
			_, err := st.AfterFunc(d, func() {
				defer wg.Done()
				at := time.Since(start)
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				if at > d+2*time.Millisecond {
					t.Errorf("timer %d ran at %v, due at %v", i, at, d)
				}
				time.Sleep(3 * time.Second) // slow work
			})
			require.NoError(t, err)
		}
		wg.Wait()
		assert.ElementsMatch(t, []int{0, 1, 2, 3}, order)
	})
}

// TestCallbacksUseTheirOwnTimer: callbacks call Stop, Reset and AfterFunc
// on their own SystemTimer.
func TestCallbacksUseTheirOwnTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		start := time.Now()
		ran := make(chan string, 8)

		victim, err := st.AfterFunc(2*time.Second, func() { ran <- "victim" })
		require.NoError(t, err)
		var self *Timer
		selfRuns := 0
		armed := make(chan struct{})
		self, err = st.AfterFunc(time.Second, func() {
			<-armed
			selfRuns++
			assert.False(t, self.Stop(), "Stop of itself while running")
			if selfRuns == 1 {
				assert.True(t, victim.Stop(), "Stop of another pending timer")
				assert.False(t, self.Reset(time.Second), "Reset of itself while running")
			}
			_, err := st.AfterFunc(time.Second, func() { ran <- fmt.Sprint("child at ", time.Since(start)) })
			assert.NoError(t, err)
			ran <- fmt.Sprint("self at ", time.Since(start))
		})
		require.NoError(t, err)
		close(armed)
		time.Sleep(time.Hour)
		synctest.Wait()
		close(ran)
		var got []string
		for s := range ran {
			got = append(got, s)
		}
		assert.ElementsMatch(t, []string{"self at 1s", "self at 2s", "child at 2s", "child at 3s"}, got)
	})
}

// goexitOnce is a Scheduler whose second Next calls runtime.Goexit (as
// t.FailNow in a test's Scheduler does).
type goexitOnce struct{ calls atomic.Int32 }

func (s *goexitOnce) Next(prev time.Time) time.Time {
	if s.calls.Add(1) == 2 {
		runtime.Goexit()
	}
	return prev.Add(time.Millisecond)
}

// TestSchedulerGoexit: a Scheduler.Next that exits its goroutine
// (runtime.Goexit, which a recover does not stop) unwound rearm between its
// unlock and relock, and the series stayed fired for ever: Stop reported
// false, Reset only recorded a request no rearm would carry out, and under
// WithMaxPending the series' place was never given back. The series must
// end, the panic handler hear of it, and the place come back.
func TestSchedulerGoexit(t *testing.T) {
	reports := make(chan any, 4)
	st, err := New(WithTick(time.Millisecond), WithMaxPending(1), WithPanicHandler(func(v any) { reports <- v }))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	runs := make(chan struct{}, 16)
	s := &goexitOnce{}
	tm, err := st.ScheduleFunc(s, func() { runs <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, runs, "the first run")
	v := testwait.Recv(t, reports, "the panic handler's report of the Goexit")
	if e, ok := v.(error); !ok || !strings.Contains(e.Error(), "Goexit") {
		t.Fatalf("the panic handler received %v; want an error about Goexit", v)
	}
	if _, state := unpack(tm.w.Load()); state != stateStopped {
		t.Fatalf("the series is in state %d after its Next exited; want stopped (%d)", state, stateStopped)
	}
	if tm.Stop() {
		t.Fatal("Stop of an ended series reported it pending")
	}
	other, err := st.AfterFunc(time.Hour, func() {})
	if err != nil {
		t.Fatalf("AfterFunc under WithMaxPending(1) after the series ended: %v; its place was not given back", err)
	}
	other.Stop()
}
