// Package executor runs submitted items (timer callbacks) on a few
// goroutines, and adds goroutines only when items block.
//
// A Group is a pool per home (a SystemTimer's shard); New makes a group of
// one pool. What it promises:
//
//   - Submit never blocks. While a pool's goroutines keep up, its items
//     start in the order they were submitted.
//   - An item that blocks, or runs long, holds up others by at most the
//     stall delay (Config.Stall) from when it started, or from their
//     submission if that is later: N items that all block, submitted
//     together, all start within the stall delay of their submission.
//   - Items that are only slow, each under three quarters of the stall
//     delay, start no goroutine: they run late, in order.
//   - Items submitted to one pool also run on the free goroutines of the
//     other pools.
//   - A value an item panics with goes to Config.OnPanic, and its goroutine
//     goes on; after runtime.Goexit in an item, a new goroutine goes on.
//   - Shut returns every item that never started; Wait then waits for
//     every goroutine but the caller's own, which may run an item.
//
// How. A goroutine takes a batch, its share of the pool's queue among the
// goroutines coming to it and the free ones of other pools (at most
// batchMax), and claims its items one at a time through an atomic index:
// what it has not started can be taken back with one compare-and-swap.
// A Submit that leaves items no goroutine of the pool is coming for gives
// one to each free goroutine of other pools; a goroutine that finds its
// queue empty steals half of such items from the pool that has the most
// (one, if a goroutine there has been in one item for half the stall
// delay: they may block as its item does).
// Items move holding both pools' locks, so Close always finds them.
//
// The claim index only grows: it is the goroutine's progress marker. While
// work waits in a pool, the group's watch goroutine reads the markers every
// quarter of the stall delay. An item is taken to have started at the look
// before the one that first saw its marker (early by at most a quarter),
// and a goroutine in one item for the stall delay is stuck. The watch takes
// back the items of its batch and starts goroutines for them: as many as
// the pool needs to have its share of Workers not stuck, or, when all of
// the pool's are stuck, one per item, as time.AfterFunc starts one per callback (up to
// maxExtra). A goroutine that finds no work exits while the pool has more
// than its share not stuck. A goroutine descheduled for the stall delay
// inside an item looks stuck too: that costs goroutines, not items.
package executor
