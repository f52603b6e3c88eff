package timingwheel

import "math"

// notQueued is a bucket's queued value while it is not in the delay queue.
// Being the largest int64, it makes "is exp earlier than what is queued?" the
// only test placement needs.
const notQueued = math.MaxInt64

// A bucket is one slot of a wheel level: a doubly linked list of timers with
// O(1) insert and remove (for level 0, a few used as one; see lanes), and
// the expiration under which it sits in the delay queue. A list is circular
// through a sentinel, so a timer can unlink itself without knowing which
// bucket holds it.
//
// All fields are guarded by the mutex of the shard that owns the bucket.
type bucket struct {
	root   lanes // the bucket's timers
	queued int64 // expiration in the delay queue, ns since the epoch; notQueued if none
	minD   int64 // no timer in the bucket is due before this deadline, ns since the epoch
	// placed counts the timers placed in the bucket since it was last
	// empty and not queued: its timers, and those of them stopped or moved
	// since, which unlink cannot uncount (a timer does not know its
	// bucket). SystemTimer.DueProfile weighs buckets by it.
	placed uint64
}

// bucketRef is what the delay queue holds: a bucket, its level, and the
// expiration it was queued under. A bucket re-queued under an earlier
// expiration leaves a stale ref behind, which expire recognizes by comparing
// exp with queued.
type bucketRef struct {
	b   *bucket
	lv  *level
	exp int64 // ns since the epoch
}

// initList makes l an empty list.
func (l *Timer) initList() { l.next, l.prev = l, l }

// empty reports whether the list with sentinel l has no timers.
func (l *Timer) empty() bool { return l.next == l }

// pushBack links t at the end of the list with sentinel l.
func (l *Timer) pushBack(t *Timer) {
	t.prev = l.prev
	t.next = l
	l.prev.next = t
	l.prev = t
}

// unlink removes t from whatever list holds it.
func (t *Timer) unlink() {
	t.prev.next = t.next
	t.next.prev = t.prev
	t.next, t.prev = nil, nil
}

// moveAllTo appends every timer of the list with sentinel l to the list with
// sentinel dst and leaves l empty, in O(1).
func (l *Timer) moveAllTo(dst *Timer) {
	if l.empty() {
		return
	}
	first, last := l.next, l.prev
	first.prev = dst.prev
	dst.prev.next = first
	last.next = dst
	dst.prev = last
	l.initList()
}

// numLanes is how many lists a level-0 bucket has. A list of timers
// scattered over the heap is walked one cache miss after another, each
// waiting for the last to resolve the next link; walking several lists side
// by side lets those misses overlap. Level 0 is where that happens: its
// buckets are filled by cascades, a timer in every few hundred from each
// upper bucket, and walked when due. An upper bucket's list is filled in
// nearly allocation order and walked in it, so one list serves there. A
// power of two.
const numLanes = 8

// lanes is a set of doubly linked timer lists that is used as one list: a
// timer goes on the lanes in turn, and O(1) removal still needs only the
// timer's own links. Order across lanes is not kept.
type lanes struct {
	lane []Timer // sentinels: 1 or numLanes of them
	turn uint32  // lane of the next push
}

// init makes l a set of empty lanes with the given sentinels.
func (l *lanes) init(sentinels []Timer) {
	l.lane = sentinels
	for i := range l.lane {
		l.lane[i].initList()
	}
}

func (l *lanes) empty() bool {
	for i := range l.lane {
		if !l.lane[i].empty() {
			return false
		}
	}
	return true
}

func (l *lanes) pushBack(t *Timer) {
	l.lane[l.turn&uint32(len(l.lane)-1)].pushBack(t)
	l.turn++
}

// moveAllTo moves every timer of l to dst, which has as many lanes, lane by
// lane.
func (l *lanes) moveAllTo(dst *lanes) {
	for i := range l.lane {
		l.lane[i].moveAllTo(&dst.lane[i])
	}
}

// holds reports whether t is on one of the lanes; it walks them all.
func (l *lanes) holds(t *Timer) bool {
	for i := range l.lane {
		for u := l.lane[i].next; u != &l.lane[i]; u = u.next {
			if u == t {
				return true
			}
		}
	}
	return false
}
