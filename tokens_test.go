package timingwheel

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// TestTokenStranded: a shard whose token is alive but out of every
// processor's reach (in another processor's victim cache after a garbage
// collection, where no Get looks any more; see tokens.go) is dealt anew
// once its token has gone unused for strandAfter while a processor had
// none; a token that was used meanwhile keeps its shard, and the stranded
// token, should it come back, is dropped. Before, the processor without a
// token placed by the other's shard until the next two collections, which
// an allocation-free loop never makes: two goroutines resetting their own
// timers shared a shard for a whole run (2 runs in 12).
//
// The test strands tokens by taking them out of the pool and keeping them,
// and moves the dealer's clock itself.
func TestTokenStranded(t *testing.T) {
	old := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(old)
	st := mustNew(t)
	defer st.Stop()
	if len(st.shards) < 2 {
		t.Skip("one shard")
	}
	var clock time.Duration = 1
	st.dealer.now = func() time.Duration { return clock }

	// Take every shard's token, and keep them: stranded.
	var held []*shardToken
	for range len(st.shards) {
		tok, _ := st.tokens.Get().(*shardToken)
		if tok == nil {
			t.Fatalf("no token after %d of %d shards", len(held), len(st.shards))
		}
		held = append(held, tok)
	}
	if sh := st.localShard(nil); sh != nil {
		t.Fatal("a token was dealt for a shard whose token is held")
	}
	// held[0] is in use: a processor gets it meanwhile.
	clock += strandAfter / 2
	if !held[0].use() {
		t.Fatal("a live token is not its shard's")
	}
	if sh := st.localShard(nil); sh != nil {
		t.Fatal("a shard was dealt anew before its token went unused for strandAfter")
	}
	clock += strandAfter
	sh := st.localShard(nil)
	if sh == nil {
		t.Fatalf("no shard dealt after %v with every token but one unused: the processor stays without one", strandAfter+strandAfter/2)
	}
	if sh == held[0].sh {
		t.Fatal("the shard of the token in use was dealt anew")
	}
	if !held[0].use() {
		t.Fatal("the token in use lost its shard")
	}
	for _, tok := range held[1:] {
		if tok.sh == sh && tok.use() {
			t.Fatal("the stranded token of a shard dealt anew is still taken as its shard's: two processors would share it")
		}
	}
}

// TestTokenOwnCacheLines: a processor's token, and its shard's slot,
// which every arming and re-arm on that processor reads, share no cache
// line with another object. A 32-byte token shared one with whatever the
// allocator put beside it; when that was written on another core at every
// operation, two goroutines resetting their own timers ran at half speed
// in about 2 runs of 5 of BenchmarkParallel's reuse (see tokens.go).
func TestTokenOwnCacheLines(t *testing.T) {
	const line = 64
	if size := unsafe.Sizeof(shardToken{}); size%(2*line) != 0 {
		t.Errorf("a shardToken is %d bytes: not whole pairs of %d-byte lines, so an object the allocator puts beside it may share one", size, line)
	}
	if size := unsafe.Sizeof(tokenSlot{}); size%line != 0 {
		t.Errorf("a tokenSlot is %d bytes: not whole %d-byte lines, so two slots, or a slot and another object, may share one", size, line)
	}
	st := mustNew(t)
	defer st.Stop()
	for i := range st.dealer.slots {
		if a := uintptr(unsafe.Pointer(&st.dealer.slots[i])); a%line != 0 {
			t.Errorf("slot %d at %#x: not at the start of a cache line", i, a)
		}
	}
	// Tokens the dealer makes land on whole lines too (the allocator
	// aligns objects of 128 bytes to 128).
	for range 8 {
		tok, _ := st.tokens.Get().(*shardToken)
		if tok == nil {
			break
		}
		if a := uintptr(unsafe.Pointer(tok)); a%(2*line) != 0 {
			t.Errorf("a token at %#x: not at the start of a pair of cache lines", a)
		}
		defer st.tokens.Put(tok)
	}
}

// TestPushCountBoundsTheStack: a shard's incoming stack holds about
// drainDepth timers at most, however they are armed: the pusher that
// brings the count to drainDepth drains it. A processor arming on its own
// shard counts its pushes in its token and adds them pushBatch at a time
// (see localShardPush); the bound must hold through that too. With no
// driver (withManual) and every timer an hour out, nothing else drains.
func TestPushCountBoundsTheStack(t *testing.T) {
	// Two shards at least, so that armings count in the tokens.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	st := mustNew(t, withManual())
	defer st.Stop()
	if len(st.shards) < 2 {
		t.Fatal("one shard: no tokens")
	}
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
	// Each token in use holds fewer than pushBatch pushes it has not added
	// to its shard's count, and so does each token lost with its count
	// (the race detector's sync.Pool drops a quarter of what is put back;
	// a collection strands some): a lost token is replaced by one dealt
	// anew, so the tokens are at most the shards plus the deals.
	dealt := func() int {
		st.dealer.mu.Lock()
		defer st.dealer.mu.Unlock()
		return int(st.dealer.gen)
	}
	dealt0 := dealt()
	const rounds = 20 * drainDepth
	check := func(how string, i int) {
		d := deepest()
		if bound := drainDepth + pushBatch*(len(st.shards)+dealt()-dealt0); d > bound {
			t.Fatalf("%s: a stack holds %d timers after %d armings (bound %d): nobody drained it", how, d, i+1, bound)
		}
	}
	for i := range rounds {
		_, err := st.AfterFunc(time.Hour, func() {})
		if err != nil {
			t.Fatal(err)
		}
		check("AfterFunc", i)
	}
	bound2 := make([]Timer, rounds)
	for i := range bound2 {
		st.Bind(&bound2[i], func() {})
	}
	for i := range bound2 {
		bound2[i].Reset(time.Hour) // re-armed from idle, without the lock
		check("Reset", i)
	}
	if st.Len() != 2*rounds {
		t.Fatalf("Len %d, want %d", st.Len(), 2*rounds)
	}
}

// TestTokenCountReachesTheShard: the pushes a processor counts in its
// token reach its shard's count pushBatch at a time, and a push counted in
// a token drains the stack once the shard's count is drainDepth, whoever
// brought it there. Deterministic where TestPushCountBoundsTheStack is
// not under -race (the race detector's sync.Pool drops tokens, and the
// armings then count on the shard).
func TestTokenCountReachesTheShard(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	st := mustNew(t, withManual())
	defer st.Stop()
	tok, _ := st.tokens.Get().(*shardToken)
	if tok == nil {
		t.Fatal("no token")
	}
	sh := tok.sh
	before := sh.pushed.Load()
	for range 3*pushBatch + 1 {
		tok.count()
	}
	if got := sh.pushed.Load() - before; got != 3*pushBatch {
		t.Fatalf("after 3*pushBatch+1 pushes counted in the token, the shard's count rose by %d, want %d", got, 3*pushBatch)
	}
	sh.pushed.Store(drainDepth - 1)
	if sh.countPush(countedByToken) {
		t.Fatal("a push counted in a token drains below drainDepth")
	}
	sh.pushed.Store(drainDepth)
	if !sh.countPush(countedByToken) {
		t.Fatal("a push counted in a token does not drain a shard whose count is drainDepth")
	}
	if !sh.countPush(countOnShard) {
		t.Fatal("a push counted on the shard does not drain at drainDepth")
	}
}
