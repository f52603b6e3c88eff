package idleconn_test

import (
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tick is the tick of the SystemTimers of the tests: New's default.
const tick = time.Millisecond

// newTimer returns a running SystemTimer that is stopped when the test ends.
func newTimer(t testing.TB, opts ...timingwheel.Option) *timingwheel.SystemTimer {
	t.Helper()
	st, err := timingwheel.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { st.Stop() })
	return st
}
