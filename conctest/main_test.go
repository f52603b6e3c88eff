package conctest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind: every
// SystemTimer of a history is stopped, and Stop returns only after every
// goroutine it started has exited.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
