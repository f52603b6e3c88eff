package timingwheel

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The layers of a chain of contexts, each derived from the one before.
type layerKind int

const (
	layerValue         layerKind = iota // context.WithValue
	layerEmbed                          // a custom type embedding its parent
	layerCancel                         // context.WithCancelCause
	layerTimeout                        // context.WithTimeout, 2h: never fires here
	layerWheel                          // SystemTimer.WithTimeout, 1h, or in the reference chain context.WithTimeout
	layerWithoutCancel                  // context.WithoutCancel
	numLayerKinds
)

func (k layerKind) String() string {
	return [...]string{"value", "embed", "cancel", "timeout", "wheel", "withoutCancel"}[k]
}

func (k layerKind) cancelable() bool { return k == layerCancel || k == layerTimeout || k == layerWheel }

// A chain is the contexts made from a list of layer kinds over a root, and
// their cancel functions (nil for layers that have none).
type chain struct {
	ctxs    []context.Context
	cancels []func(error)
}

// makeChain builds the layers over root; cancelRoot cancels root.
func makeChain(root context.Context, cancelRoot func(error), kinds []layerKind, wheel func(context.Context, time.Duration) (context.Context, context.CancelFunc)) chain {
	c := chain{ctxs: []context.Context{root}, cancels: []func(error){cancelRoot}}
	for i, k := range kinds {
		parent := c.ctxs[len(c.ctxs)-1]
		var ctx context.Context
		var cancel func(error)
		switch k {
		case layerValue:
			ctx = context.WithValue(parent, ctxKey{}, i)
		case layerEmbed:
			ctx = embedCtx{parent}
		case layerCancel:
			var cc context.CancelCauseFunc
			ctx, cc = context.WithCancelCause(parent)
			cancel = cc
		case layerTimeout, layerWheel:
			var cf context.CancelFunc
			if k == layerTimeout {
				ctx, cf = context.WithTimeout(parent, 2*time.Hour)
			} else {
				ctx, cf = wheel(parent, time.Hour)
			}
			cancel = func(error) { cf() }
		case layerWithoutCancel:
			ctx = context.WithoutCancel(parent)
		}
		c.ctxs = append(c.ctxs, ctx)
		c.cancels = append(c.cancels, cancel)
	}
	return c
}

// syncDone reports which layers of the chain (index 0 is the root) a cancel
// of layer p ends before it returns, and which it ends at all. A
// cancellation moves synchronously from a cancelable context to the
// standard ones below it, and from a wheel context to the wheel contexts
// below it whatever lies between; from a standard cancelable context to a
// wheel context below it, only through AfterFunc. Readers of such a wheel
// context cannot tell (they look at its parent): seen reports the layers
// that read as done right after the cancel returns, whoever has run: the
// synchronous ones and the wheel layers that are done.
func syncDone(kinds []layerKind, p int) (sync, done, seen []bool) {
	n := len(kinds) + 1
	sync, done, seen = make([]bool, n), make([]bool, n), make([]bool, n)
	kind := func(i int) layerKind {
		if i == 0 {
			return layerCancel // the root
		}
		return kinds[i-1]
	}
	sync[p], done[p] = true, true
	for i := p + 1; i < n; i++ {
		switch k := kind(i); k {
		case layerWithoutCancel:
			// Nothing below is canceled from above.
		case layerWheel:
			done[i] = done[i-1]
			// The nearest cancelable ancestor, and the nearest wheel one.
			j := i - 1
			for j > 0 && !kind(j).cancelable() && kind(j) != layerWithoutCancel {
				j--
			}
			w := i - 1
			for w > 0 && kind(w) != layerWheel {
				w--
			}
			if kind(j) == layerWheel {
				sync[i] = done[i] && sync[j]
			} else {
				sync[i] = done[i] && kind(w) == layerWheel && w >= p && sync[w]
			}
		default:
			done[i], sync[i] = done[i-1], sync[i-1]
		}
	}
	for i := range seen {
		seen[i] = sync[i] || done[i] && kind(i) == layerWheel
	}
	return sync, done, seen
}

// TestContextLayers builds random chains of value, custom, standard
// cancelable, WithoutCancel and wheel layers, twice: with wheel contexts,
// and with the standard library's in their place. It cancels the same
// layer in both, and demands the same: the layers above untouched; right
// after the cancel returns, every layer that a cancellation reaches
// synchronously done; then every layer below done with the same Err and
// Cause; and no goroutine per derived context at any time.
func TestContextLayers(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	rng := rand.New(rand.NewPCG(10, 10))
	base := contextGoroutines()
	lagged := 0
	for run := range 500 {
		kinds := make([]layerKind, 1+rng.IntN(8))
		for i := range kinds {
			kinds[i] = layerKind(rng.IntN(int(numLayerKinds)))
			if kinds[i] == layerWithoutCancel && rng.IntN(3) > 0 {
				kinds[i] = layerWheel // rarer
			}
		}
		var cancelable []int
		for i, k := range kinds {
			if k.cancelable() {
				cancelable = append(cancelable, i+1)
			}
		}
		rootCanceled := len(cancelable) == 0 || rng.IntN(4) == 0
		p := 0
		if !rootCanceled {
			p = cancelable[rng.IntN(len(cancelable))]
		}
		name := fmt.Sprintf("run %d: layers %v, cancel %d", run, kinds, p)

		newRoot := func() (context.Context, func(error)) {
			ctx, cancel := context.WithCancelCause(context.Background())
			return ctx, cancel
		}
		wroot, wcancel := newRoot()
		sroot, scancel := newRoot()
		wheel := makeChain(wroot, wcancel, kinds, st.WithTimeout)
		std := makeChain(sroot, scancel, kinds, context.WithTimeout)
		require.Equal(t, base, contextGoroutines(), "%s: goroutines kept for derived contexts", name)

		cause := fmt.Errorf("cause %d", run)
		std.cancels[p](cause)
		wheel.cancels[p](cause)
		sync, done, seen := syncDone(kinds, p)
		// Deepest first: looking at a wheel context ends it if its
		// parent is done, which must not hide a layer below that lags.
		for i := len(wheel.ctxs) - 1; i >= p; i-- {
			if !seen[i] {
				continue
			}
			select {
			case <-wheel.ctxs[i].Done():
			default:
				t.Fatalf("%s: layer %d not done right after the cancel returned", name, i)
			}
		}
		for i := len(wheel.ctxs) - 1; i >= p; i-- {
			if done[i] && !sync[i] && wheel.ctxs[i].Err() == nil {
				lagged++
			}
		}
		for i := range wheel.ctxs {
			what := fmt.Sprintf("%s: layer %d", name, i)
			if !done[i] {
				assert.NoError(t, std.ctxs[i].Err(), what)
				assert.NoError(t, wheel.ctxs[i].Err(), what)
				continue
			}
			testwait.Recv(t, std.ctxs[i].Done(), what)
			testwait.Recv(t, wheel.ctxs[i].Done(), what)
			require.Equal(t, std.ctxs[i].Err(), wheel.ctxs[i].Err(), what)
			require.Equal(t, context.Cause(std.ctxs[i]), context.Cause(wheel.ctxs[i]), what)
		}
		for i := range wheel.cancels {
			if wheel.cancels[i] != nil {
				wheel.cancels[i](nil)
				std.cancels[i](nil)
			}
		}
	}
	t.Logf("layers that a cancellation reaches through AfterFunc, not done right after the cancel: %d", lagged)
	assert.Zero(t, st.Len(), "every wheel entry released")
}

// TestContextLayersExpire: the same chains with every wheel layer due at
// the same time; once the expiry has run, every layer below a wheel one is
// done with DeadlineExceeded, synchronously, and no other is.
func TestContextLayersExpire(t *testing.T) {
	fc := newFakeClock()
	st := newManual(t, fc)
	defer st.Stop()
	rng := rand.New(rand.NewPCG(11, 11))
	for run := range 500 {
		kinds := make([]layerKind, 1+rng.IntN(8))
		for i := range kinds {
			kinds[i] = layerKind(rng.IntN(int(numLayerKinds)))
		}
		name := fmt.Sprintf("run %d: layers %v", run, kinds)
		root, cancelRoot := context.WithCancelCause(context.Background())
		c := makeChain(root, cancelRoot, kinds, st.WithTimeout)
		fc.Add(time.Hour)
		st.step()
		expired := false
		for i, ctx := range c.ctxs {
			if i > 0 {
				switch kinds[i-1] {
				case layerWheel:
					expired = true
				case layerWithoutCancel:
					expired = false
				}
			}
			what := fmt.Sprintf("%s: layer %d", name, i)
			if !expired {
				assert.NoError(t, ctx.Err(), what)
				continue
			}
			select {
			case <-ctx.Done():
			default:
				t.Fatalf("%s: not done right after the expiry ran", what)
			}
			require.Equal(t, context.DeadlineExceeded, ctx.Err(), what)
			require.Equal(t, context.DeadlineExceeded, context.Cause(ctx), what)
		}
		for _, cancel := range c.cancels {
			if cancel != nil {
				cancel(errors.New("done"))
			}
		}
	}
	assert.Zero(t, st.Len())
}
