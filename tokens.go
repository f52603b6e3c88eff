package timingwheel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"
)

// Shard tokens: which shard is the calling processor's (see localShard).
//
// Go gives no processor id outside the runtime, but sync.Pool keeps what
// is put in it per P: a token naming a shard, taken from the pool and put
// back, stays with the processor that holds it. There is at most one live
// token per shard, so that two processors never share one: the dealer
// hands out a token for a shard nobody holds, and returns nil when every
// shard's token is out (the processor then places by the timer's shard or
// address, see localShard).
//
// A token can be stranded: alive, so its shard is taken, yet out of every
// processor's reach. A garbage collection moves what the pool holds to its
// victim cache; a Get that finds nothing in the victim cache marks it empty
// for good, and a token still in another processor's victim slot stays
// there, unreachable, until the next collection drops it and its cleanup
// frees the shard. A program that allocates nothing (a server at rest, a
// benchmark) may not collect for minutes: one processor then places by
// the other's shard for all that time (reproduced: in 2 of 12 runs of two
// goroutines each resetting its own timer, one processor found no token
// for the whole run, about a million Gets, and the two shared a shard;
// TestTokenStranded). So a token counts as in use only while processors
// use it: each Get of a token marks it seen, and a dealer that has found
// every shard taken looks again at least strandAfter later; a shard whose
// token was not seen in between is dealt anew, under a new generation. A
// token whose generation is not its shard's current one is dropped by the
// processor that gets it (localShard), so two live tokens of one shard are
// never both used. A processor that used its token and went idle for
// strandAfter may lose its shard this way; it finds another, or a free
// one, when it comes back.

// strandAfter is how long a token must go unused, while some processor
// has none, before its shard is dealt anew.
const strandAfter = time.Millisecond

// A shardToken names a processor's shard; it is kept in SystemTimer.tokens.
type shardToken struct {
	sh   *shard
	slot *tokenSlot
	gen  uint64 // the slot's generation when this token was dealt
	// seen is set by every Get of the token and cleared by the dealer
	// when it looks for stranded tokens. Read before it is written, so
	// that a processor using its token writes it only the first time
	// after a clear.
	seen atomic.Bool
	// pushes counts the pushes on sh its holders announced (see
	// SystemTimer.localShardPush) and have not yet added to sh.pushed:
	// they add them pushBatch at a time, so that a processor arming on its
	// own shard makes one atomic addition in pushBatch instead of one per
	// arming. Only the token's holder, between the pool's Get and Put,
	// reads or writes it.
	pushes uint32
	// The token is used on every arming and re-arm of its processor, so
	// it gets cache lines of its own: a 32-byte token shared its line
	// with whatever the heap put beside it, and when that was written on
	// another core at every operation (testing.PB's counter, in
	// BenchmarkParallel, is one such 32-byte object) the read missed each
	// time: two goroutines each resetting its own timer took 89–97 ns a
	// Reset+Stop in about 2 runs of 5, against 48–54 ns. 128 bytes, a
	// size class the allocator aligns to 128, also keeps it off the line
	// an adjacent-line prefetcher pairs with its own.
	_ [128 - 32]byte
}

// A tokenSlot is a shard's entry in the dealer.
type tokenSlot struct {
	// cur is the generation of the shard's live token, 0 when it has
	// none. The dealer sets it (a CAS from 0, or from the generation of a
	// stranded token); the cleanup of a collected token clears it, if it
	// is still that token's.
	cur atomic.Uint64
	// tok is the live token, weakly (a strong pointer would keep it alive
	// for ever); guarded by tokenDealer.mu.
	tok weak.Pointer[shardToken]
	// Read on every use of the shard's token, by its processor alone:
	// a line of its own, for the reason shardToken has two.
	_ [64 - 16]byte
}

// A tokenDealer deals shard tokens: its New is SystemTimer.tokens' New.
type tokenDealer struct {
	shards []shard
	slots  []tokenSlot
	now    func() time.Duration // monotonic; a test's own clock in tests

	// mu guards gen, the slots' tok, and every dealing and clearing: New
	// takes it only when a shard is free, or when strandAfter has passed
	// since it cleared the marks.
	mu  sync.Mutex
	gen uint64 // the last generation dealt
	// cleared is when the seen marks were last cleared (now's reading),
	// 0 if not since the last dealing. Written under mu; New reads it
	// without, to return nil at once while strandAfter has not passed.
	cleared atomic.Int64
}

func newTokenDealer(shards []shard) *tokenDealer {
	epoch := time.Now()
	return &tokenDealer{
		shards: shards,
		slots:  make([]tokenSlot, len(shards)),
		now:    func() time.Duration { return time.Since(epoch) + 1 }, // never 0
	}
}

// New deals a token for a shard no live token names, or for a shard whose
// token has gone unused for strandAfter while processors went without; it
// returns nil (an untyped nil: sync.Pool's Get returns it) if there is none.
func (d *tokenDealer) New() any {
	// Look before locking: New runs whenever a processor finds no token,
	// which is often once every shard's token is out (a token between
	// another goroutine's Get and Put, or in another processor's private
	// slot, cannot be taken), and a lock or a compare-and-swap from every
	// processor took over half of the CPU of churn at 16 cores. A load of
	// a word nobody writes stays in the cache.
	free := false
	for i := range d.slots {
		if d.slots[i].cur.Load() == 0 {
			free = true
			break
		}
	}
	if !free {
		if c := d.cleared.Load(); c != 0 && d.now()-time.Duration(c) < strandAfter {
			return nil
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.slots {
		if d.slots[i].cur.Load() == 0 {
			if tok := d.deal(i, 0); tok != nil {
				return tok
			}
		}
	}
	now := d.now()
	if runtime.GOMAXPROCS(0) > len(d.slots) {
		// More processors than shards (at most 64 shards, or GOMAXPROCS
		// raised after New): some processors have no shard whatever is
		// dealt, and dealing shards anew would only move them around,
		// every strandAfter. Those processors place by address.
		d.cleared.Store(int64(now))
		return nil
	}
	if c := d.cleared.Load(); c != 0 && now-time.Duration(c) >= strandAfter {
		for i := range d.slots {
			s := &d.slots[i]
			old := s.tok.Value()
			if old == nil || old.gen != s.cur.Load() || old.seen.Load() {
				continue // collected (its cleanup frees the slot), or in use
			}
			if tok := d.deal(i, old.gen); tok != nil {
				return tok
			}
		}
	}
	// Nothing to deal: clear the marks, and look again strandAfter later.
	for i := range d.slots {
		if t := d.slots[i].tok.Value(); t != nil {
			t.seen.Store(false)
		}
	}
	d.cleared.Store(int64(now))
	return nil
}

// deal makes a token for slot i, whose live generation is from (0: none),
// and returns it, or nil if the slot changed meanwhile. Called with mu held.
func (d *tokenDealer) deal(i int, from uint64) *shardToken {
	s := &d.slots[i]
	d.gen++
	if !s.cur.CompareAndSwap(from, d.gen) {
		return nil // a cleanup freed it meanwhile
	}
	tok := &shardToken{sh: &d.shards[i], slot: s, gen: d.gen}
	tok.seen.Store(true)
	s.tok = weak.Make(tok)
	d.cleared.Store(0)
	// The cleanup frees the slot when the pool has dropped the token,
	// unless the slot was dealt anew meanwhile. Its argument is the slot
	// and the generation, not the token, which it must not keep alive.
	runtime.AddCleanup(tok, func(c tokenRef) { c.slot.cur.CompareAndSwap(c.gen, 0) }, tokenRef{s, d.gen})
	return tok
}

type tokenRef struct {
	slot *tokenSlot
	gen  uint64
}

// pushBatch is how many pushes a processor counts in its token before it
// adds them to its shard's pushed count. A token lost with its count (to
// a garbage collection, see above, or dealt anew) takes fewer than
// pushBatch uncounted pushes with it.
const pushBatch = 32

// count counts a push its holder is about to make on tok.sh, adding the
// token's count to the shard's every pushBatch pushes.
func (tok *shardToken) count() {
	if tok.pushes++; tok.pushes >= pushBatch {
		tok.sh.pushed.Add(tok.pushes)
		tok.pushes = 0
	}
}

// use reports whether tok is its shard's live token, and marks it seen. A
// token dealt anew (see tokenDealer) is not, and its holder drops it.
func (tok *shardToken) use() bool {
	// Mark first, then look: a dealer that loads the mark after this
	// store does not deal the shard anew, and one that dealt it before
	// this load is seen here (sequentially consistent atomics). So a
	// token is never used once its shard has been dealt anew.
	if !tok.seen.Load() {
		tok.seen.Store(true)
	}
	return tok.slot.cur.Load() == tok.gen
}
