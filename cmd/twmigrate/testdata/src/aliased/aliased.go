// Package aliased imports timingwheel under another name already: the
// rewrite uses it.
package aliased

import (
	"time"

	tw "github.com/go-timingwheel/timingwheel"
)

var (
	onWheel = tw.AfterFunc(time.Minute, func() {})
	onTime  = time.AfterFunc(time.Minute, func() {}) // want `time.AfterFunc becomes timingwheel.AfterFunc: onTime holds a \*timingwheel.Timer`
)

func stop() { onWheel.Stop(); onTime.Stop() }
