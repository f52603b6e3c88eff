package debounce

import (
	"sync"
	"time"
)

// debounced returns a function that runs the last f it was given, once
// it has not been called for after.
func debounced(after time.Duration) func(f func()) {
	var mu sync.Mutex
	var timer *time.Timer
	return func(f func()) {
		mu.Lock()
		defer mu.Unlock()
		if timer != nil {
			timer.Stop()
		}
		timer = time.AfterFunc(after, f) // want `time.AfterFunc becomes timingwheel.AfterFunc: timer holds a \*timingwheel.Timer`
	}
}
