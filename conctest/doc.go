// Package conctest checks that the Timers of package timingwheel, and its
// channel timers (ChanTimer, Ticker), are linearizable: that every result a
// history of concurrent operations produced is one that some order of
// those operations, each taking effect at one instant between its call and
// its return, produces on a sequential model of the timers. The checker
// is porcupine (github.com/anishathalye/porcupine). The package has no
// code of its own, only tests; it is a module apart so that porcupine does
// not become a dependency of the library.
//
// # Histories
//
// A history of Timers is a fresh SystemTimer (WithTick(100µs)) with 2 to 4
// timers, each made by AfterFunc(d) or bound, idle, by Bind, and 3 or 4
// goroutines per timer, each making 3 to 6 operations on it: Stop, Reset(d)
// and TryReset(d), d drawn from 0, a negative duration, a few ticks, a few
// milliseconds and an hour, with pauses between them, under GOMAXPROCS(8),
// above the core count, so that the OS preempts goroutines anywhere. Every
// history ends with SystemTimer.Stop; in some, another Stop starts at a
// random moment, racing the operations and the AfterFunc calls that make
// timers. Each operation is recorded with its call and return times (the
// monotonic clock, in ns since the history began) and its results; each
// callback records when it started; each SystemTimer.Stop, whether the slice
// it returned holds each timer. Each test runs in a child process, so that a
// crash or a hang fails that test alone.
//
// # The model
//
// The state of a timer is: whether it exists, whether it is pending (armed,
// and neither handed to the executor nor stopped), the least deadline it
// can have (the call time of the operation that armed it plus d: the
// library reads the clock after the call), how many runs handed to the
// executor at once (by AfterFunc or Reset with d <= 0) have not been
// observed yet, whether a pending run was handed off and never started,
// and whether SystemTimer.Stop has closed it.
//
//   - AfterFunc(d) creates the timer: pending with deadline at least
//     call+d, or, if d <= 0, handed to the executor at once. Bind creates
//     it idle. After Stop closed the timer, AfterFunc fails with ErrStopped
//     and no timer exists.
//   - Stop returns whether the timer was pending, and leaves it not pending.
//   - Reset(d) and TryReset(d) return whether it was pending; then, if
//     d > 0, it is pending with the new least deadline, and if d <= 0 its
//     run is handed off at once. After Stop closed it they return false
//     (TryReset: ErrStopped) and change nothing.
//   - A run is linearized at its hand-off to the executor: its interval
//     runs from the creation of the timer to the callback's start. It is
//     either one of the runs handed off at once, or the hand-off of a
//     pending timer, which needs the start to be at or after the least
//     deadline (a timer never fires early). No run is handed off once the
//     timer is closed.
//   - A pending timer may be handed off for a run that never starts
//     (SystemTimer.Stop takes it from the executor's queue): a hidden
//     transition, allowed before any operation, which makes the model
//     nondeterministic.
//   - SystemTimer.Stop returns the timer if and only if it is pending, or
//     owes a run that has not started (handed off at once and not observed,
//     or handed off silently); then the timer is closed. A later Stop
//     returns nil.
//
// SystemTimer.Stop closes the shards one after another, so each timer is
// closed at its own instant within the call: the Stop of a history is one
// operation per timer, with the call's interval. Without WithMaxPending the
// timers are independent and each is checked alone (porcupine's
// partitions). With WithMaxPending(n), the timers are checked together:
// arming a timer that is not pending with d > 0 fails with
// ErrTooManyPending if and only if n timers are pending (Reset says nothing;
// it arms nothing), and a pending timer, or d <= 0, is never refused.
//
// Outside the model, each history checks that no callback starts after
// SystemTimer.Stop returned (a run may be handed off before Stop and start
// late: the model alone allows it), and that the slice Stop returns holds
// no timer twice and none that AfterFunc did not return.
//
// # Channel timers
//
// TestLinearizableChan and TestLinearizableTicker record histories of one
// ChanTimer or Ticker (WithTick(100µs) again) and 3 or 4 goroutines that
// make 4 to 8 operations each on it: Stop, Reset(d), TryReset(d), a receive
// from C with a select's default, and a receive that waits a tick, a few
// or a millisecond for a value (and looks once more when the wait ends, so
// that a value that came before it was waiting is not lost to the race of
// the select), d drawn from 0 (ChanTimer only; not negative, see
// TestChanTimerNegativeDuration), a tick or less, a few ticks (Ticker), a
// few ms and an hour. In half of the histories,
// SystemTimer.Stop comes at a random moment among the operations, and in
// half of those the timer is made after the operations start, racing it.
// Then, alone: a receive that waits for a value the history may still owe
// (see below); SystemTimer.Stop, if it has not come; Reset to a tick and a
// receive that waits for its value; Stop; a receive that gets none. A
// value received is recorded as a time of the history (both it and the
// history's base carry monotonic readings).
//
// A channel timer outlives its SystemTimer, on a timer of the clock: in
// the model, SystemTimer.Stop changes nothing. A deadline is read from the
// clock during the call that arms it, so the model knows it as bounds:
// [call+d, return+d].
//
//   - ChanTimer: the state is whether the timer is pending (armed, or its
//     value in C: Stop and Reset report both, and take back a value not
//     received) and the bounds of its deadline. NewTimer, Reset and
//     TryReset arm it; Stop, Reset and TryReset return whether it was
//     pending, and TryReset never fails. A receive that gets a value v
//     needs the timer pending and v within the bounds (the value is the
//     deadline of the current arming, not the time it was sent) and at or
//     before the receive's return (it is never sent before it is due);
//     then the timer is not pending: one value per arming, and none after
//     a Stop or Reset that returned. A receive that gets none is wrong only
//     if the timer is pending and the moment it saw C empty (its call; for
//     a waiting receive, the call plus the wait) is more than maxLate past
//     the deadline's upper bound.
//   - Ticker: the state is whether it is armed, its period, the bounds of
//     its schedule's origin (the first tick), the last tick received since
//     the arming, and when the next tick is due at the latest. A tick
//     received must be later than the last, at or before the receive's
//     return, and origin+k*period for an origin within the bounds; it
//     narrows the bounds to the origins that put it on the schedule, so
//     later ticks must fall on the same points. A receive that gets none
//     is wrong if the ticker is armed and it saw C empty more than maxLate
//     after the next tick was due: the origin's upper bound, or a period
//     after the return of the receive that took the last tick (the run that
//     delivered it armed the next within a period, and a tick that finds C
//     full is dropped). Stop disarms; Reset and TryReset arm a new schedule.
//
// maxLate, 100ms, bounds how late a value may come: far above the tick
// and scheduling delay, so that only a value lost for good trips it. To
// catch one, the receive after the operations waits until maxLate past the
// deadline of every arming that may be linearized last (unless one of
// them is a Stop or an arming for an hour, or, for a ChanTimer, a receive
// got a value within the bounds of one: then it would wait for nothing),
// and the receive after the last Reset waits for its value.
//
// TestChanModel and TestTickerModel feed the models hand-written
// histories: legal ones, and one for each wrong result. TestChanMutants
// records histories through faults put between them and the timer
// (values relayed through a buffer that Stop cannot empty, delivered
// twice, lost, or stamped when sent; a Stop that lies; armings for half
// the duration asked, or for an hour) and demands that the checker catch
// each.
//
// A test reproduces each bug these tests found in the library, and guards
// its fix: TestChanTimerNegativeDuration (NewTimer(d) and Reset(d) with
// d < 0 sent the call's time plus d, where the time package sends the
// call's time), TestTickerAfterStopRace (a data race in NewTicker on a
// stopped SystemTimer, which TestLinearizableTicker found under -race).
//
// # Running
//
// go test ./... runs each test for a few seconds (more under -race; the
// channel timers' for less);
// CONCTEST_HISTORIES=n records n histories per test, CONCTEST_BUDGET=d
// bounds the time, CONCTEST_SEED fixes the operations (not their
// interleaving), and CONCTEST_VIS_DIR keeps porcupine's visualization of a
// history that fails. Build with -tags timingwheel_failpoints to widen the
// library's race windows. The WithMaxPending tests found that the library
// refused armings below the bound (its count of pending timers ran out of
// step with their states); they guard the fix.
package conctest
