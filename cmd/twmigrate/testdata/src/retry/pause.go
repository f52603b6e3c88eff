package retry

import "time"

// pause waits between rounds: every use of time here moves, and so does
// the import.
func pause() {
	time.Sleep(pauseFor) // want `time.Sleep becomes timingwheel.Sleep`
}
