//go:build !timingwheel_locality

package timingwheel

// touch records that the calling goroutine locked or wrote shard sh's
// memory (its lock, its incoming stack, a move off it), or, as "local",
// that localShard found sh to be its processor's; touchShared that it
// wrote memory every shard shares (WithMaxPending's count, the executor's
// queue). Without the timingwheel_locality build tag they are
// empty and the compiler removes them; with it, they feed the locality
// test (locality_on.go, locality_tag_test.go).
func touch(*shard, string) {}

func touchShared(string) {}

// driverTouches lets the locality test record what sh's driver touches;
// without the build tag it does nothing.
func driverTouches(*shard) (stop func()) { return nop }

func nop() {}
