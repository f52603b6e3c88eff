// Package executor runs submitted items (timer callbacks) on a few
// goroutines, and adds goroutines only when items block.
//
// A Group is a pool per home (a SystemTimer's shard); New makes a group of
// one pool. What it promises:
//
//   - Submit never blocks. While a pool's goroutines keep up, its items
//     start in the order they were submitted.
//   - An item that blocks, or runs long, holds up other items by at most
//     the stall delay (Config.Stall) from when it started, or from their
//     submission if that is later: N items that all block, submitted
//     together, all start within the stall delay of their submission.
//   - Items that are only slow, each under three quarters of the stall
//     delay, start no goroutine: they run late, in order.
//   - Work submitted to one pool also runs on the free goroutines of the
//     group's other pools.
//   - An item that panics goes to Config.OnPanic and its goroutine goes on;
//     one that calls runtime.Goexit is replaced.
//   - Close (or Shut, then Wait) returns every item that never started, and
//     waits for every goroutine but the caller's own: it may be called from
//     inside an item.
//
// How. A goroutine takes a batch from its pool's queue, a share of what is
// queued among the goroutines about to take from it (at most batchMax), so
// that the queue's lock is taken per batch, not per item. It claims the
// batch's items one at a time through an atomic index, so that whatever it
// has not started can be taken back with one compare-and-swap. A goroutine
// that finds its queue empty steals half of another pool's items that no
// goroutine of that pool is coming for; a Submit that leaves such items
// hands one to each waiting goroutine of another pool.
//
// The claim index only grows: it is the goroutine's progress marker. While
// work waits in a group, one watch goroutine reads the markers every
// quarter of the stall delay. An item is taken to have started at the look
// before the one that first saw its marker (early by at most a quarter),
// and a goroutine in one item for the stall delay is stuck. The watch takes
// back the items of its batch, hands them to waiting goroutines of other
// pools, and starts goroutines for the rest: as many as the pool needs to
// have Config.Workers goroutines not stuck or, when all of the pool's are
// stuck, one per item, as time.AfterFunc would start one per callback. Past
// maxExtra goroutines beyond Workers in the group, it starts Workers more
// per look. A goroutine that comes back and finds no work exits if the pool
// has more than Workers goroutines not stuck.
//
// The path of an item costs the claim and nothing else; a batch costs the
// lock, and a look costs the lock of each pool that has work waiting.
package executor
