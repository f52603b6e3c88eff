//go:build race

package timingwheel

// raceEnabled: under the race detector each processor's count of pushes
// is not kept (see localShardPush), and tests that push a million timers
// through the wheel shrink.
const raceEnabled = true
