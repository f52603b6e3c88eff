// Package proc tells which processor (the runtime's P) runs the caller.
//
// Go has no API for it. The runtime's procPin, which pins the goroutine to
// its processor and returns the processor's id, is one of the functions it
// keeps reachable by go:linkname for the packages that have long used it
// (go.dev/issue/67401: "Do not remove or change the type signature"); it is
// what sync.Pool uses to find its per-processor caches. Pinning and
// unpinning cost a few instructions and no atomic one.
package proc

import _ "unsafe" // go:linkname

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// Pin pins the calling goroutine to its processor and returns the
// processor's id, in [0, GOMAXPROCS). Until Unpin, the goroutine is not
// preempted and no other goroutine runs on that processor: memory only
// that processor's pinned goroutines write needs no atomic instruction,
// as a sync.Pool's per-processor cache needs none. Between Pin and Unpin
// the caller must not block, allocate much, or call code of others.
func Pin() int { return procPin() }

// Unpin undoes Pin.
func Unpin() { procUnpin() }

// ID returns the id of the processor the calling goroutine runs on, in
// [0, GOMAXPROCS). The goroutine may move to another processor as soon as
// ID returns: the id is a hint for locality, never for correctness.
func ID() int {
	id := procPin()
	procUnpin()
	return id
}
