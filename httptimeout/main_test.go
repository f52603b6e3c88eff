package httptimeout_test

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// failAfter is a failure detector, never a synchronisation point: it bounds
// how long a test outside a synctest bubble waits for something that must
// happen.
const failAfter = 10 * time.Second

// wait waits for c to be closed or to yield a value, or fails the test.
func wait[T any](t testing.TB, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(failAfter):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// newTimer returns a running SystemTimer that is stopped when the test ends.
func newTimer(t testing.TB) *timingwheel.SystemTimer {
	t.Helper()
	st, err := timingwheel.New()
	require.NoError(t, err)
	t.Cleanup(func() { st.Stop() })
	return st
}

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
		wait(t, b.wrote, "a log message")
	}
}
