package timingwheel

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestContextConcurrentEnds makes wheel contexts under a wheel context and
// a standard one from many goroutines at once, while their deadlines pass,
// the callers cancel them, the parents end and the SystemTimer stops, all
// racing: every context ends, each with an error that is one of the ways it
// could end, a context ended by its parent with the parent's, its entry
// released; run with -race it checks the locking.
func TestContextConcurrentEnds(t *testing.T) {
	for round := range 20 {
		st := mustNew(t)
		wheelParent, cancelWheelParent := st.WithTimeout(context.Background(), time.Duration(1+round%5)*time.Millisecond)
		stdParent, cancelStdParent := context.WithCancelCause(context.Background())
		var wg sync.WaitGroup
		ctxs := make(chan context.Context, 2*8*64)
		for g := range 8 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
				for range 64 {
					parent := context.Context(wheelParent)
					switch rng.IntN(4) {
					case 1:
						parent = stdParent
					case 2:
						parent = context.WithValue(wheelParent, ctxKey{}, g)
					case 3:
						std, cancel := context.WithCancel(wheelParent)
						defer cancel()
						parent = std
					}
					ctx, cancel := st.WithTimeout(parent, time.Duration(rng.IntN(3000))*time.Microsecond)
					child, cancelChild := context.WithCancel(embedCtx{ctx})
					defer cancelChild()
					switch rng.IntN(3) {
					case 0:
						cancel()
					case 1:
						go cancel()
					default:
						defer cancel()
					}
					if rng.IntN(2) == 0 {
						_ = ctx.Done() // make the inner context now, or not at all
					}
					ctxs <- ctx
					ctxs <- child
				}
			})
		}
		time.Sleep(time.Millisecond)
		switch round % 3 {
		case 0:
			cancelWheelParent()
		case 1:
			cancelStdParent(errBoom)
		case 2:
			st.Stop()
		}
		wg.Wait()
		close(ctxs)
		cancelWheelParent()
		cancelStdParent(errBoom)
		st.Stop()
		for ctx := range ctxs {
			testwait.Recv(t, ctx.Done(), "a context's end")
			err, cause := ctx.Err(), context.Cause(ctx)
			require.Contains(t, []error{context.Canceled, context.DeadlineExceeded}, err)
			require.Contains(t, []error{context.Canceled, context.DeadlineExceeded, errBoom, ErrStopped}, cause)
		}
		assert.Zero(t, st.Len())
	}
}

// TestContextConcurrentSystemStop races wheel contexts' birth, expiry and
// cancel against SystemTimer.Stop. Once Stop has returned and the creators
// are done, every context must be done: a context whose timer Stop neither
// returned nor ran would stay live forever.
func TestContextConcurrentSystemStop(t *testing.T) {
	stress(t, func(t *testing.T) {
		for round := range iters(60) {
			st := mustNew(t, WithTick(time.Millisecond))
			parent, pcancel := context.WithCancel(context.Background())
			const g = 4
			ctxs := make([][]context.Context, g)
			var wg sync.WaitGroup
			var stopping atomic.Bool
			for k := range g {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(round), uint64(k)))
					for !stopping.Load() || rng.IntN(4) != 0 {
						var p context.Context = parent
						if len(ctxs[k]) > 0 && rng.IntN(3) == 0 {
							p = ctxs[k][rng.IntN(len(ctxs[k]))] // a wheel parent
						}
						ctx, cancel := st.WithTimeout(p, time.Duration(rng.IntN(3000))*time.Microsecond)
						ctxs[k] = append(ctxs[k], ctx)
						if rng.IntN(3) == 0 {
							go cancel()
						}
						if len(ctxs[k]) > 2000 {
							break
						}
					}
				})
			}
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			stopping.Store(true)
			st.Stop()
			wg.Wait()
			for k := range g {
				for i, ctx := range ctxs[k] {
					if ctx.Err() == nil {
						t.Fatalf("round %d: context %d/%d is live after SystemTimer.Stop", round, k, i)
					}
				}
			}
			pcancel()
		}
	})
}
