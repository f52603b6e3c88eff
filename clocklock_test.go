package timingwheel

import (
	"context"
	"sync"
	"testing"
	"time"
)

// lockCheckClock is a fake clock that checks, on every reading, that the
// reader holds no shard lock: the clock may be the user's (WithClock),
// and no user code runs under a lock. In the manual harness one goroutine
// does everything, so a shard lock held during a reading is the reader's.
type lockCheckClock struct {
	*fakeClock
	st   *SystemTimer
	mu   sync.Mutex
	held []string
	at   string // what the test is doing
}

func (c *lockCheckClock) Now() time.Time {
	if c.st != nil {
		for i := range c.st.shards {
			if !c.st.shards[i].mu.TryLock() {
				c.mu.Lock()
				c.held = append(c.held, c.at)
				c.mu.Unlock()
				continue
			}
			c.st.shards[i].mu.Unlock()
		}
	}
	return c.fakeClock.Now()
}

// TestNoClockUnderLock drives every path that reads the clock, periodic
// timers' rearm and Stop among them, and fails if one reads it holding a
// shard lock.
func TestNoClockUnderLock(t *testing.T) {
	c := &lockCheckClock{fakeClock: newFakeClock()}
	st := mustNew(t, WithClock(c), withManual(), WithMaxPending(1000))
	c.st = st
	defer st.Stop()
	step := func(what string, d time.Duration) {
		c.at = what
		c.Add(d)
		st.step()
	}
	c.at = "AfterFunc"
	tm, _ := st.AfterFunc(time.Second, func() {})
	c.at = "Reset"
	tm.Reset(2 * time.Second)
	tm.Reset(time.Millisecond)
	tm.Reset(0)
	c.at = "Stop"
	tm.Reset(time.Second)
	tm.Stop()
	c.at = "ScheduleFunc"
	p, _ := st.ScheduleFunc(Every(time.Second), func() {})
	step("periodic run and rearm", time.Second)
	c.at = "periodic Reset"
	p.Reset(500 * time.Millisecond)
	step("periodic run after Reset", time.Second)
	c.at = "periodic Stop"
	p.Stop()
	c.at = "WithTimeout"
	ctx, cancel := st.WithTimeout(context.Background(), time.Second)
	_ = ctx.Err()
	cancel()
	c.at = "NewTimer"
	ct, _ := st.NewTimer(time.Second)
	ct.Reset(2 * time.Second)
	step("channel timer fires", 3*time.Second)
	ct.Stop()
	c.at = "NewTicker"
	tk, _ := st.NewTicker(time.Second)
	step("ticker ticks", time.Second)
	tk.Reset(time.Second)
	tk.Stop()
	c.at = "Len, Stats"
	st.Len()
	st.Stats()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.held) > 0 {
		t.Fatalf("the clock was read under a shard lock, in: %v", c.held)
	}
}
