// Package conctest checks that the Timers of package timingwheel are
// linearizable: that every result a history of concurrent operations
// produced is one that some order of those operations, each taking effect
// at one instant between its call and its return, produces on a
// sequential model of the timers. The checker is porcupine
// (github.com/anishathalye/porcupine). The package has no code of its own,
// only tests; it is a module apart so that porcupine does not become a
// dependency of the library.
//
// # Histories
//
// A history is a fresh SystemTimer (WithTick(100µs)) with 2 to 4 timers,
// each made by AfterFunc(d) or bound, idle, by Bind, and 3 or 4 goroutines
// per timer, each making 3 to 6 operations on it: Stop, Reset(d) and
// TryReset(d), d drawn from 0, a negative duration, a few ticks, a few
// milliseconds and an hour, with pauses between them, under GOMAXPROCS(8),
// above the core count, so that the OS preempts goroutines anywhere. Every
// history ends with SystemTimer.Stop; in some, another Stop starts at a
// random moment, racing the operations and the AfterFunc calls that make
// timers. Each operation is recorded with its call and return times (the
// monotonic clock, in ns since the history began) and its results; each
// callback records when it started; each SystemTimer.Stop, whether the
// slice it returned holds each timer. Each test runs in a child process,
// so that a crash or a hang fails that test alone.
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
// # Running
//
// go test ./... runs each test for a few seconds (more under -race);
// CONCTEST_HISTORIES=n records n histories per test, CONCTEST_BUDGET=d
// bounds the time, CONCTEST_SEED fixes the operations (not their
// interleaving), and CONCTEST_VIS_DIR keeps porcupine's visualization of a
// history that fails. Build with -tags timingwheel_failpoints to widen the
// library's race windows. The WithMaxPending tests found that the library
// refused armings below the bound (its count of pending timers ran out of
// step with their states); they guard the fix.
package conctest
