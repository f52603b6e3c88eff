//go:build !timingwheel_failpoints

package timingwheel

// failpoint marks a window between a state change and the writes that
// follow it, where another goroutine's operation on the same timer or shard
// can come in. Without the timingwheel_failpoints build tag it is empty and
// the compiler removes the call; with it, it yields or spins at random, so
// that the concurrency tests hit windows a few instructions wide in seconds
// instead of by luck (what etcd's gofail does). See failpoint_on.go.
func failpoint(string) {}

// failpointStall marks a window that a goroutine preempted by the OS may
// hold open for longer than a tick; with the tag it sometimes spins that
// long (see failpoint_on.go).
func failpointStall(string) {}

// failpointsOn reports whether failpoints are compiled in.
const failpointsOn = false
