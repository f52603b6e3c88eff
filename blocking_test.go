package timingwheel

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
