package owntests_test

import (
	"testing"
	"time"
)

func TestOutside(t *testing.T) {
	d := time.NewTimer(time.Millisecond) // want `time.NewTimer becomes timingwheel.NewTimer: d holds a \*timingwheel.ChanTimer`
	<-d.C
}
