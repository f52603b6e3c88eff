//go:build !race

package conctest

const raceEnabled = false
