// Package leaky checks its tests for leaked goroutines, which would find
// the default wheel's.
package leaky // want `package leaky not migrated: pool_test.go checks for leaked goroutines with goleak`

import "time"

func idle(d time.Duration) <-chan time.Time { return time.After(d) }
