// Package bubbled tests its timeouts in synctest bubbles, whose fake
// clock the default wheel does not follow.
package bubbled // want `package bubbled not migrated: clock_test.go runs tests in testing/synctest bubbles`

import "time"

func expire(d time.Duration, f func()) *time.Timer { return time.AfterFunc(d, f) }
