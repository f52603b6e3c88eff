// Package owntests has tests of its own that use its timers: the
// migration sees them and follows the timers into them.
package owntests

import "time"

type cache struct {
	sweep  *time.Timer // a test gives it a channel timer
	expire *time.Timer
	items  map[string]string
}

func newCache(every, ttl time.Duration) *cache {
	c := &cache{items: map[string]string{}}
	c.sweep = time.AfterFunc(every, c.clean)
	c.expire = time.AfterFunc(ttl, c.clean) // want `time.AfterFunc becomes timingwheel.AfterFunc: cache.expire holds a \*timingwheel.Timer`
	return c
}

func (c *cache) clean() { clear(c.items) }
