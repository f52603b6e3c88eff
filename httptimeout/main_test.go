package httptimeout_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/go-timingwheel/timingwheel/internal/defaulttimer"
	"github.com/go-timingwheel/timingwheel/internal/testwait"
	"go.uber.org/goleak"
)

// The default SystemTimer (New(nil, ...)) never stops in a program: it is
// stopped after the tests, so that goleak reports only real leaks.
func TestMain(m *testing.M) { goleak.VerifyTestMain(defaulttimer.Main(m)) }

// A logBuffer is a log destination that tests can read and wait on.
type logBuffer struct {
	wrote chan struct{} // gets a value per Write, while there is room

	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func newLogBuffer() *logBuffer { return &logBuffer{wrote: make(chan struct{}, 100)} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitWrites waits until n messages have been logged, or fails the test.
func (b *logBuffer) waitWrites(t testing.TB, n int) {
	t.Helper()
	for range n {
		testwait.Recv(t, b.wrote, "a log message")
	}
}
