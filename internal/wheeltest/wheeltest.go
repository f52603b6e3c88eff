// Package wheeltest is what the tests of the packages built on the wheel
// share. The root package's own tests cannot use it: it imports the root
// package.
package wheeltest

import (
	"testing"

	"github.com/go-timingwheel/timingwheel"
)

// New returns a SystemTimer made with opts, which is stopped when the test
// ends; it fails the test if the options are refused.
func New(t testing.TB, opts ...timingwheel.Option) *timingwheel.SystemTimer {
	t.Helper()
	st, err := timingwheel.New(opts...)
	if err != nil {
		t.Fatalf("timingwheel.New: %v", err)
	}
	t.Cleanup(func() { st.Stop() })
	return st
}
