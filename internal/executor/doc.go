// Package executor runs submitted items (timer callbacks) on a few
// goroutines, and adds goroutines only when items block.
//
// A Group is a pool per home (a SystemTimer's shard). What it promises:
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
//     other pools: a storm on one home runs on every worker.
//   - A value an item panics with goes to Config.OnPanic, and its goroutine
//     goes on; after runtime.Goexit in an item, a new goroutine goes on.
//   - Shut returns every item that never started; Wait then waits for
//     every goroutine but the caller's own, which may run an item.
//
// How. A goroutine takes a batch, its share of the queue (at most batchMax
// items), and claims them one at a time through an atomic index: what it
// has not started can be taken back with one compare-and-swap, and the
// index, which only grows, shows its progress. While work waits, the
// pool's watch, a timer, reads the indexes every quarter of the stall
// delay, takes back the batch of a goroutine in one item for the stall
// delay (stuck), and starts goroutines for what waits (see spawns). A
// Submit gives the items its pool's goroutines will not take to free
// goroutines of other pools, and a goroutine that finds its queue empty
// steals from the pool with the most. Items move holding both pools'
// locks: Shut finds them all.
package executor
