package timingwheel

import (
	"runtime"
	"testing"
)

// TestShardLocality: with withProcessorShards, the timers one goroutine
// makes in a row go to one shard, the one its processor holds (see
// shardFor); by address, the default, they spread over every shard. A goroutine may move to another
// processor, and a garbage collection may deal tokens anew, so the test
// asks for most, not all.
func TestShardLocality(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops a quarter of what is put in it, at random")
	}
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	st := mustNew(t, withProcessorShards())
	defer st.Stop()
	if len(st.shards) < 2 {
		t.Skip("one shard")
	}
	count := map[*shard]int{}
	const n = 1000
	for range n {
		tm, err := st.AfterFunc(1<<40, noop)
		if err != nil {
			t.Fatal(err)
		}
		count[tm.sh]++
		tm.Stop()
	}
	most := 0
	for _, c := range count {
		most = max(most, c)
	}
	if most < n*9/10 {
		t.Fatalf("the most used of %d shards got %d of %d timers made in a row: not local", len(st.shards), most, n)
	}
	// By address (the default), they spread.
	st2 := mustNew(t)
	defer st2.Stop()
	count = map[*shard]int{}
	for range n {
		tm, _ := st2.AfterFunc(1<<40, noop)
		count[tm.sh]++
		tm.Stop()
	}
	if len(count) < 2 {
		t.Fatalf("by address, %d timers went to %d shard", n, len(count))
	}
}
