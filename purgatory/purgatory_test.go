package purgatory

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/go-timingwheel/timingwheel/internal/wheeltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ---- construction and bad input ----

func TestNewOptions(t *testing.T) {
	afterFunc := func(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
	for _, c := range []struct {
		name string
		opts []Option
		want string
	}{
		{"nil option", []Option{nil}, "nil Option"},
		{"nil timer", []Option{WithTimer(nil)}, "WithTimer(nil)"},
		{"nil after func", []Option{WithAfterFunc(nil)}, "WithAfterFunc(nil)"},
		{"timer and after func", []Option{WithTimer(wheeltest.New(t)), WithAfterFunc(afterFunc)}, "give one of them"},
		{"negative interval", []Option{WithPurgeInterval(-1)}, "WithPurgeInterval(-1)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := New[string](c.opts...)
			assert.Nil(t, p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}

	t.Run("defaults", func(t *testing.T) {
		p := newP[string](t)
		assert.Equal(t, int64(defaultPurgeInterval), p.purgeInterval)
		assert.True(t, p.ownTimer)
		n := len(p.shards)
		assert.True(t, n >= minShards && n <= maxShards && n&(n-1) == 0, "shards: %d", n)
	})

	t.Run("own timer is stopped by Close", func(t *testing.T) {
		p, err := New[string]()
		require.NoError(t, err)
		st := p.st
		p.Close()
		_, err = st.AfterFunc(time.Hour, func() {})
		assert.ErrorIs(t, err, timingwheel.ErrStopped)
	})

	t.Run("caller's timer is not stopped by Close", func(t *testing.T) {
		st := wheeltest.New(t)
		p, err := New[string](WithTimer(st), WithPurgeInterval(7))
		require.NoError(t, err)
		assert.Same(t, st, p.st)
		assert.False(t, p.ownTimer)
		assert.Equal(t, int64(7), p.purgeInterval)
		p.Close()
		tm, err := st.AfterFunc(time.Hour, func() {})
		require.NoError(t, err)
		tm.Stop()
	})
}

func TestBadInput(t *testing.T) {
	p := newP[string](t)

	_, err := p.TryCompleteElseWatch(nil, "a")
	assert.ErrorIs(t, err, errNilOp)
	var nilOp *testOp
	_, err = p.TryCompleteElseWatch(nilOp, "a")
	assert.ErrorIs(t, err, errNilOp)

	// A refused operation is not watched or tried; the caller can end it.
	refused := func(op *testOp) {
		t.Helper()
		assert.Zero(t, op.tries.Load(), "a refused operation was tried")
		assert.Zero(t, p.Watched())
		assert.Zero(t, p.NumDelayed())
		assert.True(t, op.ForceComplete(), "a refused operation cannot be completed")
		assert.Equal(t, int32(1), op.completes.Load())
		_, err := p.TryCompleteElseWatch(op, "a")
		assert.ErrorIs(t, err, errSubmitted)
	}
	op := newOp(time.Hour)
	_, err = p.TryCompleteElseWatch(op)
	assert.ErrorIs(t, err, errNoKeys)
	refused(op)
	op = newOp(time.Hour)
	_, err = p.TryCompleteElseWatch(op, []string{}...)
	assert.ErrorIs(t, err, errNoKeys)
	refused(op)
	op = newOp(-time.Nanosecond)
	_, err = p.TryCompleteElseWatch(op, "a")
	assert.ErrorContains(t, err, "negative")
	refused(op)
	// A key not equal to itself: its list could never be found again,
	// nor deleted (every watch under a NaN left one behind).
	pf := newP[float64](t)
	op = newOp(time.Hour)
	_, err = pf.TryCompleteElseWatch(op, 1, math.NaN())
	assert.ErrorContains(t, err, "NaN")
	assert.Zero(t, op.tries.Load(), "a refused operation was tried")
	assert.Zero(t, pf.Watched())

	// A second submission is refused and leaves the first alone.
	op = newOp(time.Hour)
	done, err := p.TryCompleteElseWatch(op, "a")
	require.NoError(t, err)
	assert.False(t, done)
	_, err = p.TryCompleteElseWatch(op, "b")
	assert.ErrorIs(t, err, errSubmitted)
	assert.Equal(t, 1, p.Watched())
	assert.Equal(t, 1, p.NumDelayed())
	assert.False(t, op.IsCompleted())
	checkInvariants(t, p, op)

	assert.Equal(t, []Operation{op}, p.Close())
	late := newOp(time.Hour)
	_, err = p.TryCompleteElseWatch(late, "a")
	assert.ErrorIs(t, err, ErrClosed)
	assert.True(t, late.ForceComplete())
	_, err = p.CheckAndComplete("a")
	assert.ErrorIs(t, err, ErrClosed)
	_, err = p.CancelForKey("a")
	assert.ErrorIs(t, err, ErrClosed)
	assert.Nil(t, p.Close(), "a second Close")
}

// ---- TryCompleteElseWatch ----

func TestTryCompleteElseWatchCompletesAtOnce(t *testing.T) {
	st := wheeltest.New(t)
	p := newP[string](t, WithTimer(st))
	op := newOp(time.Hour)
	op.ready.Store(true)
	done, err := p.TryCompleteElseWatch(op, "a", "b")
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, int32(1), op.completes.Load())
	assert.Equal(t, int32(1), op.tries.Load(), "tried more than once")
	assert.True(t, op.IsCompleted())
	assert.Zero(t, p.Watched())
	assert.Zero(t, p.NumDelayed())
	assert.Zero(t, st.Len(), "a timer was armed for a completed operation")
	checkInvariants(t, p, op)
}

func TestTryCompleteElseWatchWatches(t *testing.T) {
	st := wheeltest.New(t)
	p := newP[string](t, WithTimer(st))
	op := newOp(time.Hour)
	done, err := p.TryCompleteElseWatch(op, "a", "b", "a", "c", "b")
	require.NoError(t, err)
	assert.False(t, done)
	assert.Equal(t, int32(2), op.tries.Load(), "tried before and after watching")
	assert.Equal(t, 3, p.Watched(), "duplicate keys are watched once")
	assert.Equal(t, 1, p.NumDelayed())
	assert.Equal(t, 1, st.Len())
	for _, k := range []string{"a", "b", "c"} {
		n, ok := listLen(p, k)
		assert.True(t, ok && n == 1, "key %s: %d entries", k, n)
	}
	checkInvariants(t, p, op)

	op.ready.Store(true)
	n, err := p.CheckAndComplete("b")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, int32(1), op.completes.Load())
	assert.Zero(t, op.expirations.Load())
	assert.Zero(t, p.NumDelayed(), "completion did not stop the timer")
	assert.Zero(t, st.Len(), "completion did not stop the timer")
	_, ok := listLen(p, "b")
	assert.False(t, ok, "the checked key kept its list")
	assert.Equal(t, 2, p.Watched(), "entries under the other keys stay until purged")
	checkInvariants(t, p, op)

	// Checking the other keys drops the stale entries.
	for _, k := range []string{"a", "c"} {
		n, err := p.CheckAndComplete(k)
		require.NoError(t, err)
		assert.Zero(t, n)
	}
	assert.Zero(t, p.Watched())
	checkInvariants(t, p, op)
}

// TestSecondTryCatchesChangeDuringWatch makes the condition hold just after
// the first try read it, and calls CheckAndComplete at once, as a producer
// would: the operation is not watched yet, so only the second try can see
// the change.
func TestSecondTryCatchesChangeDuringWatch(t *testing.T) {
	st := wheeltest.New(t)
	p := newP[string](t, WithTimer(st))
	op := newOp(time.Hour)
	op.tryHook = func(n int32) {
		if n == 1 {
			op.ready.Store(true)
			n, err := p.CheckAndComplete("a")
			assert.NoError(t, err)
			assert.Zero(t, n, "the operation was watched before the first try")
		}
	}
	done, err := p.TryCompleteElseWatch(op, "a", "b")
	require.NoError(t, err)
	assert.True(t, done, "the second try missed the change")
	assert.Equal(t, int32(1), op.completes.Load())
	assert.Zero(t, p.NumDelayed())
	assert.Zero(t, st.Len(), "a timer was armed for a completed operation")
	assert.Zero(t, p.Watched(), "the operation was not unwatched at once")
	checkInvariants(t, p, op)
}

// TestRefusedOperationIsNotWatched: when the timeout cannot be armed, the
// operation is given back, unwatched, and never tried again.
func TestRefusedOperationIsNotWatched(t *testing.T) {
	st := wheeltest.New(t, timingwheel.WithMaxPending(1))
	p := newP[string](t, WithTimer(st))
	filler, err := st.AfterFunc(time.Hour, func() {})
	require.NoError(t, err)
	defer filler.Stop()

	op := newOp(time.Hour)
	done, err := p.TryCompleteElseWatch(op, "a", "b")
	assert.False(t, done)
	assert.ErrorIs(t, err, timingwheel.ErrTooManyPending)
	assert.Zero(t, p.Watched())
	assert.Zero(t, p.NumDelayed())
	checkInvariants(t, p, op)

	op.ready.Store(true)
	tries := op.tries.Load()
	n, err := p.CheckAndComplete("a")
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Equal(t, tries, op.tries.Load(), "a refused operation was tried")
	assert.True(t, op.ForceComplete(), "the caller owns a refused operation")
	assert.Equal(t, int32(1), op.completes.Load())

	st.Stop()
	_, err = p.TryCompleteElseWatch(newOp(time.Hour), "a")
	assert.ErrorIs(t, err, timingwheel.ErrStopped)
	assert.Zero(t, p.Watched())
	assert.Zero(t, p.NumDelayed())
}

// ---- serialization of TryComplete ----

// TestSkippedTryIsRetried holds one goroutine inside TryComplete, after it
// read the condition as false, while another makes the condition true and
// calls CheckAndComplete. The second must neither wait nor run TryComplete
// at the same time; the first must try again and complete the operation.
func TestSkippedTryIsRetried(t *testing.T) {
	p := newP[string](t)
	op := newOp(time.Hour)
	entered := make(chan struct{})
	release := make(chan struct{})
	op.tryHook = func(n int32) {
		if n == 3 { // tries 1 and 2 are TryCompleteElseWatch's
			close(entered)
			<-release
		}
	}
	done, err := p.TryCompleteElseWatch(op, "k")
	require.NoError(t, err)
	require.False(t, done)

	first := make(chan int)
	go func() {
		n, err := p.CheckAndComplete("k")
		assert.NoError(t, err)
		first <- n
	}()
	testwait.Recv(t, entered, "the first TryComplete")

	op.ready.Store(true)
	second := make(chan int)
	go func() {
		n, err := p.CheckAndComplete("k")
		assert.NoError(t, err)
		second <- n
	}()
	assert.Zero(t, testwait.Recv(t, second, "the second CheckAndComplete, which must not wait"))
	assert.Zero(t, op.completes.Load())

	close(release)
	assert.Equal(t, 1, testwait.Recv(t, first, "the first CheckAndComplete"), "the skipped try was not retried")
	assert.Equal(t, int32(1), op.completes.Load())
	assert.Equal(t, int32(4), op.tries.Load())
	assert.False(t, op.overlap.Load(), "TryComplete ran twice at once")
	assert.Zero(t, p.NumDelayed())
}

// TestPanickingTryComplete: a panic in TryComplete reaches the caller and
// leaves the operation triable.
func TestPanickingTryComplete(t *testing.T) {
	p := newP[string](t)
	op := newOp(time.Hour)
	op.tryHook = func(n int32) {
		if n == 3 {
			panic("boom")
		}
	}
	_, err := p.TryCompleteElseWatch(op, "k")
	require.NoError(t, err)
	assert.PanicsWithValue(t, "boom", func() { _, _ = p.CheckAndComplete("k") })
	op.ready.Store(true)
	n, err := p.CheckAndComplete("k")
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the operation stayed marked as running")
	assert.Equal(t, int32(1), op.completes.Load())
}

// ---- CheckAndComplete ----

func TestCheckAndComplete(t *testing.T) {
	p := newP[string](t)
	ops := make([]*testOp, 5)
	for i := range ops {
		ops[i] = newOp(time.Hour)
		keys := []string{"k"}
		if i%2 == 1 {
			keys = append(keys, "j")
		}
		_, err := p.TryCompleteElseWatch(ops[i], keys...)
		require.NoError(t, err)
	}
	assert.Equal(t, 7, p.Watched())

	n, err := p.CheckAndComplete("nobody")
	require.NoError(t, err)
	assert.Zero(t, n)

	ops[0].ready.Store(true)
	ops[3].ready.Store(true)
	n, err = p.CheckAndComplete("k")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	l, _ := listLen(p, "k")
	assert.Equal(t, 3, l, "completed operations stayed in the checked list")
	assert.Equal(t, 5, p.Watched())
	assert.Equal(t, 3, p.NumDelayed())
	checkInvariants(t, p, ops...)

	for _, o := range ops {
		o.ready.Store(true)
	}
	n, err = p.CheckAndComplete("k")
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	_, ok := listLen(p, "k")
	assert.False(t, ok, "an empty list was kept")
	assert.Equal(t, 2, p.Watched(), "the stale entries of ops 1 and 3 under j")
	assert.Zero(t, p.NumDelayed())
	checkInvariants(t, p, ops...)

	n, err = p.CheckAndComplete("j")
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Zero(t, p.Watched())
	for i, o := range ops {
		assert.Equal(t, int32(1), o.completes.Load(), "op %d", i)
	}
	checkInvariants(t, p, ops...)
}

// ---- timeouts ----

func TestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP[string](t)
		op := newOp(100 * time.Millisecond)
		_, err := p.TryCompleteElseWatch(op, "a", "b")
		require.NoError(t, err)
		assert.Equal(t, 1, p.NumDelayed())

		time.Sleep(100*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		assert.Zero(t, op.completes.Load(), "expired early")

		time.Sleep(2 * time.Millisecond) // the deadline plus a tick
		synctest.Wait()
		assert.Equal(t, int32(1), op.expirations.Load())
		assert.Equal(t, int32(1), op.completes.Load())
		assert.True(t, op.expiredFirst.Load(), "OnExpiration did not come before OnComplete")
		assert.Zero(t, p.NumDelayed())
		assert.Equal(t, 2, p.Watched(), "stale entries of an expired operation")
		checkInvariants(t, p, op)

		op.ready.Store(true)
		n, err := p.CheckAndComplete("a")
		require.NoError(t, err)
		assert.Zero(t, n, "an expired operation completed again")
		assert.False(t, op.ForceComplete())
		assert.Equal(t, int32(1), op.completes.Load())
		assert.Equal(t, 1, p.Watched())
		checkInvariants(t, p, op)
	})
}

func TestZeroTimeoutExpiresAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP[string](t)
		op := newOp(0)
		start := time.Now()
		expired := make(chan time.Time, 1)
		op.completeHook = func() { expired <- time.Now() }
		done, err := p.TryCompleteElseWatch(op, "a")
		require.NoError(t, err)
		assert.False(t, done)
		assert.Equal(t, start, <-expired)
		assert.Equal(t, int32(1), op.expirations.Load())
	})
}

func TestCompletionStopsTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := wheeltest.New(t)
		p := newP[string](t, WithTimer(st))
		op := newOp(time.Second)
		_, err := p.TryCompleteElseWatch(op, "a")
		require.NoError(t, err)
		assert.Equal(t, 1, st.Len())

		time.Sleep(500 * time.Millisecond)
		op.ready.Store(true)
		n, err := p.CheckAndComplete("a")
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Zero(t, st.Len(), "the timer is still pending")
		assert.Zero(t, p.NumDelayed())

		time.Sleep(time.Second)
		synctest.Wait()
		assert.Zero(t, op.expirations.Load())
		assert.Equal(t, int32(1), op.completes.Load())
	})
}

// ---- ForceComplete and the purge ----

func TestForceComplete(t *testing.T) {
	st := wheeltest.New(t)
	p := newP[string](t, WithTimer(st))
	op := newOp(time.Hour)
	assert.False(t, op.ForceComplete(), "before submission")
	assert.False(t, op.IsCompleted())
	assert.Zero(t, op.completes.Load())

	_, err := p.TryCompleteElseWatch(op, "a", "b")
	require.NoError(t, err)
	assert.True(t, op.ForceComplete())
	assert.True(t, op.IsCompleted())
	assert.False(t, op.ForceComplete())
	assert.Equal(t, int32(1), op.completes.Load())
	assert.Zero(t, op.expirations.Load())
	assert.Zero(t, p.NumDelayed())
	assert.Zero(t, st.Len())
	assert.Equal(t, 2, p.Watched(), "stale entries wait for the purge")
	checkInvariants(t, p, op)
}

func TestPurgeInterval(t *testing.T) {
	p := newP[int](t, WithPurgeInterval(4))
	var ops []*testOp
	submit := func(keys ...int) *testOp {
		op := newOp(time.Hour)
		_, err := p.TryCompleteElseWatch(op, keys...)
		require.NoError(t, err)
		ops = append(ops, op)
		return op
	}
	live := submit(1, 2)
	a := submit(1, 2, 3)
	b := submit(2, 4)
	assert.Equal(t, 7, p.Watched())

	a.ForceComplete() // 3 stale entries: not more than 4
	assert.Equal(t, 7, p.Watched())
	b.ForceComplete() // 5 stale entries: purged
	assert.Equal(t, 2, p.Watched(), "no purge past the interval")
	for _, k := range []int{3, 4} {
		_, ok := listLen(p, k)
		assert.False(t, ok, "key %d kept an empty list", k)
	}
	assert.False(t, live.IsCompleted())
	checkInvariants(t, p, ops...)

	t.Run("zero", func(t *testing.T) {
		p := newP[int](t, WithPurgeInterval(0))
		op := newOp(time.Hour)
		_, err := p.TryCompleteElseWatch(op, 1, 2)
		require.NoError(t, err)
		op.ForceComplete()
		assert.Zero(t, p.Watched())
		checkInvariants(t, p, op)
	})
}

// ---- CancelForKey ----

func TestCancelForKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP[string](t)
		submit := func(keys ...string) *testOp {
			op := newOp(time.Second)
			_, err := p.TryCompleteElseWatch(op, keys...)
			require.NoError(t, err)
			return op
		}
		a := submit("k1", "k2")
		b := submit("k1")
		c := submit("k1")
		d := submit("k2")
		c.ForceComplete()
		assert.Equal(t, 3, p.NumDelayed())

		canceled, err := p.CancelForKey("k1")
		require.NoError(t, err)
		assert.ElementsMatch(t, []Operation{a, b}, canceled)
		assert.Equal(t, 1, p.NumDelayed(), "the timeouts were not canceled")
		assert.Equal(t, 2, p.Watched(), "k2 holds a and d")
		_, ok := listLen(p, "k1")
		assert.False(t, ok)
		checkInvariants(t, p, a, b, c, d)

		none, err := p.CancelForKey("nobody")
		require.NoError(t, err)
		assert.Empty(t, none)

		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Zero(t, a.expirations.Load()+b.expirations.Load(), "a canceled operation expired")
		assert.Zero(t, a.completes.Load()+b.completes.Load())
		assert.Equal(t, int32(1), d.expirations.Load())

		// a is still watched under k2; b is watched nowhere.
		a.ready.Store(true)
		b.ready.Store(true)
		n, err := p.CheckAndComplete("k2")
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, int32(1), a.completes.Load())
		assert.True(t, b.ForceComplete())
		assert.Equal(t, int32(1), b.completes.Load())
		assert.Zero(t, p.Watched())
		checkInvariants(t, p, a, b, c, d)
	})
}

// TestExpiryAfterCancel: a timer that fired just before its operation was
// canceled must not expire it.
func TestExpiryAfterCancel(t *testing.T) {
	p := newP[string](t)
	op := newOp(time.Hour)
	_, err := p.TryCompleteElseWatch(op, "k")
	require.NoError(t, err)
	require.True(t, op.cancel())
	p.delayed.Add(1) // expire takes the operation off NumDelayed once more
	op.expire()
	assert.Zero(t, op.expirations.Load()+op.completes.Load(), "a canceled operation expired")
	assert.False(t, op.IsCompleted())
}

// TestCancelDuringWatch cancels the key between the watch and the arming of
// the timeout: no timer must be left behind.
func TestCancelDuringWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := wheeltest.New(t)
		p := newP[string](t, WithTimer(st))
		op := newOp(time.Second)
		var canceled []Operation
		op.tryHook = func(n int32) {
			if n == 2 { // the try after the watch
				var err error
				canceled, err = p.CancelForKey("k")
				assert.NoError(t, err)
			}
		}
		done, err := p.TryCompleteElseWatch(op, "k")
		require.NoError(t, err)
		assert.False(t, done)
		assert.Equal(t, []Operation{op}, canceled)
		assert.Zero(t, p.NumDelayed())
		assert.Zero(t, st.Len(), "a timer was armed for a canceled operation")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Zero(t, op.expirations.Load())
	})
}

// ---- Close ----

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP[string](t)
		submit := func(d time.Duration, keys ...string) *testOp {
			op := newOp(d)
			_, err := p.TryCompleteElseWatch(op, keys...)
			require.NoError(t, err)
			return op
		}
		a := submit(time.Second, "k1", "k2", "k3")
		b := submit(time.Second, "k1")
		c := submit(time.Second, "k3")
		d := submit(time.Second, "k1")
		e := submit(time.Hour, "k4")
		d.ForceComplete()

		left := p.Close()
		assert.ElementsMatch(t, []Operation{a, b, c, e}, left, "not each waiting operation once")
		assert.Zero(t, p.Watched())
		assert.Zero(t, p.NumDelayed())
		_, err := p.st.AfterFunc(time.Second, func() {})
		assert.ErrorIs(t, err, timingwheel.ErrStopped, "Close did not stop its own timer")

		time.Sleep(2 * time.Second)
		synctest.Wait()
		for _, op := range []*testOp{a, b, c, e} {
			assert.Zero(t, op.completes.Load())
			assert.False(t, op.IsCompleted())
		}
		for _, op := range left {
			assert.True(t, op.ForceComplete())
		}
		for _, op := range []*testOp{a, b, c, d, e} {
			assert.Equal(t, int32(1), op.completes.Load())
			assert.Zero(t, op.expirations.Load())
		}
	})
}

func TestCloseWithCallersTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := wheeltest.New(t)
		p := newP[string](t, WithTimer(st))
		op := newOp(time.Second)
		_, err := p.TryCompleteElseWatch(op, "k")
		require.NoError(t, err)
		assert.Equal(t, []Operation{op}, p.Close())
		assert.Zero(t, st.Len(), "the timeout was not stopped")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Zero(t, op.expirations.Load())
		tm, err := st.AfterFunc(time.Second, func() {})
		require.NoError(t, err, "Close stopped the caller's timer")
		tm.Stop()
	})
}

// TestCloseDuringTryCompleteElseWatch closes the purgatory from inside the
// tries of TryCompleteElseWatch: before the watch the operation is refused,
// after it Close returns it; either way it has one owner and no timer.
func TestCloseDuringTryCompleteElseWatch(t *testing.T) {
	for _, try := range []int32{1, 2} {
		t.Run(fmt.Sprintf("try %d", try), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := wheeltest.New(t)
				p := newP[string](t, WithTimer(st))
				op := newOp(time.Second)
				var left []Operation
				op.tryHook = func(n int32) {
					if n == try {
						left = p.Close()
					}
				}
				done, err := p.TryCompleteElseWatch(op, "a", "b")
				assert.False(t, done)
				if try == 1 {
					assert.ErrorIs(t, err, ErrClosed)
					assert.Empty(t, left)
				} else {
					assert.NoError(t, err)
					assert.Equal(t, []Operation{op}, left)
				}
				assert.Zero(t, st.Len(), "a timer was armed")
				assert.Zero(t, p.NumDelayed())
				time.Sleep(2 * time.Second)
				synctest.Wait()
				assert.Zero(t, op.completes.Load())
				assert.Equal(t, try, op.tries.Load(), "tried after Close")
				assert.True(t, op.ForceComplete())
			})
		})
	}
}

// TestCloseFromCallback closes the purgatory, and so its own timer, from an
// OnExpiration that runs on that timer.
func TestCloseFromCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP[string](t)
		waiting := newOp(time.Hour)
		_, err := p.TryCompleteElseWatch(waiting, "w")
		require.NoError(t, err)
		closed := make(chan []Operation, 1)
		op := newOp(time.Second)
		op.expireHook = func() { closed <- p.Close() }
		_, err = p.TryCompleteElseWatch(op, "k")
		require.NoError(t, err)
		assert.Equal(t, []Operation{waiting}, <-closed)
		synctest.Wait()
		assert.Equal(t, int32(1), op.completes.Load())
	})
}

// TestCallbacksMayCallThePurgatory: TryComplete, OnComplete and
// OnExpiration call the purgatory, which deadlocks if a lock is held
// around them.
func TestCallbacksMayCallThePurgatory(t *testing.T) {
	p := newP[string](t)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		use := func() {
			p.Watched()
			_, _ = p.CheckAndComplete("k")
			_, _ = p.CheckAndComplete("other")
			_, _ = p.CancelForKey("gone")
			_, _ = p.TryCompleteElseWatch(newOp(time.Hour), "k", "other")
		}
		op := newOp(time.Hour)
		op.tryHook = func(n int32) {
			if n == 3 {
				use()
			}
		}
		op.completeHook = use
		_, err := p.TryCompleteElseWatch(op, "k", "other")
		assert.NoError(t, err)
		op.ready.Store(true)
		_, err = p.CheckAndComplete("k")
		assert.NoError(t, err)
		assert.Equal(t, int32(1), op.completes.Load())

		// A zero timeout expires on the timer's worker at once.
		expired := make(chan struct{})
		exp := newOp(0)
		exp.expireHook = use
		exp.completeHook = func() { use(); close(expired) }
		_, err = p.TryCompleteElseWatch(exp, "k")
		assert.NoError(t, err)
		<-expired
	}()
	testwait.Recv(t, finished, "callbacks that call the purgatory (a deadlock?)")
}

// ---- WithAfterFunc ----

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

// ---- allocations ----

func TestAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := newP[string](t)
	for range 10 {
		_, err := p.TryCompleteElseWatch(newOp(time.Hour), "k", "j")
		require.NoError(t, err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = p.CheckAndComplete("k")
	})
	assert.Zero(t, allocs, "CheckAndComplete that completes nothing")

	ops := make([]*testOp, 201)
	for i := range ops {
		ops[i] = newOp(time.Hour)
	}
	i := 0
	allocs = testing.AllocsPerRun(200, func() {
		_, _ = p.TryCompleteElseWatch(ops[i], "k", "j")
		ops[i].ForceComplete()
		i++
	})
	// The Timer and the bound method value of its function; the watch
	// lists' arrays are reused.
	assert.LessOrEqual(t, allocs, 2.0, "TryCompleteElseWatch and ForceComplete")
	t.Logf("TryCompleteElseWatch + ForceComplete: %v allocations", allocs)
}

// The tests below hold a CheckAndComplete inside TryComplete while
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
