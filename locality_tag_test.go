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

	"github.com/go-timingwheel/timingwheel/internal/proc"
)

// The locality test: goroutines arm, reset and stop timers of their own
// (AfterFunc + Stop, a bound Timer's Reset + Stop, Reset of a pending
// timer later and earlier, WithTimeout + cancel, NewTimer + Stop), and the
// instrument (locality_on.go) records every shard each operation locked or
// wrote, and every write to memory all shards share. Each operation is
// checked against the shard of the processor it ran on, read from the
// processor's id before and after it (processorShard):
//
//   - local: it touched its processor's shard only;
//   - across a migration: it touched the shard a timer of its own was on
//     before the operation, which is not this processor's: the goroutine
//     has moved since it placed the timer (a pending timer stays where it
//     is; a bound one moves when Reset re-arms it). Counted, and the
//     goroutine's moves between processors are counted too;
//   - foreign: it touched a shard that is neither: a defect of placement;
//   - shared: it wrote memory of every shard's (WithMaxPending's free
//     places).
//
// An operation during which the processor's shard changed (the goroutine
// moved) is not checked, only counted.
//
// An arming that queues a new bucket pushes it on its shard's own delay
// queue: a touch of the shard like any other. Firing is checked apart, by
// TestLocalityDrivers: each shard's driver touches its shard alone.
//
// Run with: go test -tags timingwheel_locality -run TestLocality -v .
// (scripts/test does, without the race detector, whose instrumentation
// would count as touches).

type localityResult struct {
	ops, unchecked, local, migrated, foreign, shared int
	moves                                            int // processor changes between a goroutine's operations
	examples                                         []string
}

func (r localityResult) String() string {
	return fmt.Sprintf("%d operations: %d local, %d across a migration (%d moves of a goroutine between processors), %d foreign, %d writing shared memory, %d not checked (moved during the operation)",
		r.ops, r.local, r.migrated, r.moves, r.foreign, r.shared, r.unchecked)
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

// TestLocalityDrivers: firing stays on the shard. Goroutines arm timers of
// their own, due within a tick to a few hundred milliseconds (level 0, and
// the cascade from level 1), and others an hour out, and wait until every
// one of the first has run; each
// shard's driver must have touched (locked, expired, re-placed, drained)
// its own shard only, and written no shared memory: the batches of
// callbacks it hands over go to its own shard's pool of the executor. No
// driver looks at another shard for its next deadline.
func TestLocalityDrivers(t *testing.T) {
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	recordDrivers.Store(true)
	defer recordDrivers.Store(false)
	st := mustNew(t)
	stopped := false
	defer func() {
		if !stopped {
			st.Stop()
		}
	}()
	const goroutines, n = 4, 400
	var ran sync.WaitGroup
	ran.Add(goroutines * n)
	for g := range goroutines {
		go func() {
			for i := range n {
				d := time.Duration(1+(i*7+g)%20) * time.Millisecond
				if i%4 == 0 {
					d += 100 * time.Millisecond // beyond level 0: cascaded
				}
				if _, err := st.AfterFunc(d, ran.Done); err != nil {
					t.Error(err)
					ran.Done()
				}
				// And one an hour out, left on the shard's incoming
				// stack until a drain: a driver that drained any
				// stack but its own's would touch another shard.
				if _, err := st.AfterFunc(time.Hour, noop); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { ran.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute): // a bound on a failure, not a wait
		t.Fatalf("%d timers a few hundred milliseconds out have not all run after a minute", goroutines*n)
	}
	st.Stop()
	stopped = true
	expired, handed := 0, 0
	for i := range st.shards {
		sh := &st.shards[i]
		l, ok := driverLogs.LoadAndDelete(sh)
		if !ok {
			t.Fatalf("shard %d's driver recorded nothing", i)
		}
		kinds := map[string]int{}
		for _, tr := range *l.(*[]touchRec) {
			switch {
			case tr.sh == sh:
				kinds[tr.what]++
			default:
				t.Errorf("shard %d's driver touched %s", i, touchesString(st, []touchRec{tr}, sh))
			}
		}
		expired += kinds["expire"]
		handed += kinds["executor"]
		t.Logf("shard %d's driver: %v", i, kinds)
	}
	if expired == 0 || handed == 0 {
		t.Fatalf("the drivers expired %d buckets and handed %d batches over: the instrument does not see firing", expired, handed)
	}
}

// processorShard returns the shard of the calling goroutine's processor,
// whatever st's placement.
func processorShard(st *SystemTimer) *shard {
	return &st.shards[proc.ID()&(len(st.shards)-1)]
}
