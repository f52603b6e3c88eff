package idleconn_test

import (
	"net"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/internal/defaulttimer"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The default SystemTimer (Wrap and Listen with a nil one) never stops in
// a program: it is stopped after the tests, so that goleak reports only
// real leaks.
func TestMain(m *testing.M) { goleak.VerifyTestMain(defaulttimer.Main(m)) }

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

// readOrWrite writes b to c if write, else reads into it.
func readOrWrite(c net.Conn, write bool, b []byte) error {
	var err error
	if write {
		_, err = c.Write(b)
	} else {
		_, err = c.Read(b)
	}
	return err
}
