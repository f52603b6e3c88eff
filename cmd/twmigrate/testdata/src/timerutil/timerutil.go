// Package timerutil has the helpers that programs keep for their
// timers: other packages call them, so their timers stay the time
// package's.
package timerutil

import "time"

// StopAndDrain stops t and empties its channel.
func StopAndDrain(t *time.Timer) { // want `parameter t of StopAndDrain: not migrated, stays \*time.Timer: exported function StopAndDrain: other packages may call it, and twmigrate does not follow timers across packages`
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
}

// NewIdle returns an idle timer that calls f.
func NewIdle(d time.Duration, f func()) *time.Timer { // want `the result of NewIdle: not migrated, stays \*time.Timer: exported function NewIdle: other packages may call it`
	return time.AfterFunc(d, f)
}

// Pool keeps timers for others.
type Pool struct {
	Timers []*time.Timer // want `Pool.Timers: not migrated, stays \*time.Timer: exported field Pool.Timers: other packages may use it`
}
