package twclock_test

import (
	"testing"
	"testing/synctest"
	"time"

	twclock "github.com/go-timingwheel/timingwheel/contrib/clock"
	"k8s.io/utils/clock"
)

// What k8s's clock has and clockwork lacks; adapters_test.go tests the
// rest on both adapters.

func TestK8sTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c clock.WithTickerAndDelayedExecution = twclock.NewK8s(newWheel(t))
		var _ clock.PassiveClock = c
		start := c.Now()
		ch := c.Tick(10 * time.Millisecond)
		due(t, "first tick", recv(t, "first tick", ch), start, 10*time.Millisecond)
		due(t, "second tick", recv(t, "second tick", ch), start, 20*time.Millisecond)
		if c.Tick(0) != nil || c.Tick(-1) != nil {
			t.Error("Tick(d <= 0) != nil, want nil as time.Tick")
		}
	})
}
