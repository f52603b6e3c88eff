package purgatory

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const stressKeys = 8

// stressOp completes once need events have happened on its keys since it
// was submitted. It counts how it ended: wins are the ForceComplete calls
// that returned true, whoever made them. It notices a TryComplete that
// runs while or after OnExpiration or OnComplete does.
type stressOp struct {
	Op
	keys     []int
	events   *[stressKeys]atomic.Int64
	baseline int64
	need     int64
	start    time.Time
	ended    *sync.WaitGroup

	wins, completes, expirations atomic.Int32
	early, overlap, afterEnd     atomic.Bool
	inTry, ending                atomic.Int32
}

func (o *stressOp) seen() int64 {
	n := int64(0)
	for _, k := range o.keys {
		n += o.events[k].Load()
	}
	return n
}

func (o *stressOp) TryComplete() bool {
	if o.inTry.Add(1) != 1 {
		o.overlap.Store(true)
	}
	defer o.inTry.Add(-1)
	o.checkNotEnded()
	if o.seen()-o.baseline < o.need {
		return false
	}
	done := o.win()
	o.checkNotEnded()
	return done
}

// checkNotEnded notes whether OnExpiration or OnComplete has started.
func (o *stressOp) checkNotEnded() {
	if o.ending.Load() != 0 {
		o.afterEnd.Store(true)
	}
}

// ends marks OnExpiration or OnComplete as started, noting whether a
// TryComplete is running.
func (o *stressOp) ends() {
	o.ending.Store(1)
	if o.inTry.Load() != 0 {
		o.afterEnd.Store(true)
	}
}

func (o *stressOp) win() bool {
	if o.ForceComplete() {
		o.wins.Add(1)
		return true
	}
	return false
}

func (o *stressOp) OnExpiration() {
	o.ends()
	o.expirations.Add(1)
	if time.Since(o.start) < o.Timeout {
		o.early.Store(true)
	}
}

func (o *stressOp) OnComplete() {
	o.ends()
	if o.completes.Add(1) == 1 {
		o.ended.Done()
	}
}

// TestStressEveryOperationEndsOnce has goroutines make events on shared keys
// and call CheckAndComplete, CancelForKey (force-completing what it
// returns) and ForceComplete, while operations are submitted and time out.
// Every operation must end exactly once: one OnComplete, and either one
// winning ForceComplete (through TryComplete or not) or one OnExpiration,
// never early; no TryComplete may overlap another of its operation, or run
// while or after OnExpiration or OnComplete does.
func TestStressEveryOperationEndsOnce(t *testing.T) {
	stress(t)
}

// stress runs the test of TestStressEveryOperationEndsOnce on a purgatory
// made with opts.
func stress(t *testing.T, opts ...Option) {
	n := 20_000
	if raceEnabled || testing.Short() {
		n = 5000
	}
	synctest.Test(t, func(t *testing.T) {
		p := newP[int](t, append([]Option{WithPurgeInterval(50)}, opts...)...)
		var events [stressKeys]atomic.Int64
		var ended sync.WaitGroup
		ended.Add(n)
		ops := make([]*stressOp, n)
		submitted := make(chan *stressOp, n)
		stop := make(chan struct{})
		var workers sync.WaitGroup

		// The submitter.
		workers.Go(func() {
			defer close(submitted)
			rng := rand.New(rand.NewPCG(1, 1))
			for i := range ops {
				keys := []int{rng.IntN(stressKeys), rng.IntN(stressKeys), rng.IntN(stressKeys)}[:1+rng.IntN(3)]
				op := &stressOp{
					Op:     Op{Timeout: time.Duration(rng.IntN(30)) * time.Millisecond},
					keys:   keys,
					events: &events,
					need:   int64(rng.IntN(60)),
					start:  time.Now(),
					ended:  &ended,
				}
				op.baseline = op.seen()
				ops[i] = op
				if _, err := p.TryCompleteElseWatch(op, keys...); err != nil {
					t.Errorf("op %d: %v", i, err)
					ended.Done()
					continue
				}
				submitted <- op
				if rng.IntN(8) == 0 {
					time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
				}
			}
		})

		// Checkers: an event on a key, then CheckAndComplete of it.
		for w := range 6 {
			workers.Go(func() {
				rng := rand.New(rand.NewPCG(2, uint64(w)))
				for {
					select {
					case <-stop:
						return
					default:
					}
					k := rng.IntN(stressKeys)
					events[k].Add(1)
					if _, err := p.CheckAndComplete(k); err != nil {
						t.Error(err)
					}
					switch rng.IntN(200) {
					case 0:
						canceled, err := p.CancelForKey(k)
						if err != nil {
							t.Error(err)
						}
						for _, op := range canceled {
							op.(*stressOp).win()
						}
					default:
						time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
					}
				}
			})
		}

		// A canceller: force-completes some operations from outside.
		workers.Go(func() {
			rng := rand.New(rand.NewPCG(3, 3))
			for op := range submitted {
				if rng.IntN(10) == 0 {
					op.win()
				}
			}
		})

		allEnded := make(chan struct{})
		go func() {
			ended.Wait()
			close(allEnded)
		}()
		select {
		case <-allEnded:
		case <-time.After(2 * time.Second): // of fake time; every timeout is shorter
			stuck := 0
			for _, op := range ops {
				if op != nil && op.completes.Load() == 0 {
					stuck++
				}
			}
			t.Errorf("%d operations never ended", stuck)
			ended.Add(-stuck)
			<-allEnded
		}
		close(stop)
		workers.Wait()

		expired, watched := 0, 0
		for i, op := range ops {
			require.Equal(t, int32(1), op.completes.Load(), "op %d: OnComplete calls", i)
			require.Equal(t, int32(1), op.wins.Load()+op.expirations.Load(),
				"op %d: %d winning ForceCompletes, %d expirations", i, op.wins.Load(), op.expirations.Load())
			require.False(t, op.early.Load(), "op %d expired early", i)
			require.False(t, op.overlap.Load(), "op %d: TryComplete overlapped", i)
			require.False(t, op.afterEnd.Load(), "op %d: TryComplete ran while or after OnExpiration or OnComplete", i)
			expired += int(op.expirations.Load())
			if op.ref(0).l != nil { // watched under a key before it completed
				watched++
			}
		}
		t.Logf("%d operations, %d expired", n, expired)
		s := p.Stats()
		assert.Equal(t, uint64(watched), s.Completed, "Stats.Completed: the operations completed after being watched")
		assert.Equal(t, uint64(expired), s.Expired, "Stats.Expired")
		assert.Positive(t, expired, "no operation expired: the test does not test expiry")
		assert.Less(t, expired, n, "every operation expired: the test does not test completion")
		assert.Zero(t, p.NumDelayed())
		checkInvariants(t, p)
		for k := range stressKeys {
			_, err := p.CheckAndComplete(k)
			require.NoError(t, err)
		}
		assert.Zero(t, p.Watched())
	})
}
