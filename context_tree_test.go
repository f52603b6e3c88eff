package timingwheel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The tree model test: random trees of wheel and standard contexts, grown,
// canceled, expired and stopped at random, each built twice: with wheel
// contexts, and with the context package alone in their place (the
// reference). After every operation returns, every context must read as its
// reference does: Err, context.Cause, Done and Deadline, read parents
// first, or, every other time, the wheel contexts alone in a random order.
// Nothing waits for the goroutine that carries a standard parent's cancel
// to a wheel context: the readers must not be able to tell it exists.

type treeKind int

const (
	treeValue         treeKind = iota // context.WithValue
	treeEmbed                         // a custom type embedding its parent
	treeCancel                        // context.WithCancelCause
	treeWithoutCancel                 // context.WithoutCancel
	treeWheel                         // WithDeadline; the reference: context.WithDeadline
	treeWheelCause                    // WithDeadlineCause; context.WithDeadlineCause
	numTreeKinds
)

// A treeNode is a context of the tree, in both builds.
type treeNode struct {
	kind   treeKind
	parent int // index of the parent; -1 for the root
	depth  int
	// The wheel build, and its cancel (nil if the node has none).
	wheel       context.Context
	cancelWheel func(error)
	// The reference, and its cancel. A wheel node whose wheel context
	// has a timer (armed) is a context.WithDeadline under a
	// context.WithCancelCause, stop, which SystemTimer.Stop's end takes:
	// canceled with ErrStopped.
	ref       context.Context
	cancelRef func(error)
	stop      context.CancelCauseFunc
}

func TestContextTreeModel(t *testing.T) {
	for seed := range uint64(60) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runContextTree(t, seed) })
		})
	}
}

func runContextTree(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 33))
	fc := newFakeClock()
	st := newManual(t, fc, WithTick(time.Millisecond))
	defer st.Stop()
	// Deadlines are whole milliseconds from the start of each build; the
	// clocks stop only half way between two, where the wheel has fired
	// every deadline passed (it fires at most a tick late) and none to
	// come (never early), as the reference has.
	wheelBase, refBase := fc.Now(), time.Now()
	ms := 0 // the clocks read base + ms + 0.5ms once the first step is made
	advance := func(n int) {
		ms += n
		fc.Add(time.Duration(n) * time.Millisecond)
		time.Sleep(time.Duration(n) * time.Millisecond)
		synctest.Wait() // the reference's timers
		st.step()       // the wheel's, on this goroutine
	}
	fc.Add(time.Millisecond / 2)
	time.Sleep(time.Millisecond / 2)
	used := map[int]bool{}
	stopped := false
	var cleanup []func()
	defer func() {
		for _, f := range cleanup {
			f()
		}
	}()

	rootW, cancelRootW := context.WithCancelCause(context.Background())
	rootR, cancelRootR := context.WithCancelCause(context.Background())
	nodes := []*treeNode{{kind: treeCancel, parent: -1, wheel: rootW, ref: rootR, cancelWheel: cancelRootW, cancelRef: cancelRootR}}

	grow := func() string {
		pi := rng.IntN(len(nodes))
		p := nodes[pi]
		n := &treeNode{kind: treeKind(rng.IntN(int(numTreeKinds))), parent: pi, depth: p.depth + 1}
		switch n.kind {
		case treeValue:
			n.wheel = context.WithValue(p.wheel, ctxKey{}, len(nodes))
			n.ref = context.WithValue(p.ref, ctxKey{}, len(nodes))
		case treeEmbed:
			n.wheel, n.ref = embedCtx{p.wheel}, embedCtx{p.ref}
		case treeWithoutCancel:
			n.wheel, n.ref = context.WithoutCancel(p.wheel), context.WithoutCancel(p.ref)
		case treeCancel:
			w, cw := context.WithCancelCause(p.wheel)
			r, cr := context.WithCancelCause(p.ref)
			n.wheel, n.ref = w, r
			n.cancelWheel, n.cancelRef = cw, cr
			cleanup = append(cleanup, func() { cw(nil); cr(nil) })
		case treeWheel, treeWheelCause:
			m := ms + 1 + rng.IntN(60)
			for used[m] { // one deadline per instant: no ties to order
				m++
			}
			used[m] = true
			var cause error
			if n.kind == treeWheelCause {
				cause = fmt.Errorf("deadline of node %d", len(nodes))
			}
			dw := wheelBase.Add(time.Duration(m) * time.Millisecond)
			dr := refBase.Add(time.Duration(m) * time.Millisecond)
			w, cw := st.WithDeadlineCause(p.wheel, dw, cause)
			r, cr := context.WithDeadlineCause(p.ref, dr, cause)
			n.wheel, n.ref = w, r
			n.cancelWheel = func(error) { cw() }
			n.cancelRef = func(error) { cr() }
			cleanup = append(cleanup, cw, cr)
			// What the wheel's WithDeadline does besides a timer: a parent
			// whose deadline comes first makes a WithCancel, a parent done
			// a context done at birth; a stopped SystemTimer cancels the
			// context at birth with ErrStopped.
			cur, ok := p.ref.Deadline()
			if !(ok && cur.Before(dr)) && p.ref.Err() == nil {
				s, stop := context.WithCancelCause(r)
				n.ref, n.stop = s, stop
				n.cancelRef = func(error) { stop(nil) }
				cleanup = append(cleanup, func() { stop(nil) })
				if stopped {
					stop(ErrStopped)
				}
			}
		}
		nodes = append(nodes, n)
		return fmt.Sprintf("grow node %d (%d) under %d", len(nodes)-1, n.kind, pi)
	}
	cancel := func() string {
		var can []int
		for i, n := range nodes {
			if n.cancelWheel != nil {
				can = append(can, i)
			}
		}
		i := can[rng.IntN(len(can))]
		cause := fmt.Errorf("cancel of node %d", i)
		nodes[i].cancelRef(cause)
		nodes[i].cancelWheel(cause)
		return fmt.Sprintf("cancel node %d", i)
	}
	stop := func() string {
		for _, n := range nodes {
			if n.stop != nil {
				n.stop(ErrStopped)
			}
		}
		st.Stop()
		stopped = true
		return "SystemTimer.Stop"
	}

	for op := range 80 {
		var what string
		switch r := rng.IntN(20); {
		case r < 10 || len(nodes) < 3:
			what = grow()
		case r < 15:
			what = cancel()
		case r < 19:
			n := 1 + rng.IntN(20)
			advance(n)
			what = fmt.Sprintf("advance %dms", n)
		default:
			if stopped {
				continue
			}
			what = stop()
		}
		what = fmt.Sprintf("seed %d, op %d (%s)", seed, op, what)
		order := treeOrder(rng, nodes, op%2 == 1)
		for _, i := range order {
			checkTreeNode(t, fmt.Sprintf("%s: node %d", what, i), nodes[i], wheelBase.Sub(refBase))
		}
	}
}

// treeOrder returns the order in which to read the nodes: parents before
// their kids in a random interleaving, or, if wheelOnly, the wheel nodes
// alone in a random order.
func treeOrder(rng *rand.Rand, nodes []*treeNode, wheelOnly bool) []int {
	if wheelOnly {
		var order []int
		for _, i := range rng.Perm(len(nodes)) {
			if _, ok := nodes[i].wheel.(*timerCtx); ok {
				order = append(order, i)
			}
		}
		return order
	}
	// A random topological order: repeatedly pick at random among the
	// nodes whose parent has been read.
	read := make([]bool, len(nodes))
	var ready, order []int
	ready = append(ready, 0)
	for len(ready) > 0 {
		k := rng.IntN(len(ready))
		i := ready[k]
		ready[k] = ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		read[i] = true
		order = append(order, i)
		for j, n := range nodes {
			if n.parent == i && !read[j] {
				ready = append(ready, j)
			}
		}
	}
	return order
}

func checkTreeNode(t *testing.T, what string, n *treeNode, off time.Duration) {
	t.Helper()
	errW, errR := n.wheel.Err(), n.ref.Err()
	if errW != errR {
		t.Fatalf("%s: Err() = %v, the context package's %v", what, errW, errR)
	}
	if cw, cr := context.Cause(n.wheel), context.Cause(n.ref); cw != cr {
		t.Fatalf("%s: Cause = %v, the context package's %v", what, cw, cr)
	}
	done := false
	select {
	case <-n.wheel.Done():
		done = true
	default:
	}
	if done != (errR != nil) {
		t.Fatalf("%s: Done closed %v, the context package's %v", what, done, errR != nil)
	}
	dw, okW := n.wheel.Deadline()
	dr, okR := n.ref.Deadline()
	if okW != okR || (okW && dw.Sub(dr) != off) {
		t.Fatalf("%s: Deadline() = %v %v, the context package's %v %v", what, dw, okW, dr, okR)
	}
}

// TestConcurrentContextTreeCancels builds trees of wheel and standard
// contexts on one running SystemTimer, some of the wheel contexts due
// within a few milliseconds, and lets three goroutines cancel random nodes
// at once: after each cancel returns, every context below the canceled one
// that follows it (no WithoutCancel between) must read as done, top down,
// as under the context package.
func TestConcurrentContextTreeCancels(t *testing.T) {
	st := mustNew(t)
	defer st.Stop()
	for round := range 40 {
		rng := rand.New(rand.NewPCG(uint64(round), 34))
		root, cancelRoot := context.WithCancelCause(context.Background())
		nodes := []*treeNode{{kind: treeCancel, parent: -1, wheel: root, cancelWheel: cancelRoot}}
		for len(nodes) < 40 {
			pi := rng.IntN(len(nodes))
			p := nodes[pi]
			if p.depth == 4 {
				continue
			}
			n := &treeNode{kind: treeKind(rng.IntN(int(numTreeKinds))), parent: pi, depth: p.depth + 1}
			switch n.kind {
			case treeValue:
				n.wheel = context.WithValue(p.wheel, ctxKey{}, len(nodes))
			case treeEmbed:
				n.wheel = embedCtx{p.wheel}
			case treeWithoutCancel:
				n.wheel = context.WithoutCancel(p.wheel)
			case treeCancel:
				ctx, cancel := context.WithCancelCause(p.wheel)
				n.wheel, n.cancelWheel = ctx, cancel
			default:
				d := time.Hour
				if rng.IntN(4) == 0 {
					d = time.Duration(rng.IntN(3000)) * time.Microsecond
				}
				ctx, cancel := st.WithTimeout(p.wheel, d)
				n.wheel, n.cancelWheel = ctx, func(error) { cancel() }
			}
			nodes = append(nodes, n)
		}
		// below[i]: the nodes a cancel of node i must have ended, parents
		// first (nodes are made after their parents).
		below := make([][]int, len(nodes))
		for i := range nodes {
			for j := i + 1; j < len(nodes); j++ {
				for a := nodes[j].parent; a >= i; a = nodes[a].parent {
					if nodes[a].kind == treeWithoutCancel && a != i || nodes[j].kind == treeWithoutCancel {
						break
					}
					if a == i {
						below[i] = append(below[i], j)
						break
					}
				}
			}
		}
		var wg sync.WaitGroup
		for g := range 3 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
				for range 8 {
					i := rng.IntN(len(nodes))
					if nodes[i].cancelWheel == nil {
						continue
					}
					nodes[i].cancelWheel(errBoom)
					for _, j := range below[i] {
						if nodes[j].wheel.Err() == nil {
							t.Errorf("round %d: node %d is not done after the cancel of node %d, above it, returned", round, j, i)
						}
					}
				}
			})
		}
		wg.Wait()
		cancelRoot(nil)
		for _, n := range nodes {
			if n.cancelWheel != nil {
				n.cancelWheel(nil)
			}
		}
	}
}
