package refuse

import . "time"

// A file that dot-imports time.
func dotted() {
	Sleep(Millisecond) // want `time.Sleep: not migrated: the file dot-imports time`
}
