package timingwheel

import (
	"runtime"
	"testing"
)

// TestShardLocality: by default, the timers one goroutine makes in a row go
// to one shard, the one its processor holds (see shardFor); with
// withAddressShards they spread over every shard. A goroutine may move to
// another processor, and a garbage collection may deal tokens anew, so the
// test asks for most, not all.
func TestShardLocality(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops a quarter of what is put in it, at random")
	}
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	st := mustNew(t)
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
	// By address, they spread.
	st2 := mustNew(t, withAddressShards())
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

// TestShardMigration: a timer bound on one shard and re-armed by a
// goroutine whose processor holds another moves there when Reset re-arms it
// (not pending), and stays there, pending, stopped and re-armed again from
// that processor; a Reset of a pending timer never moves it. Run on one
// processor, so that the token the test's goroutine gets is known.
func TestShardMigration(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops a quarter of what is put in it, at random")
	}
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	st := mustNew(t)
	defer st.Stop()
	if len(st.shards) < 2 {
		t.Skip("one shard")
	}
	if st.localShard(nil) == nil {
		t.Skip("no shard token for this processor")
	}
	// Bound on another shard, as on an accept loop's processor: the
	// Reset that re-arms it moves it here. The goroutine may itself move
	// to another processor meanwhile (then the round says nothing): a
	// few rounds make one that does.
	var tm Timer
	st.Bind(&tm, noop)
	anchorOn(t, st)
	moves := 0
	for range 10 {
		tm.Stop()
		here := st.localShard(nil)
		var other *shard
		for i := range st.shards {
			if &st.shards[i] != here {
				other = &st.shards[i]
				break
			}
		}
		tm.sh = other // stopped: nobody else reads it
		tm.Reset(1 << 40)
		if now := st.localShard(nil); now == here && tm.shard() == here {
			moves++
		} else if now == here {
			t.Fatal("a Reset that re-armed a stopped timer on another processor's shard did not move it")
		}
	}
	if moves == 0 {
		t.Fatal("no round stayed on one processor")
	}
	moved := tm.shard()
	tm.Reset(1 << 41) // pending: postponed in place
	if tm.shard() != moved {
		t.Fatal("a Reset of a pending timer moved it")
	}
	for range 100 {
		tm.Stop()
		tm.Reset(1 << 40)
	}
	if s := st.Stats(); s.Migrated > 20 {
		t.Fatalf("%d migrations for 110 re-arms on one goroutine: the timer does not stay", s.Migrated)
	} else if s.Migrated == 0 {
		t.Fatal("Stats.Migrated is 0 after a move")
	}
	tm.Stop()
}

// anchorOn arms a timer a minute out, so that a Reset to later re-arms a
// timer that is not pending without the lock (see Timer.resetTo).
func anchorOn(t *testing.T, st *SystemTimer) {
	t.Helper()
	if _, err := st.AfterFunc(60e9, noop); err != nil {
		t.Fatal(err)
	}
}
