// Package goid reads the current goroutine's id.
//
// The executor uses it for one thing: to tell whether SystemTimer.Stop is
// being called from inside a callback, so that Stop can wait for every other
// worker without waiting for itself. It is read once per worker start and once
// per Stop, never on a hot path.
package goid

import "runtime"

// Get returns the id of the calling goroutine, parsed from the first line of
// its stack trace ("goroutine 123 [running]:").
func Get() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		panic("goid: unexpected stack trace format")
	}
	var id int64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + int64(c-'0')
	}
	return id
}
