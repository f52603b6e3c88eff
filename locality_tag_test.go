//go:build timingwheel_locality

package timingwheel

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The locality test: goroutines arm, reset and stop timers of their own
// (AfterFunc + Stop, a bound Timer's Reset + Stop, Reset of a pending
// timer later and earlier, WithTimeout + cancel, NewTimer + Stop), and the
// instrument (locality_on.go) records every shard each operation locked or
// wrote, and every write to memory all shards share. Each operation is
// checked against the shard of the processor it ran on, read from the
// processor's token before and after it (processorShard):
//
//   - local: it touched its processor's shard only;
//   - across a migration: it touched the shard a timer of its own was on
//     before the operation, which is not this processor's: the goroutine
//     has moved since it placed the timer (a pending timer stays where it
//     is; a bound one moves when Reset re-arms it). Counted, and the
//     goroutine's moves between processors are counted too;
//   - foreign: it touched a shard that is neither: a defect of placement;
//   - shared: it wrote memory of every shard's (WithMaxPending's free
//     places, the executor's queue).
//
// An operation during which the processor's shard changed (the goroutine
// moved, or its processor had no token) is not checked, only counted.
//
// What this does not cover: firing. A due timer is expired and handed to
// the executor by the one driver goroutine, whichever processor armed it,
// and its callback runs on the executor's workers (doc.go, "Cores"). And
// what it counts apart: an arming that queues a new bucket writes the one
// delay queue every shard shares.
//
// Run with: go test -tags timingwheel_locality -run TestLocality -v .
// (scripts/test does, without the race detector, under which sync.Pool
// drops tokens at random).

type localityResult struct {
	ops, unchecked, local, migrated, foreign, shared int
	dq                                               int // operations that wrote the delay queue, which every shard shares
	moves                                            int // processor changes between a goroutine's operations
	examples                                         []string
}

func (r localityResult) String() string {
	return fmt.Sprintf("%d operations: %d local, %d across a migration (%d moves of a goroutine between processors), %d foreign, %d writing shared memory, %d writing the delay queue, %d not checked (moved during the operation)",
		r.ops, r.local, r.migrated, r.moves, r.foreign, r.shared, r.dq, r.unchecked)
}

// runLocality runs goroutines goroutines of n operations each on st and
// classifies them.
func runLocality(t *testing.T, st *SystemTimer, goroutines, n int) localityResult {
	var mu sync.Mutex
	var total localityResult
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := localityOps(t, st, n)
			mu.Lock()
			total.ops += r.ops
			total.unchecked += r.unchecked
			total.local += r.local
			total.migrated += r.migrated
			total.foreign += r.foreign
			total.shared += r.shared
			total.dq += r.dq
			total.moves += r.moves
			total.examples = append(total.examples, r.examples...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return total
}

const localityKinds = 6

func localityOps(t *testing.T, st *SystemTimer, n int) (r localityResult) {
	log, stop := recordTouches()
	defer stop()
	var bound Timer
	st.Bind(&bound, noop)
	pending, err := st.AfterFunc(2*time.Hour, noop)
	if err != nil {
		t.Error(err)
		return
	}
	defer pending.Stop()
	var last *shard
	for i := range n {
		kind := i % localityKinds
		before := processorShard(st)
		homes := [...]*shard{bound.shard(), pending.shard()}
		*log = (*log)[:0]
		var what string
		switch kind {
		case 0:
			what = "AfterFunc+Stop"
			tm, err := st.AfterFunc(time.Hour, noop)
			if err != nil {
				t.Error(err)
				return
			}
			tm.Stop()
		case 1:
			what = "bound Reset+Stop"
			bound.Reset(time.Hour)
			bound.Stop()
		case 2:
			what = "Reset later"
			pending.Reset(2*time.Hour + time.Duration(i)*time.Millisecond)
		case 3:
			what = "Reset earlier"
			pending.Reset(2*time.Hour - time.Duration(i)*time.Millisecond)
		case 4:
			what = "WithTimeout+cancel"
			_, cancel := st.WithTimeout(context.Background(), time.Hour)
			cancel()
		case 5:
			what = "NewTimer+Stop"
			ct, err := st.NewTimer(time.Hour)
			if err != nil {
				t.Error(err)
				return
			}
			ct.Stop()
		}
		after := processorShard(st)
		r.ops++
		if before != nil && last != nil && before != last {
			r.moves++
		}
		if before != nil {
			last = before
		}
		// The processor's shard as localShard found it during the
		// operation, if it asked: a goroutine can move away and back
		// between the two reads around it.
		moved := before == nil || after != before
		for _, tr := range *log {
			if tr.what == "local" && tr.sh != before {
				moved = true
			}
		}
		if moved {
			r.unchecked++
			continue
		}
		class := "local"
		for _, tr := range *log {
			switch {
			case tr.what == "local":
			case tr.sh == nil && tr.what == "delay queue":
				if class == "local" || class == "migrated" {
					class = "dq"
				}
			case tr.sh == nil:
				class = "shared"
			case tr.sh == before:
			case tr.sh == homes[0] || tr.sh == homes[1]:
				if class == "local" {
					class = "migrated"
				}
			default:
				if class != "shared" {
					class = "foreign"
				}
			}
			if class == "shared" || class == "foreign" {
				if len(r.examples) < 3 {
					r.examples = append(r.examples, fmt.Sprintf("%s: %s (%s)", what, class, touchesString(st, *log, before)))
				}
				break
			}
		}
		switch class {
		case "local":
			r.local++
		case "migrated":
			r.migrated++
		case "dq":
			r.dq++
		case "foreign":
			r.foreign++
		case "shared":
			r.shared++
		}
	}
	return r
}

func touchesString(st *SystemTimer, log []touchRec, own *shard) string {
	var s []string
	for _, tr := range log {
		switch {
		case tr.sh == nil:
			s = append(s, "shared "+tr.what)
		case tr.sh == own:
			s = append(s, "own "+tr.what)
		default:
			s = append(s, fmt.Sprintf("shard %d %s", tr.sh.index(st), tr.what))
		}
	}
	return strings.Join(s, ", ")
}

// TestLocalityOwnTimers: by default, every operation a goroutine makes on
// its own timers touches its processor's shard only, or the shard its
// timer was left on when the goroutine moved; none writes shared memory;
// and the test itself tells placement by address apart, which spreads a
// goroutine's timers over every shard.
func TestLocalityOwnTimers(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops a quarter of what is put in it, at random")
	}
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	const goroutines, n = 4, 3000
	t.Run("by-processor", func(t *testing.T) {
		st := mustNew(t)
		defer st.Stop()
		r := runLocality(t, st, goroutines, n)
		t.Log(r)
		if r.foreign != 0 || r.shared != 0 {
			t.Errorf("operations on a goroutine's own timers left its processor's shard: %v; for example:\n%s", r, strings.Join(r.examples, "\n"))
		}
		// Goroutines that never block move between processors only when
		// the scheduler preempts them: seldom. An operation on a timer
		// left behind on the old shard is the price of such a move.
		if r.checked() < r.ops*3/4 {
			t.Errorf("only %d of %d operations ran on one processor from start to end: %v", r.checked(), r.ops, r)
		}
		if r.moves > r.ops/50 || r.migrated > r.ops/4 {
			t.Errorf("more migration than a preemption now and then explains: %v", r)
		}
		// A timer placed in a bucket nobody had queued pushes the bucket
		// on the one delay queue that serves every shard: the crossing
		// that is left by design (doc.go, "Cores"). With deadlines an
		// hour out, a shard queues a new bucket every few minutes.
		if r.dq > r.ops/100 {
			t.Errorf("more operations wrote the delay queue than new buckets explain: %v", r)
		}
	})
	t.Run("by-address", func(t *testing.T) {
		// The instrument's own check: placement by address (the old
		// default) is not local, and the test must say so.
		st := mustNew(t, withAddressShards())
		defer st.Stop()
		r := runLocality(t, st, goroutines, n)
		t.Log(r)
		if r.checked() < r.ops*3/4 {
			t.Fatalf("only %d of %d operations ran on one processor from start to end: %v", r.checked(), r.ops, r)
		}
		if r.foreign < r.checked()/(2*localityKinds) {
			t.Errorf("by address, a goroutine's new timers spread over %d shards, yet the test found %d foreign operations of %d: it cannot see a placement defect", len(st.shards), r.foreign, r.checked())
		}
	})
	t.Run("WithMaxPending", func(t *testing.T) {
		// WithMaxPending's places are cached per shard (see reserve):
		// armings and stops write the shared count once per placeBatch
		// of them at most, and here, balanced, almost never.
		st := mustNew(t, WithMaxPending(1<<20))
		defer st.Stop()
		r := runLocality(t, st, goroutines, n)
		t.Log(r)
		if r.foreign != 0 || r.shared*placeBatch > r.checked() {
			t.Errorf("with WithMaxPending, operations on a goroutine's own timers left its processor's shard more than once in %d: %v; for example:\n%s", placeBatch, r, strings.Join(r.examples, "\n"))
		}
	})
}

func (r localityResult) checked() int { return r.ops - r.unchecked }

// processorShard returns the shard of the calling goroutine's processor, as
// its token names it, whatever st's placement; nil if it has no token.
func processorShard(st *SystemTimer) *shard {
	tok, _ := st.tokens.Get().(*shardToken)
	if tok == nil || !tok.use() {
		return nil
	}
	st.tokens.Put(tok)
	return tok.sh
}
