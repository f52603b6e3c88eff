// Package timingwheel is a stand-in with the few names the aliased test
// package uses, so that it type-checks without the module.
package timingwheel

import "time"

type Timer struct{}

func (*Timer) Stop() bool { return false }

func AfterFunc(d time.Duration, f func()) *Timer { return nil }
