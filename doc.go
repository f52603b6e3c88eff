// Package timingwheel runs functions after delays, like [time.AfterFunc], for
// programs that hold very many timers at once: request timeouts, retries,
// heartbeats and sessions by the hundred thousand or the million. It is a
// hierarchical timing wheel in the style of Kafka's SystemTimer, driven by a
// delay queue, that never fires a timer early.
//
//	package main
//
//	import (
//		"log"
//		"time"
//
//		"github.com/go-timingwheel/timingwheel"
//	)
//
//	func main() {
//		st, err := timingwheel.New() // one per program, made at start-up
//		if err != nil {
//			log.Fatal(err)
//		}
//		defer st.Stop() // at shutdown: ends its goroutines
//
//		t, err := st.AfterFunc(30*time.Second, func() { log.Print("timed out") })
//		if err != nil {
//			log.Print(err) // st is stopped, or WithMaxPending's bound is reached
//			return
//		}
//		// ... the work finishes in time:
//		t.Stop() // the function never runs
//	}
//
// # The default SystemTimer
//
// The package-level functions [AfterFunc], [NewTimer], [After],
// [NewTicker], [Tick], [Sleep], [WithTimeout], [WithDeadline],
// [WithTimeoutCause] and [WithDeadlineCause] have the signatures of the
// time and context packages' functions of the same names, so that a
// program's timers move to the wheel by a change of package name:
//
//	t := timingwheel.AfterFunc(30*time.Second, func() { conn.Close() }) // was time.AfterFunc
//	ctx, cancel := timingwheel.WithTimeout(ctx, 2*time.Second)          // was context.WithTimeout
//
// They run on the SystemTimer that [Default] returns, made with the default
// options on first use and never stopped, as the runtime's timers never
// stop: a program that does not call them starts nothing for them. With no
// Stop and no bound, the errors of a SystemTimer's methods cannot happen on
// it, and the functions return none. [SystemTimer.Stop] panics on it: other
// packages of the program share it, and could not report [ErrStopped].
// What a SystemTimer made by [New] has that the default has not: options
// (the tick, [WithMaxPending]'s bound to shed load, the workers, the panic
// handler, a clock for tests) and Stop, which ends its goroutines and
// returns the timers that never ran. The packages built on this one
// (httptimeout, idleconn, contrib/clock) take a nil *SystemTimer for the
// default.
//
// A test in a testing/synctest bubble needs a SystemTimer made in the
// bubble, passed to the code under test: the default, made outside, runs
// its goroutines outside the bubble, which may not use the bubble's
// channels.
//
// # Design
//
// A [SystemTimer] keeps its timers in a hierarchy of wheels. A wheel level
// has wheelSize buckets ([WithWheelSize]); a bucket of level 0 holds the
// timers of one tick ([WithTick]), a bucket of level k the timers of
// wheelSize^k ticks. A deadline beyond the reach of a level goes up to the
// next, which is created on demand. Each bucket is a doubly linked list, so
// adding and stopping a timer are O(1) whatever the number of timers; a
// bucket of level 0 is eight such lists used as one, so that walking a
// bucket of timers scattered over the heap overlaps their cache misses.
//
// With the defaults (tick 1ms, wheel size 512) the levels are:
//
//	level  bucket width        reach
//	0      1ms                 512ms
//	1      512ms               4m22.144s
//	2      4m22.144s           37h16m57.728s
//	3      37h16m57.728s       795 days
//	4      795 days            1115 years
//
// Level 4 already reaches past the largest [time.Duration], so no more are
// ever made.
//
// A bucket that holds timers sits in a delay queue (package delayqueue)
// under its expiration. A driver goroutine sleeps until the earliest
// bucket is due; no goroutine wakes up for the empty ticks in between, so a
// SystemTimer whose timers are far off costs no CPU. When a bucket is due,
// the driver moves the wheel time to its expiration, takes all its timers out
// at once and adds each one again: a timer from a higher level cascades into
// a lower one, and a timer of level 0 is due and goes to the executor pool.
// A bucket of a higher level expires a quarter of its width early, and the
// driver cascades its timers a chunk at a time between due buckets: back to
// back once they are due within a second, and before that at a pace of a
// chunk a millisecond, sleeping in between, so cascading a bucket of a
// million timers holds up no callback and takes no processor from them.
//
// Timers are kept in a few shards, each a complete wheel hierarchy with its
// own lock, its own delay queue and its own driver, a timer on the shard of
// the processor that arms it, so that goroutines on different cores rarely
// contend, and the shards fire in parallel (see Cores). AfterFunc itself
// takes no lock: it pushes the new timer on its shard's lock-free stack, and
// the shard's driver, or the AfterFunc call that finds the stack long, places
// the stacked timers in their buckets. The driver publishes the time by which
// it will next do so, and AfterFunc places a timer due before that itself; so
// the stack never makes a timer late. Stopping a timer that is still on the
// stack is a single compare-and-swap.
//
// A timer's state and deadline share one atomic word (see timer.go), so
// that [Timer.Reset] can push a pending timer back without the lock: it
// stores the later deadline in the timer and leaves the timer in its
// bucket. Nothing else happens until that bucket comes due; the driver then
// finds the later deadline and places the timer again, in the bucket that
// holds it now, which is usually of a higher level. So a timer pushed back
// on every request costs, per push, one clock read and one
// compare-and-swap, and the driver touches it once per deadline it lets
// pass, not once per push: a 30s idle timeout pushed back a thousand times
// a second is placed again about once every 30s (a little sooner: a bucket
// above level 0 comes due a quarter of its width early, see below). Moving
// a timer earlier takes the shard's lock and moves it at once.
//
// # Precision
//
// A timer's deadline is kept to 16ns (the unit of the state word, rounded
// up), not rounded to the tick. A bucket of level 0 comes due at the
// earliest deadline it holds, so a timer alone in its bucket, the common
// case for a short timeout on a server that is not flooded, runs at its
// deadline, about as late as a runtime timer: the driver sleeps until that
// deadline, and a worker takes the callback from it. When the bucket
// expires, its timers whose deadlines have not come yet are queued again
// at the end of the tick, so a bucket is expired at most twice for what it
// holds, and a crowded tick (a storm) costs no more than with rounding:
// those run in [deadline, end of their tick]. Kafka's SystemTimer and its
// ports round deadlines down and run callbacks up to a tick early; this
// package never runs one before its deadline. [SystemTimer.AfterFunc] with
// d <= 0 hands the callback to the executor at once. A [Ticker] whose
// period is under the tick ticks at most once a tick.
//
// Why not round to the tick, as the wheels of tokio and Linux do: the Go
// runtime sleeps in its netpoller in whole milliseconds, so a driver that
// slept to the end of a tick, a fraction of a millisecond away, woke up to
// a millisecond late, and a 1ms timer ran 1.2ms late where the runtime's
// ran 0.1ms late. A sleep to a deadline that a caller set a whole number
// of milliseconds ahead ends on time, for the wheel as for the runtime.
//
// Deadlines at or beyond a horizon never come: the horizon is the largest
// [time.Duration] after New (about 292 years), or 36 years after New with
// ticks under 8ns. A [SystemTimer.AfterFunc] with the largest duration is
// valid; its timer stays pending, and its callback never runs, whatever
// the clock does.
//
// The tick is at most a minute ([WithTick]): a coarser tick would only make
// callbacks later, since an idle wheel costs nothing whatever its tick.
//
// # Cores
//
// The wheels are kept in shards, as many as GOMAXPROCS rounded up to a
// power of two (at most 64), each with its own lock, its own lock-free
// stack of timers armed and not yet placed, its own delay queue and its own
// driver goroutine. A timer goes to the shard of the processor (the
// runtime's P) that makes or binds it, as the Go runtime keeps its timers
// per P: a goroutine's timers stay on its processor's shard, and goroutines
// on different processors arm, stop and reset their own timers without
// meeting on a lock or a cache line. The processor's id comes from the
// runtime's procPin, which the runtime keeps reachable for sync.Pool's
// users (internal/proc): a few instructions and no atomic one. Processors
// beyond the shards (GOMAXPROCS raised after New, or above 64) share
// shards. A processor counts the timers it pushes on its shard's stack
// itself, while the goroutine is pinned to it, and adds them to the shard's
// count (which brings the drain of a deep stack) 32 at a time: an arming
// writes no shared word but the stack's head.
//
// A timer that is not pending (idle, stopped or fired) moves to the shard
// of the processor that re-arms it with Reset, so that a connection's timer
// bound on the accept loop follows the goroutine that serves it. The move
// is made by the goroutine that owns the timer (the state in which nobody
// else acts on it), under the old shard's lock, and only when the shard
// changes: a timer reset again and again on one processor moves once.
// Whoever holds a shard's lock and finds a timer naming that shard has the
// timer's shard for as long as it holds the lock (a pending timer names
// the shard it is pending on: it moves only while not pending). A Ticker's
// next tick, armed on an executor goroutine, stays where it is; periodic
// timers and contexts never move. Any goroutine may stop, reset or fire any
// timer: placement is locality, never correctness. Stats.Migrated counts
// the moves.
//
// WithMaxPending's places are kept per shard as well: a shard takes them
// from the one shared count placeBatch (16) at a time and gives back what
// it holds beyond twice that, so armings and stops on a shard write the
// shared word about once in 16 (see Bounds for why the bound stays exact).
// Under WithMaxPending a re-arm takes a shard's lock (it reserves a place
// there): a timer that is not pending first moves, owned for the move, to
// the shard of the processor that re-arms it, and is re-armed there under
// that shard's lock (follow), so it follows its processor under the bound
// too.
//
// Each shard's driver expires the shard's buckets and nothing else: it
// sleeps on the shard's delay queue until the shard's earliest bucket, and
// drains and publishes (wakeAt) for the shard alone, so an arming compares
// its deadline with its own shard's wakeAt and pushes a new bucket on its
// own shard's queue. No goroutine looks at every shard to find the next
// deadline (tokio's sharded timer, reverted in tokio-rs/tokio#7226, locked
// every shard for that), a shard with nothing due wakes nobody, and the
// shards' expiries and cascades run on several cores at once, though at
// most half the processors (at least one) re-place cascade lists that are
// not urgent at once, the list due first first: cascading a storm's
// level-1 buckets on every processor left the workers none (see
// enterCascade). The price:
// GOMAXPROCS (rounded up) driver goroutines, asleep while nothing is due,
// where there was one; and timers of different shards due in one tick, or
// made due together by a jump of the clock, run in either order, as the
// runtime's timers of different processors do (a shard's own run in
// deadline order, tick by tick). A driver is a goroutine like any other,
// run wherever the scheduler puts it: what is per shard is the memory it
// touches, not the core. On two cores, a storm's two drivers waking every
// millisecond cost about 0.8ms of callback lateness at p99 (bench/README.md).
//
// A test proves the locality without a big machine: under the
// timingwheel_locality build tag, every lock and write of a shard, and
// every write of memory the shards share, is recorded for the goroutines
// that ask, and TestLocalityOwnTimers checks that goroutines arming,
// resetting and stopping their own timers touch their processor's shard
// only (or, after the scheduler moved a goroutine, the shard its timer was
// left on: counted); TestLocalityDrivers, that each driver touches its own
// shard only, the hand-over of its callbacks included.
//
// The executor is a pool per shard (internal/executor's Group): a shard's
// driver, and an arming that finds its timer due at once, hand callbacks
// to the shard's own pool, whose workers take them under that pool's lock,
// which no other shard's callbacks take. [WithWorkers] goroutines are
// shared out among the pools, one pool per shard as long as there are as
// many workers as shards (the default; with fewer, shards share pools).
// Work crosses pools only when one pool has more than its workers take:
// a worker that finds its pool empty steals half of the items another
// pool's workers are not coming for (one, if that pool's workers are
// stuck), holding both locks, and a hand-over that leaves items nobody of
// the pool is coming for wakes one free worker of another pool, which
// steals. So a storm armed by one goroutine, which lands on one shard,
// still runs on every worker, while a shard whose workers keep up touches
// no other pool.
//
// What still crosses cores: stealing, by design, when a pool falls
// behind; the hints the pools read of each other (their spare items and
// free workers, written only when they change) when a worker runs out of
// work or a hand-over leaves items waiting. BenchmarkParallel runs both placements (wheel, and wheel-address,
// withAddressShards) against the runtime; scripts/scaling makes the
// table, and bench/README.md has the 16-core figures.
//
// # Callbacks
//
// Callbacks run on the executor's pools, never on a driver and never
// inside AfterFunc. [WithWorkers] goroutines wait for work, shared out
// among the shards' pools (see Cores). A driver hands due timers to its
// shard's pool without ever blocking on it; the pool wakes an idle worker
// per callback, or a free worker of another pool when its own are busy,
// and shares the callbacks due together out among the workers it woke. A
// worker is stuck when it has been inside one callback for the stall delay
// (the tick, at most 1ms): the callback blocks, or takes long. While
// callbacks wait, each pool watches for its stuck workers; it takes back
// the callbacks queued behind them, wakes free workers of other pools for
// them, and for the rest starts goroutines, so that the pool's share of
// [WithWorkers] makes progress, or, when every goroutine of the pool is
// stuck, one goroutine per waiting callback, as [time.AfterFunc] would, up
// to 256 beyond WithWorkers, and then WithWorkers more per stall delay.
// (With one worker per pool, one callback that blocks leaves its pool's
// worker stuck: the callbacks still queued on that pool that other pools'
// workers have not taken then get a goroutine each, where one pool of all
// the workers started one goroutine beside the others.) Unless the
// CPU is what the goroutines wait for: the process used 90% of its
// processors over the last 2ms, goroutines the pool woke have not come for
// work within half the stall delay, or the stuck ones have been in their
// callback less than twice the runtime's recent scheduling latency (p99).
// Then a goroutine that looks stuck is more likely descheduled (by a GC
// cycle, by other goroutines) than blocked, more goroutines would only queue
// for the CPU beside it, and the pool starts WithWorkers more. So a
// callback that blocks, or takes seconds, holds up other callbacks by at
// most about the stall delay, whatever they do, as long as goroutines can
// be started and the CPU is not saturated: N callbacks due in one tick that
// all block, N up to 256, all start within a tick plus the stall delay of
// their deadline. The goroutines added exit
// once they find no work and the stuck ones are back. Callbacks that are
// short, or slow but each under half the stall delay, never start a
// goroutine: the workers keep up, and callbacks start in the order their
// timers became due (those of one shard: see Cores), or, when they need
// more CPU than there is, run late, in that order.
//
// A callback that panics is recovered; the value goes to the
// [WithPanicHandler] function, and the worker goes on. Callbacks may call any
// method of the SystemTimer and of any Timer, including [SystemTimer.Stop].
//
// # Stopping
//
// [Timer.Stop] is definitive: if it returns true, the callback never runs; if
// it returns false, the callback has been handed to the executor (it ran, is
// running, or is about to run) or the timer was already stopped. This holds
// while the driver is moving the timer between buckets or handing it to the
// pool, and whatever other goroutines do to the same timer at the same time.
// [Timer.Reset] behaves like [time.Timer.Reset].
//
// # Concurrency
//
// Any methods of one Timer, of Timers of one shard and of the SystemTimer
// may be called at the same time from any goroutines; the results are those
// of some sequential order of the calls. What makes that hold is one rule,
// written out state by state beside the state constants in timer.go: a
// timer's links are written by one goroutine at a time, and its state says
// which. A pending timer is linked into its shard's lists and only the
// shard's lock holder writes its links; it leaves pending (stopped, fired,
// returned) only under that lock and only after it is unlinked, so a Reset
// that re-arms it without the lock never writes links a lock holder still
// reads. A re-arm takes the timer into a state nobody else acts on, pushes
// it, and only then makes it queued; a Stop takes a queued timer into the
// same state to pop it off the stack. A shard that SystemTimer.Stop has
// closed refuses pushes. So every push that succeeds lands on a stack that
// the driver or SystemTimer.Stop takes, and nobody can stop or reset a
// re-armed timer before its push has succeeded. No user code, a Scheduler's
// Next included, runs under a shard's lock.
//
// The concurrency tests race every pair of operations that can come at once
// on one timer, one shard and the SystemTimer, in child processes, and a
// separate module (conctest) checks histories of concurrent operations for
// linearizability against a sequential model of a timer. Built with the
// timingwheel_failpoints tag, the library yields or spins in the windows
// between a state change and the writes that follow it, so that the tests
// reach those windows in seconds; without the tag the hooks compile to
// nothing. With the tag, a test can also park a goroutine at a named
// window until it lets it go: the window tests (TestConcurrentWindow...)
// put the racing operation inside each window that matters, every run. A
// mutation check (go run ./scripts/mutants) puts plausible bugs into the
// state machines one at a time and demands that the CI's tests catch each,
// every time.
//
// # Timers in the caller's structs
//
// A server keeps a timer per connection, session or worker. [SystemTimer.Bind]
// binds a [Timer] that is a field of the caller's own struct to the
// SystemTimer and a function, once; Reset arms it and Stop disarms it, as
// often as needed, and neither allocates. The zero Timer is unbound: its
// methods panic, as a time.Timer's do when it was not made by the time
// package.
//
// Once Stop has returned true, or the timer's function has returned, and no
// other call on the timer is under way, the library holds no pointer to
// the timer: the struct holding it may be zeroed, pooled and bound again.
// (A Stop that finds the timer still on its shard's incoming stack takes it
// off: by one CAS if it is on top, as it is when nothing else was armed on
// the shard since; else by draining the stack under the shard's lock.)
//
// # Bounds
//
// [WithMaxPending] bounds the timers pending at once, whichever way they
// became pending: AfterFunc and ScheduleFunc return [ErrTooManyPending],
// Reset of a timer that is not pending arms nothing and [Timer.TryReset]
// reports the error, and a context is canceled with it as its cause. A
// timer already pending is never refused, whatever Reset does to it, and a
// periodic series holds one place from ScheduleFunc until it ends, during
// its runs too. The bound is exact: an arming refused has collected the
// places every shard kept free for itself (see Cores), and while few places
// are left free, no shard adds to those it keeps; so a refusal is made only
// while the bound is reached by timers pending or being armed, but for
// armings and stops made at the same time. One exception: a periodic timer
// restarted by Reset after its series ended, which may be refused while
// shards other than its own keep up to 32 free places each.
//
// [SystemTimer.Stop] is idempotent. Once it returns, no callback starts and
// AfterFunc returns [ErrStopped]. It returns every timer whose callback never
// started, so nothing is lost, and it returns only after every goroutine the
// SystemTimer started has exited, except the callback calling it, if any: a
// callback may stop its own SystemTimer without deadlock.
//
// # Periodic timers
//
// [SystemTimer.ScheduleFunc] runs a function at the times a [Scheduler]
// gives. Each time is computed from the previous scheduled time, not from when
// the previous run happened, so the series does not drift. Runs of a series
// never overlap: when a run overruns the next scheduled time, the times that
// have passed are skipped, as [time.Ticker] drops ticks. A Stop or Reset
// made during a run takes effect when the run returns; Reset(d) with d <= 0
// runs the function now (or right after the run in progress) and continues
// the series from now. A Scheduler's times are measured as [time.Until]
// measures them: a cron schedule's wall-clock times are not moved by a step
// of the wall clock. A Scheduler's Next runs on the executor with no lock
// held; a Next that panics, or returns a time not after the one before, ends
// the series, and the [WithPanicHandler] function receives the panic value or
// an error that says so.
//
// # Contexts
//
// [SystemTimer.WithTimeout] and [SystemTimer.WithDeadline] return contexts
// that behave like those of the context package, with the deadline on the
// wheel instead of in a runtime timer: the same Err and [context.Cause] in
// the same cases and order, Value, Deadline (exact), String, and
// [context.AfterFunc] and [context.WithoutCancel] on them. A context derived
// from one, by the context package or any code, directly or through WithValue
// layers and types that embed it, attaches to it as to a standard one: with no
// goroutine, and, when the wheel context expires (DeadlineExceeded), is
// canceled or ends with a wheel context above it, it is done before that call
// returns. A wheel context below another, whatever lies between, is ended by
// it the same way.
//
// The context package runs no code of other packages when one of its own
// cancelable contexts is canceled. So a cancellation that starts at a
// standard cancelable context above a wheel context (a server's request
// context when the client goes away) reaches the wheel context through
// [context.AfterFunc]: one goroutine, started at that cancellation and none
// before. Readers cannot tell: after the standard context's cancel returns,
// the Err, Done, Value and [context.Cause] of every wheel context below it
// look up their chain of wheel ancestors and find it done, and a reader who
// sees a wheel context ended sees every context derived from it ended too,
// as the context package's cancel ends the whole subtree before anyone can
// see it returned. What still shows the hop is a standard context derived
// from such a wheel context, read before anything has looked at the wheel
// context or the goroutine has run, and a Done channel taken before the
// cancel: it is closed a goroutine hop later. A parent with an AfterFunc method of
// its own is followed through it, synchronously if it runs functions so.
// The alternative, tying the wheel context to such a parent as a standard
// child is tied, would give the contexts derived from it the parent's errors
// and never DeadlineExceeded when the deadline passes, which request
// deadlines need.
//
// The wheel releases a context's entry as soon as it ends, by whatever
// cause. A context the SystemTimer cannot hold is canceled at birth with
// context.Canceled, its cause saying why: [ErrStopped], [ErrTooManyPending].
// Contexts pending when [SystemTimer.Stop] is called are canceled, with the
// cause ErrStopped.
//
// A context costs two allocations, against context.WithTimeout's four, until
// something waits for it or derives from it; then five more, of which the
// context package's own done channel is one, against one: the standard
// cancelable context that derived contexts attach to, and what ties it to the
// wheel. A standard cancelable parent adds context.AfterFunc's two. Seven
// against five, nine against five under a server's request context.
//
// # Channel timers
//
// [SystemTimer.NewTimer], [SystemTimer.After], [SystemTimer.NewTicker] and
// [SystemTimer.Tick] are the time package's NewTimer, After, NewTicker and
// Tick on the wheel: a [ChanTimer] or a [Ticker] delivers on its channel C,
// with the time package's semantics since Go 1.23. After Stop or Reset
// returns, no receive sees a value from before; the value is the time the
// timer was due; a ticker drops ticks for a slow receiver, and
// [Ticker.Reset] changes its period (a ScheduleFunc series' Reset moves its
// next run and keeps the period). Never early, at most a tick late, as
// every timer here. Where they differ from the runtime's:
//
//   - C has a buffer of one value, so len(C) and cap(C) are those of a
//     buffered channel; the runtime's timer channels report 0 for both.
//   - A channel timer that nobody references and nobody stopped stays
//     pending in the wheel until it fires, where the garbage collector
//     collects such a runtime timer. So After in a loop (a select with
//     a timeout per iteration) keeps one timer per iteration pending for
//     its whole delay: make one with NewTimer and Reset it per iteration.
//   - NewTimer and NewTicker return [ErrTooManyPending] beyond
//     [WithMaxPending]'s bound; After and Tick, which cannot, fall back to
//     time.After and time.Tick.
//   - Channel timers outlive their SystemTimer, as the time package's
//     never stop: [SystemTimer.Stop] does not return them, and those
//     pending then, and those made or reset after, run on timers of the
//     clock (the runtime's by default). A goroutine waiting on C is never
//     stranded by a shutdown.
//
// # Clocks
//
// By default the SystemTimer reads the monotonic clock. [WithClock] injects
// another, such as clock.NewMock for tests. A mock clock fires only the timers
// that exist when it is advanced, and computes a timer's deadline from its own
// idea of now when the timer is armed, so an advance that lands while the
// driver is arming its timer could be missed; with any clock other than the
// real one the driver therefore also looks at the clock once every
// millisecond of real time while it waits. Advancing a mock clock past a
// deadline is thus enough to fire the callback. If an injected clock goes
// backwards, nothing fires early: a timer armed after the jump waits until
// the clock reaches its deadline again, or later.
package timingwheel
