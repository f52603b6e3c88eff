package leaky

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestIdle(t *testing.T) {
	defer goleak.VerifyNone(t)
	<-idle(time.Millisecond)
}
