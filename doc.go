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
// time and context packages' functions of the same names:
//
//	t := timingwheel.AfterFunc(30*time.Second, func() { conn.Close() }) // was time.AfterFunc
//	ctx, cancel := timingwheel.WithTimeout(ctx, 2*time.Second)          // was context.WithTimeout
//
// The variables, fields and results that hold their timers change type too
// (*time.Timer to *[Timer] or *[ChanTimer], *time.Ticker to *[Ticker]); the
// command cmd/twmigrate makes both changes across a program and reports
// what it cannot prove safe.
//
// They run on the SystemTimer that [Default] returns, made with the default
// options on first use and never stopped, as the runtime's timers never
// stop: a program that does not call them starts nothing for them. With no
// Stop and no bound, the errors of a SystemTimer's methods cannot happen on
// it, and the functions return none; [SystemTimer.Stop] panics on it. A
// SystemTimer made by [New] has options (the tick, [WithMaxPending]'s bound,
// the workers, the panic handler, a clock for tests) and Stop, which ends
// its goroutines and returns the timers that never ran. The packages built
// on this one (httptimeout, idleconn, contrib/clock) take a nil
// *SystemTimer for the default. A test in a testing/synctest bubble needs a
// SystemTimer made in the bubble: the default runs its goroutines outside.
//
// # Design
//
// A [SystemTimer] keeps its timers in a hierarchy of wheels. A wheel level
// has wheelSize buckets ([WithWheelSize]); a bucket of level 0 holds the
// timers of one tick ([WithTick]), a bucket of level k the timers of
// wheelSize^k ticks. A deadline beyond the reach of a level goes up to the
// next, created on demand. Each bucket is a doubly linked list, so adding
// and stopping a timer are O(1) whatever the number of timers. With the
// defaults (tick 1ms, wheel size 512) levels 0 to 3 reach 512ms, 4m22.144s,
// 37h16m57.728s and 795 days, and level 4 past the largest [time.Duration].
//
// A bucket that holds timers sits in a delay queue (package delayqueue)
// under its expiration. A driver goroutine sleeps until the earliest
// bucket is due; nothing wakes for the empty ticks in between, so timers
// far off cost no CPU. When a bucket is due, the driver takes its timers
// out at once and adds each again: a timer from a higher level cascades
// into a lower one, and a due timer goes to the executor. A bucket above
// level 0 expires a quarter of its width early, and its timers are
// cascaded a chunk at a time between due buckets, so cascading a million
// timers holds up no callback.
//
// AfterFunc takes no lock: it pushes the new timer on its shard's
// lock-free stack, and the driver, or an AfterFunc that finds the stack
// long, places the stacked timers in their buckets. The driver publishes
// when it will next do so, and an AfterFunc due before that places its
// timer itself, so the stack never makes a timer late.
//
// A timer's state and deadline share one atomic word (timer.go), so
// [Timer.Reset] pushes a pending timer back without the lock: it stores the
// later deadline and leaves the timer in its bucket; when that bucket comes
// due, the driver finds the later deadline and places the timer again. A
// timeout pushed back on every request costs one clock read and one
// compare-and-swap per push, and is placed again about once per timeout.
// Moving a timer earlier takes the shard's lock and moves it at once.
//
// # Precision
//
// A deadline is kept rounded up to 16ns (the unit of the state word), not
// to the tick. A bucket of level 0 comes due at the earliest deadline it
// holds, so a timer alone in its bucket, the common case for a short
// timeout, runs at its deadline. When a bucket expires, its timers not yet
// due are queued again at the end of the tick: a crowded tick (a storm) is
// expired at most twice, and its timers run in [deadline, end of the tick
// of their deadline rounded up to 16ns].
//
// A driver sleeps on a runtime timer and, on Linux with the real clock, on
// a timerfd armed for the same instant (internal/timerfd); the first to
// fire wakes it. On an idle machine the runtime's timer alone comes up to a
// millisecond late: the netpoller sleeps in whole milliseconds. The timerfd
// ends that sleep at once. It costs a descriptor and a goroutine per shard
// and a system call each time a driver sleeps with a deadline ahead.
//
// Nothing ever runs before its deadline, on any clock; Kafka's SystemTimer
// runs callbacks up to a tick early. [SystemTimer.AfterFunc] with d <= 0
// hands the callback to the executor at once. A [Ticker] whose period is
// under the tick ticks at most once a tick. Deadlines in the tick that
// reaches the largest [time.Duration] after New, or beyond, never come (36
// years with ticks under 8ns).
//
// # Cores
//
// The wheels are kept in shards, as many as GOMAXPROCS rounded up to a
// power of two (at most 64), each with its own lock, stack, delay queue,
// driver and executor pool. A timer goes to the shard of the processor
// (the runtime's P) that makes or binds it, as the runtime keeps its timers
// per P, so goroutines on different processors arm, stop and reset their
// own timers without meeting on a lock or a cache line. The processor's id
// comes from the runtime's procPin (internal/proc): a few instructions,
// none atomic. Processors beyond the shards share them. A processor counts
// its pushes while pinned and adds them to its shard's count 32 at a time.
//
// A timer that is not pending moves to the shard of the processor that
// re-arms it, so a connection's timer bound on the accept loop follows the
// goroutine that serves it. The goroutine that owns the timer moves it,
// under the old shard's lock, only when the shard changes. Whoever holds a
// shard's lock and finds a timer naming that shard has the timer's shard
// while it holds the lock. Tickers' next ticks, periodic timers and
// contexts never move. Any goroutine may act on any timer: placement is
// locality, never correctness. [WithMaxPending]'s places are kept per
// shard, taken from the shared count 16 at a time (see Bounds).
//
// A driver expires its own shard's buckets and nothing else, so a shard
// with nothing due wakes nobody and shards expire and cascade on several
// cores at once; at most half the processors cascade lists that are not
// yet urgent at once, so that a storm's cascades leave the workers cores.
// The price: a driver per shard, asleep while nothing is due, and timers of
// different shards due together run in either order, as the runtime's
// timers of different processors do (docs/testing.md: the locality tests).
//
// # Callbacks
//
// A channel timer's run ([ChanTimer], [Ticker], Sleep, After) is a send
// that never blocks: when a bucket brings a few due and nothing else, the
// driver sends itself, so that they never wait behind blocked callbacks.
//
// Callbacks run on the executor (internal/executor), never on a driver and
// never inside AfterFunc: a pool per shard, [WithWorkers] goroutines shared
// out among them, and a worker whose pool is empty steals from the others,
// so a storm armed by one goroutine runs on every worker. A callback that
// blocks or runs long holds up others by at most the stall delay (the tick,
// at most 1ms): the executor then starts goroutines for the callbacks queued
// behind it, one per callback when all of a pool's workers are stuck, as
// [time.AfterFunc] would; when goroutines are waiting for a processor, a
// stuck worker is more likely descheduled than blocked, and it starts only
// the pool's size more per look. Callbacks that are only slow start no
// goroutine: they run late, in the order their timers became due.
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
// The concurrency tests race every pair of operations that can come at
// once; conctest checks histories for linearizability; the
// timingwheel_failpoints build tag parks goroutines inside each window
// between a state change and the writes that follow it; and scripts/mutants
// demands that the tests catch plausible bugs put into those windows.
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
// held (the first, in the caller); a Next that panics, or returns a time not
// after the one before, ends the series, and the [WithPanicHandler] function
// (for the first, the caller) receives the panic value or an error.
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
// A standard cancelable context above a wheel context (a server's request
// context) reaches it through [context.AfterFunc]: one goroutine, started at
// that cancellation, since the context package runs no code of other
// packages in a cancel. Readers cannot tell: after that cancel returns, the
// Err, Done, Value and [context.Cause] of every wheel context below it look
// up their chain of wheel ancestors and find it done, and whoever sees a
// wheel context ended sees every context derived from it ended, as under the
// context package. What still shows the hop: a standard context derived
// from such a wheel context, read before anything looked at the wheel
// context, and a Done channel taken before the cancel, closed a goroutine
// hop later. A parent with an AfterFunc method of its own is followed
// through it.
//
// The wheel releases a context's entry as soon as it ends, or after a
// standard parent's cancel, as soon as it hears of it (see WithDeadline). A
// context the SystemTimer cannot hold is canceled at birth with
// context.Canceled, its cause [ErrStopped] or [ErrTooManyPending]; contexts
// pending at [SystemTimer.Stop] are canceled with the cause ErrStopped. A
// context costs two allocations until something waits for it or derives
// from it, then five more (context.WithTimeout: four, then one more).
//
// # Channel timers
//
// [SystemTimer.NewTimer], [SystemTimer.After], [SystemTimer.NewTicker] and
// [SystemTimer.Tick] are the time package's functions on the wheel, with
// its channel semantics since Go 1.23: after Stop or Reset returns, no
// receive sees a value from before; the value is the time the timer was
// due; a ticker drops ticks for a slow receiver. As precise as AfterFunc.
// Where they differ from the runtime's:
//
//   - C has a buffer of one value: len(C) and cap(C) are a buffered
//     channel's, where the runtime's timer channels report 0.
//   - A channel timer nobody references stays pending until it fires, where
//     the garbage collector collects a runtime timer: After in a loop keeps
//     one timer per iteration pending; make one with NewTimer and Reset it.
//   - NewTimer and NewTicker return [ErrTooManyPending] beyond
//     [WithMaxPending]'s bound; After and Tick fall back to time.After and
//     time.Tick.
//   - Channel timers outlive their SystemTimer, as the time package's never
//     stop: those pending at [SystemTimer.Stop], and those made or reset
//     after, run on timers of the clock, so no receiver is stranded.
//
// # Clocks
//
// By default the SystemTimer reads the monotonic clock. [WithClock] injects
// another, such as clock.NewMock for tests; with any clock but the real one
// the driver also looks at the clock every millisecond of real time, so
// advancing a mock clock past a deadline is enough to fire the callback,
// even an advance that lands while the timer is being armed. If a clock
// goes backwards, nothing fires early: a timer waits until the clock
// reaches its deadline again.
package timingwheel
