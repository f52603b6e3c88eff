package idleconn_test

import (
	"net"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel/internal/defaulttimer"
	"go.uber.org/goleak"
)

// The default SystemTimer (Wrap and Listen with a nil one) never stops in
// a program: it is stopped after the tests, so that goleak reports only
// real leaks.
func TestMain(m *testing.M) { goleak.VerifyTestMain(defaulttimer.Main(m)) }

// tick is the tick of the SystemTimers of the tests: New's default.
const tick = time.Millisecond

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
