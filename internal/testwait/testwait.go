// Package testwait is how the tests of every package wait for something
// that must happen: a receive from a channel, bounded by a failure
// detector that is never a synchronisation point.
package testwait

import (
	"testing"
	"time"
)

// FailAfter bounds how long a test waits for something that must happen;
// reaching it fails the test.
const FailAfter = 10 * time.Second

// Recv returns what c yields (a closed c yields the zero value), or fails
// the test if nothing comes within FailAfter. what names the awaited event
// in the failure message.
func Recv[T any](t testing.TB, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(FailAfter):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}
