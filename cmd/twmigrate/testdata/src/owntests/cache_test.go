package owntests

import (
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	c := newCache(time.Hour, time.Hour)
	c.sweep.Stop()
	c.expire.Reset(time.Millisecond)
	c.sweep = time.NewTimer(time.Hour) // want `cache.sweep: not migrated, stays \*time.Timer: it is given both time.AfterFunc \(cache.go:15\) and time.NewTimer \(cache_test.go:12\) results`
	time.Sleep(10 * time.Millisecond)  // want `time.Sleep becomes timingwheel.Sleep`
}
