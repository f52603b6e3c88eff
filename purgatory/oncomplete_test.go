package purgatory

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests of this file hold a CheckAndComplete inside TryComplete while
// the operation is completed by another goroutine, and check that
// OnComplete is the last call: it waits, without anyone waiting for
// TryComplete, until TryComplete returns, and then runs on the goroutine
// that ran TryComplete. (Before, the completer called it at once, and the
// rest of TryComplete ran after OnComplete had returned.)

// heldTry submits op under "k" and starts a CheckAndComplete of "k" whose
// TryComplete (op's third: the first two are TryCompleteElseWatch's) stops
// at its hook until release is closed, then runs after, if set. It returns
// once that TryComplete is held, with the channel the CheckAndComplete's
// result comes on.
func heldTry(t *testing.T, p *Purgatory[string], op *testOp, release <-chan struct{}, after func()) <-chan checkResult {
	t.Helper()
	entered := make(chan struct{})
	op.tryHook = func(n int32) {
		if n == 3 {
			close(entered)
			<-release
			if after != nil {
				after()
			}
		}
	}
	done, err := p.TryCompleteElseWatch(op, "k")
	require.NoError(t, err)
	require.False(t, done)
	result := make(chan checkResult, 1)
	go func() {
		var r checkResult
		defer func() {
			r.panicked = recover()
			result <- r
		}()
		var err error
		r.n, err = p.CheckAndComplete("k")
		assert.NoError(t, err)
	}()
	testwait.Recv(t, entered, "the held TryComplete")
	return result
}

// checkResult is what the CheckAndComplete of heldTry returned, or the
// value it panicked with.
type checkResult struct {
	n        int
	panicked any
}

// held waits for the CheckAndComplete of heldTry and returns its result,
// failing the test if it panicked.
func held(t *testing.T, result <-chan checkResult) int {
	t.Helper()
	r := testwait.Recv(t, result, "the held CheckAndComplete")
	require.Nil(t, r.panicked, "CheckAndComplete panicked")
	return r.n
}

// assertLast checks that no part of a TryComplete ran after OnExpiration or
// OnComplete started, and that OnComplete ran once.
func assertLast(t *testing.T, op *testOp) {
	t.Helper()
	assert.Equal(t, int32(1), op.completes.Load(), "OnComplete calls")
	assert.False(t, op.tryAfterEnd.Load(), "TryComplete ran after OnComplete or OnExpiration started")
	assert.False(t, op.endDuringTry.Load(), "OnComplete or OnExpiration started while TryComplete ran")
	assert.False(t, op.overlap.Load(), "TryComplete ran twice at once")
}

// TestForceCompleteDuringTryComplete: a ForceComplete from another
// goroutine while TryComplete runs returns true at once, without waiting
// and without calling OnComplete; the goroutine running TryComplete calls
// OnComplete when TryComplete returns, and does not try again, though a
// try was asked for meanwhile.
func TestForceCompleteDuringTryComplete(t *testing.T) {
	p := newP[string](t)
	op := newOp(time.Hour)
	release := make(chan struct{})
	result := heldTry(t, p, op, release, nil)

	n, err := p.CheckAndComplete("k") // finds the try running: asks for a retry
	require.NoError(t, err)
	assert.Zero(t, n)

	assert.True(t, op.ForceComplete())
	assert.True(t, op.IsCompleted())
	assert.Zero(t, op.completes.Load(), "OnComplete ran while TryComplete was running")
	assert.Zero(t, p.NumDelayed(), "ForceComplete did not stop the timer")
	assert.False(t, op.ForceComplete())

	close(release)
	assert.Zero(t, held(t, result), "CheckAndComplete counted a completion by ForceComplete")
	assertLast(t, op)
	assert.Equal(t, int32(3), op.tries.Load(), "tried again after the completion")
	assert.Zero(t, op.expirations.Load())
}

// TestExpiryDuringTryComplete: a timeout that fires while TryComplete runs
// completes the operation, but OnExpiration and OnComplete wait for
// TryComplete to return and run on its goroutine, in that order. The timer
// is fired by hand, on the test's goroutine.
func TestExpiryDuringTryComplete(t *testing.T) {
	var fire func()
	p := newP[string](t, WithAfterFunc(func(_ time.Duration, f func()) Timer {
		fire = f
		return new(handTimer)
	}))
	op := newOp(time.Hour)
	release := make(chan struct{})
	result := heldTry(t, p, op, release, nil)
	require.NotNil(t, fire, "no timer was armed")

	fire()
	assert.True(t, op.IsCompleted())
	assert.Zero(t, op.expirations.Load(), "OnExpiration ran while TryComplete was running")
	assert.Zero(t, op.completes.Load(), "OnComplete ran while TryComplete was running")
	assert.Zero(t, p.NumDelayed())
	assert.False(t, op.ForceComplete())

	close(release)
	assert.Zero(t, held(t, result))
	assertLast(t, op)
	assert.Equal(t, int32(1), op.expirations.Load())
	assert.True(t, op.expiredFirst.Load(), "OnExpiration did not come before OnComplete")
}

// handTimer is a Timer fired by hand; it is never stopped in these tests.
type handTimer struct{ stopped atomic.Bool }

func (h *handTimer) Stop() bool { return !h.stopped.Swap(true) }

// TestExpiryOnSystemTimerDuringTryComplete is TestExpiryDuringTryComplete
// on the purgatory's own SystemTimer, in fake time: the timer's goroutine
// does not wait for the held TryComplete.
func TestExpiryOnSystemTimerDuringTryComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP[string](t)
		op := newOp(time.Second)
		release := make(chan struct{})
		result := heldTry(t, p, op, release, nil)

		time.Sleep(2 * time.Second) // fake time: the timeout fires
		synctest.Wait()             // the timer's goroutine is idle again
		assert.True(t, op.IsCompleted(), "the timeout did not fire")
		assert.Zero(t, op.completes.Load(), "OnComplete ran while TryComplete was running")
		assert.Zero(t, p.NumDelayed())

		close(release)
		assert.Zero(t, held(t, result))
		assertLast(t, op)
		assert.Equal(t, int32(1), op.expirations.Load())
		assert.True(t, op.expiredFirst.Load())
	})
}

// TestForceCompleteFromTryComplete: the usual `return f.ForceComplete()`.
// Called from TryComplete, ForceComplete returns true without calling
// OnComplete, which runs right after TryComplete returns, before the
// purgatory method that tried the operation returns.
func TestForceCompleteFromTryComplete(t *testing.T) {
	p := newP[string](t)
	t.Run("TryCompleteElseWatch", func(t *testing.T) {
		op := newOp(time.Hour)
		op.ready.Store(true)
		done, err := p.TryCompleteElseWatch(op, "a")
		require.NoError(t, err)
		assert.True(t, done)
		assertLast(t, op)
	})
	t.Run("CheckAndComplete", func(t *testing.T) {
		op := newOp(time.Hour)
		_, err := p.TryCompleteElseWatch(op, "b")
		require.NoError(t, err)
		op.ready.Store(true)
		n, err := p.CheckAndComplete("b")
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assertLast(t, op)
		assert.Zero(t, p.NumDelayed())
	})
}

// TestPanicAfterForceCompleteDuringTryComplete: a TryComplete that panics
// after another goroutine completed the operation still leaves OnComplete
// called, once, before the panic reaches CheckAndComplete's caller.
func TestPanicAfterForceCompleteDuringTryComplete(t *testing.T) {
	p := newP[string](t)
	op := newOp(time.Hour)
	release := make(chan struct{})
	result := heldTry(t, p, op, release, func() { panic("boom") })
	assert.True(t, op.ForceComplete())
	assert.Zero(t, op.completes.Load(), "OnComplete ran while TryComplete was running")

	close(release)
	r := testwait.Recv(t, result, "the held CheckAndComplete")
	assert.Equal(t, "boom", r.panicked)
	assertLast(t, op)

	// The operation is completed: nothing tries it again.
	n, err := p.CheckAndComplete("k")
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Equal(t, int32(3), op.tries.Load())
}
