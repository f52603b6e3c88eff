package timingwheel

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// TestPushCountBoundsTheStack: a shard's incoming stack holds about
// drainDepth timers at most: the pusher whose push makes the count reach
// it drains the stack. On a manual SystemTimer (no driver to drain it),
// armed an hour out with AfterFunc and with Reset of bound timers, one at a
// time: after each arming every stack is within drainDepth plus what the
// processors counted and have not added to their shards' counts (fewer
// than pushBatch each).
func TestPushCountBoundsTheStack(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	st := mustNew(t, withManual())
	defer st.Stop()
	deepest := func() int {
		most := 0
		for i := range st.shards {
			n := 0
			for tm := st.shards[i].incoming.Load(); tm != nil; tm = (*Timer)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&tm.next)))) {
				n++
			}
			most = max(most, n)
		}
		return most
	}
	const rounds = 10 * drainDepth
	bound := drainDepth + pushBatch*len(st.procs)
	check := func(how string, i int) {
		if d := deepest(); d > bound {
			t.Fatalf("%s: a stack holds %d timers after %d armings (bound %d): nobody drained it", how, d, i+1, bound)
		}
	}
	for i := range rounds {
		if _, err := st.AfterFunc(time.Hour, func() {}); err != nil {
			t.Fatal(err)
		}
		check("AfterFunc", i)
	}
	timers := make([]Timer, rounds)
	for i := range timers {
		st.Bind(&timers[i], func() {})
	}
	for i := range timers {
		timers[i].Reset(time.Hour) // re-armed from idle, without the lock
		check("Reset", i)
	}
	if st.Len() != 2*rounds {
		t.Fatalf("Len %d, want %d", st.Len(), 2*rounds)
	}
}

// TestProcCountReachesTheShard: every push a processor counts reaches its
// shard's count, pushBatch at a time: after n counted pushes, on whatever
// processors the goroutine ran, the shards' counts and the processors'
// own add up to n, and no processor holds pushBatch or more. (Under the
// race detector the pushers count every push on the shard.)
func TestProcCountReachesTheShard(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	st := mustNew(t, withManual())
	defer st.Stop()
	const n = 10*pushBatch + 7
	for range n {
		sh, pc := st.localShardPush(&st.shards[0], true)
		sh.countPush(pc) // as a pusher does
	}
	total := 0
	for i := range st.shards {
		total += int(st.shards[i].pushed.Load())
	}
	for i := range st.procs {
		c := st.procs[i].pushes
		if c >= pushBatch {
			t.Errorf("processor %d holds %d pushes, pushBatch is %d", i, c, pushBatch)
		}
		total += int(c)
	}
	if total != n {
		t.Fatalf("%d pushes counted, %d made", total, n)
	}
}

// TestProcCountsOwnCacheLines: the processors' counts are 128 bytes apart.
func TestProcCountsOwnCacheLines(t *testing.T) {
	if s := unsafe.Sizeof(procCount{}); s != 128 {
		t.Fatalf("a procCount is %d bytes, want 128", s)
	}
}
