//go:build race

package conctest

const raceEnabled = true
