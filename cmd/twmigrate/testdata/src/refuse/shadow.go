package refuse

import "time"

// The name timingwheel means something else here.
func shadowed(timingwheel int) {
	time.Sleep(time.Duration(timingwheel)) // want `time.Sleep: not migrated: the name timingwheel means var timingwheel int here`
}
