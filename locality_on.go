//go:build timingwheel_locality

package timingwheel

import (
	"sync"
	"sync/atomic"

	"github.com/go-timingwheel/timingwheel/internal/goid"
)

// The locality instrument: touch and touchShared append to the log of the
// calling goroutine, if it records (recordTouches); goroutines that do not
// record (the driver, the workers, other tests) pay for a goroutine id and a
// map look-up, which only this build tag compiles in.

// A touchRec is one touch: the shard (nil for shared memory) and what.
type touchRec struct {
	sh   *shard
	what string
}

// touchLogs maps the id of each recording goroutine to its log, which only
// that goroutine writes and reads.
var touchLogs sync.Map // int64 -> *[]touchRec

func touch(sh *shard, what string) { logTouch(touchRec{sh, what}) }

func touchShared(what string) { logTouch(touchRec{nil, what}) }

func logTouch(r touchRec) {
	if l, ok := touchLogs.Load(goid.Get()); ok {
		p := l.(*[]touchRec)
		*p = append(*p, r)
	}
}

// recordDrivers, set by a test before New, makes every driver goroutine
// that New starts record its touches into driverLogs, by shard. A log is
// read once the driver has exited (SystemTimer.Stop waits for it).
var (
	recordDrivers atomic.Bool
	driverLogs    sync.Map // *shard -> *[]touchRec
)

// driverTouches starts recording the touches of sh's driver, if
// recordDrivers is set; the driver calls the function it returns as it
// exits.
func driverTouches(sh *shard) (stop func()) {
	if !recordDrivers.Load() {
		return func() {}
	}
	log, stop := recordTouches()
	driverLogs.Store(sh, log)
	return stop
}

// recordTouches starts recording the calling goroutine's touches into the
// log it returns, until stop is called.
func recordTouches() (log *[]touchRec, stop func()) {
	id := goid.Get()
	log = new([]touchRec)
	touchLogs.Store(id, log)
	return log, func() { touchLogs.Delete(id) }
}
