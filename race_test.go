//go:build race

package timingwheel

// raceEnabled: the race detector makes tests that push a million timers
// through the wheel take many seconds; they shrink under it.
const raceEnabled = true
