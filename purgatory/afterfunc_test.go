package purgatory

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runtimeTimers is a WithAfterFunc function on time.AfterFunc that counts
// the timers it arms and the Stop calls they get.
type runtimeTimers struct {
	armed, stopped, kept, twice atomic.Int32
	nilTimer                    bool // return a nil Timer, after arming nothing
}

type runtimeTimer struct {
	t     *time.Timer
	c     *runtimeTimers
	stops atomic.Int32
}

func (c *runtimeTimers) afterFunc(d time.Duration, f func()) Timer {
	if c.nilTimer {
		return nil
	}
	c.armed.Add(1)
	return &runtimeTimer{t: time.AfterFunc(d, f), c: c}
}

func (rt *runtimeTimer) Stop() bool {
	if rt.stops.Add(1) > 1 {
		rt.c.twice.Add(1)
	}
	rt.c.stopped.Add(1)
	ok := rt.t.Stop()
	if ok {
		rt.c.kept.Add(1)
	}
	return ok
}

// TestWithAfterFunc runs the purgatory on the runtime's timers: timeouts
// expire on time and not before, completion and Close stop the timers, each
// at most once, and Close leaves the caller's timers alone.
func TestWithAfterFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c runtimeTimers
		p := newP[string](t, WithAfterFunc(c.afterFunc))
		assert.Nil(t, p.st, "a SystemTimer was created")
		assert.False(t, p.ownTimer)

		expiring := newOp(100 * time.Millisecond)
		_, err := p.TryCompleteElseWatch(expiring, "a", "b")
		require.NoError(t, err)
		completing := newOp(time.Second)
		_, err = p.TryCompleteElseWatch(completing, "a")
		require.NoError(t, err)
		waiting := newOp(time.Hour)
		_, err = p.TryCompleteElseWatch(waiting, "c")
		require.NoError(t, err)
		assert.Equal(t, int32(3), c.armed.Load())
		assert.Equal(t, 3, p.NumDelayed())

		time.Sleep(100*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		assert.Zero(t, expiring.completes.Load(), "expired early")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, int32(1), expiring.expirations.Load())
		assert.Equal(t, int32(1), expiring.completes.Load())
		assert.True(t, expiring.expiredFirst.Load())

		assert.True(t, completing.ForceComplete())
		assert.Equal(t, int32(1), c.kept.Load(), "completion did not stop the timer")
		assert.Equal(t, 1, p.NumDelayed())
		checkInvariants(t, p, expiring, completing, waiting)

		unrelated := time.AfterFunc(time.Hour, func() {})
		assert.Equal(t, []Operation{waiting}, p.Close())
		assert.Equal(t, int32(2), c.kept.Load(), "Close did not stop the timer of what it returned")
		assert.Zero(t, p.NumDelayed())
		assert.True(t, unrelated.Stop(), "Close stopped a timer that is not the purgatory's")

		time.Sleep(2 * time.Hour)
		synctest.Wait()
		assert.Zero(t, completing.expirations.Load()+waiting.expirations.Load())
		assert.Equal(t, int32(1), completing.completes.Load())
		assert.Zero(t, waiting.completes.Load())
		assert.Zero(t, c.twice.Load(), "a timer was stopped twice")
		assert.LessOrEqual(t, c.stopped.Load(), c.armed.Load())
	})
}

// TestWithAfterFuncNilTimer: a function that returns a nil Timer has its
// operation refused, as when a SystemTimer cannot arm the timeout.
func TestWithAfterFuncNilTimer(t *testing.T) {
	c := runtimeTimers{nilTimer: true}
	p := newP[string](t, WithAfterFunc(c.afterFunc))
	op := newOp(time.Second)
	done, err := p.TryCompleteElseWatch(op, "a", "b")
	assert.False(t, done)
	assert.ErrorIs(t, err, errNilTimer)
	assert.Zero(t, p.Watched())
	assert.Zero(t, p.NumDelayed())
	checkInvariants(t, p, op)
	assert.True(t, op.ForceComplete(), "the caller owns a refused operation")
}

// TestStressWithAfterFunc is TestStressEveryOperationEndsOnce on the
// runtime's timers.
func TestStressWithAfterFunc(t *testing.T) {
	var c runtimeTimers
	stress(t, WithAfterFunc(c.afterFunc))
	assert.Zero(t, c.twice.Load(), "a timer was stopped twice")
}
