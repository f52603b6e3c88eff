package timingwheel

import (
	"runtime"
	"testing"
)

// TestShardLocality: by default, the timers one goroutine makes in a row go
// to one shard, the one its processor holds (see shardFor); with
// withAddressShards they spread over every shard. A goroutine may move to
// another processor, so the test asks for most, not all.
func TestShardLocality(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector goroutines move between processors far more often (676 of 1000 timers on one shard, seen)")
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
// goroutine whose processor holds another moves there when Reset re-arms
// it (not pending), and stays there while re-armed from that processor; a
// Reset of a pending timer never moves it. The processor's shard is the
// test's (placeHook), so that the test runs under the race detector too.
func TestShardMigration(t *testing.T) {
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	st := mustNew(t)
	defer st.Stop()
	a, b := &st.shards[0], &st.shards[1]
	here := a
	st.placeHook = func() *shard { return here }
	var tm Timer
	st.Bind(&tm, noop) // bound on a, as on an accept loop's processor
	if tm.shard() != a {
		t.Fatal("Bind did not place the timer on the processor's shard")
	}
	anchorOn(t, st)
	here = b // re-armed by a goroutine on b's processor
	tm.Reset(1 << 40)
	if tm.shard() != b {
		t.Fatal("a Reset that re-armed an idle timer on another processor did not move it")
	}
	here = a
	tm.Reset(1 << 41) // pending: postponed in place
	if tm.shard() != b {
		t.Fatal("a Reset of a pending timer moved it")
	}
	here = b
	for range 100 {
		tm.Stop()
		tm.Reset(1 << 40)
	}
	if tm.shard() != b {
		t.Fatal("the timer left the shard of the processor that re-arms it")
	}
	if s := st.Stats(); s.Migrated != 1 {
		t.Fatalf("Stats.Migrated = %d after one move, want 1", s.Migrated)
	}
	tm.Stop()
	st.checkInvariants()
}

// anchorOn arms a timer a minute out, so that a Reset to later re-arms a
// timer that is not pending without the lock (see Timer.resetTo).
func anchorOn(t *testing.T, st *SystemTimer) {
	t.Helper()
	if _, err := st.AfterFunc(60e9, noop); err != nil {
		t.Fatal(err)
	}
}
