package purgatory

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newP returns a purgatory that the test closes when it ends.
func newP[K comparable](t testing.TB, opts ...Option) *Purgatory[K] {
	t.Helper()
	p, err := New[K](opts...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// testOp completes once ready is set and it is tried. It counts every
// call the purgatory makes to it and notices overlapping TryComplete calls,
// and any part of a TryComplete that runs after OnExpiration or OnComplete
// started.
type testOp struct {
	Op
	ready atomic.Bool

	// tryHook, if set, runs inside the n-th TryComplete, after the
	// condition was read.
	tryHook      func(n int32)
	completeHook func()
	expireHook   func()

	tryGuard

	tries, completes, expirations atomic.Int32
	tryAfterEnd                   atomic.Bool // TryComplete ran on after OnExpiration or OnComplete started
	endDuringTry                  atomic.Bool // OnExpiration or OnComplete started while TryComplete ran
	expiredFirst                  atomic.Bool // OnComplete found OnExpiration done
}

func newOp(timeout time.Duration) *testOp {
	return &testOp{Op: Op{Timeout: timeout}}
}

// tryGuard notices overlapping TryComplete calls of an operation: inTry
// counts the calls running, overlap notes two at once.
type tryGuard struct {
	inTry   atomic.Int32
	overlap atomic.Bool
}

// enterTry counts a TryComplete in, noting an overlap with another; the
// caller defers exitTry.
func (g *tryGuard) enterTry() {
	if g.inTry.Add(1) != 1 {
		g.overlap.Store(true)
	}
}

func (g *tryGuard) exitTry() { g.inTry.Add(-1) }

func (o *testOp) TryComplete() bool {
	o.enterTry()
	defer o.exitTry()
	n := o.tries.Add(1)
	ready := o.ready.Load()
	if o.tryHook != nil {
		o.tryHook(n)
	}
	o.checkNotEnded()
	if ready {
		done := o.ForceComplete()
		o.checkNotEnded() // OnComplete runs after TryComplete returns
		return done
	}
	return false
}

// checkNotEnded notes whether the operation's end was called already.
func (o *testOp) checkNotEnded() {
	if o.completes.Load() > 0 || o.expirations.Load() > 0 {
		o.tryAfterEnd.Store(true)
	}
}

func (o *testOp) OnComplete() {
	if o.inTry.Load() != 0 {
		o.endDuringTry.Store(true)
	}
	if o.expirations.Load() > 0 {
		o.expiredFirst.Store(true)
	}
	o.completes.Add(1)
	if o.completeHook != nil {
		o.completeHook()
	}
}

func (o *testOp) OnExpiration() {
	if o.inTry.Load() != 0 {
		o.endDuringTry.Store(true)
	}
	o.expirations.Add(1)
	if o.expireHook != nil {
		o.expireHook()
	}
}

// refs returns the number of watch-list entries o's state word counts.
func refs(o *Op) int { return int(o.state.Load() >> refShift) }

// checkInvariants checks, while no call of p runs, that the counters match
// the watch lists: Watched is the number of entries, the stale count the
// number of entries of completed operations, every operation's entry count
// its number of entries (ops lists operations that may be in no list), no
// list is empty and every key is in its own shard. It also checks the refs:
// each entry's ref knows its list and position and belongs to its
// operation, and every stale entry's operation is queued for the purge. And
// Stats agrees with itself: an expiry is counted with its lateness.
func checkInvariants[K comparable](t testing.TB, p *Purgatory[K], ops ...*testOp) {
	t.Helper()
	p.queueMu.Lock()
	queued := make(map[*Op]bool)
	for _, o := range p.queue {
		queued[o] = true
	}
	assert.Equal(t, int64(len(p.queue)), p.queued.Load(), "queued is not the queue's length")
	p.queueMu.Unlock()
	entries := make(map[*Op]int)
	total, stale := 0, 0
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		for k, l := range sh.lists {
			assert.NotEmpty(t, l.entries, "key %v: empty list kept", k)
			assert.Same(t, sh, p.shardOf(k), "key %v in the wrong shard", k)
			assert.Same(t, sh, &p.shards[l.shard], "key %v: the list's shard", k)
			assert.Equal(t, any(k), l.key, "key %v: the list's key", k)
			assert.False(t, l.gone, "key %v: a gone list in the map", k)
			total += len(l.entries)
			for i, e := range l.entries {
				o := e.op
				entries[o]++
				if assert.Less(t, int(e.j), o.nrefs(), "key %v: an entry's ref", k) {
					assert.Same(t, l, o.ref(int(e.j)).l, "key %v: an entry's ref is not to its list", k)
					assert.Equal(t, int32(i), o.ref(int(e.j)).idx, "key %v: an entry's position", k)
				}
				if o.IsCompleted() {
					stale++
					assert.True(t, queued[o], "key %v: a stale entry of an operation not queued for the purge", k)
				}
			}
		}
		assert.LessOrEqual(t, len(sh.lists), sh.peak, "shard %d: peak", i)
		sh.mu.Unlock()
	}
	assert.Equal(t, int64(total), p.watched.Load(), "Watched is not the number of entries")
	assert.Equal(t, int64(stale), p.stale.Load(), "the stale count is not the number of stale entries")
	for o, n := range entries {
		assert.Equal(t, n, refs(o), "an operation's entry count")
	}
	for _, o := range ops {
		assert.Equal(t, entries[&o.Op], refs(&o.Op), "an operation's entry count")
	}
	s := p.Stats()
	assert.Equal(t, s.Expired, s.Lateness.Count(), "Stats: an expiry without its lateness")
	assert.LessOrEqual(t, s.Expired, s.Completed, "Stats: more expired than completed")
	assert.Equal(t, total, s.Watched, "Stats.Watched")
}

// listLen returns the length of key's watch list and whether the key has one.
func listLen[K comparable](p *Purgatory[K], key K) (int, bool) {
	sh := p.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l, ok := sh.lists[key]
	if !ok {
		return 0, false
	}
	return len(l.entries), true
}
