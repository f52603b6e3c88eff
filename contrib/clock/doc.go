// Package twclock adapts a timingwheel.SystemTimer to the clock interfaces
// that other libraries accept, so that code written against them runs its
// timers, tickers and AfterFunc callbacks on the wheel:
//
//	import twclock "github.com/go-timingwheel/timingwheel/contrib/clock"
//
//	var c clock.WithTickerAndDelayedExecution = twclock.NewK8s(st) // k8s.io/utils/clock
//	var w clockwork.Clock = twclock.NewClockwork(st)               // github.com/jonboulle/clockwork
//
// A nil st is timingwheel.Default, the SystemTimer of timingwheel's
// package-level functions: NewK8s(nil) is the one-line migration of a
// clock.RealClock.
//
// It lives in a module of its own, so that the timingwheel module requires
// neither k8s.io/utils nor clockwork. Its package name is not clock, so that
// it does not collide with k8s.io/utils/clock in the importing file. Both
// adapters are in one package because they are one adapter with two method
// sets: the timers and tickers they return are the same types, which carry
// both libraries' channel accessors (C for k8s, Chan for clockwork).
//
// # What runs where
//
// NewTimer, After, NewTicker, Tick, AfterFunc and Sleep run on the wheel:
// never early, at most one wheel tick late, with the time package's channel
// semantics since Go 1.23 (after Stop or Reset returns, no receive sees a
// value from before; see timingwheel.SystemTimer.NewTimer for the few
// differences a library cannot remove). Sleep(d) is a receive from After(d),
// not time.Sleep, so that it keeps the wheel's clock, as every other wait
// of the adapter does: under a SystemTimer made WithClock(mock), Sleep
// returns when the mock says so.
//
// Now, Since and Until read the real clock (time.Now), which is the wheel's
// default clock. The SystemTimer does not expose its clock: with a
// SystemTimer made WithClock, Now does not follow that clock, while the
// timers do.
//
// An AfterFunc callback runs on the wheel's executor pool, not on a
// goroutine of its own as time.AfterFunc's does: a callback that blocks holds
// up the others by at most the pool's stall delay (see the timingwheel
// package doc), and a callback that panics is recovered and reported to the
// SystemTimer's panic handler, where time.AfterFunc's would crash the
// program. The Timer that AfterFunc returns has a nil channel, as the real
// clocks' have.
//
// # When the wheel cannot arm a timer
//
// The interfaces have no error returns, and a nil Timer or Ticker would
// crash their callers. So where the SystemTimer refuses to arm one (it is
// stopped, timingwheel.ErrStopped, or WithMaxPending's bound is reached,
// timingwheel.ErrTooManyPending), the adapter falls back to the time
// package: NewTimer, NewTicker and AfterFunc return a timer or ticker made by
// time.NewTimer, time.NewTicker or time.AfterFunc, and After and Tick return
// time.After's and time.Tick's channel. A Reset that the wheel refuses moves
// the timer or ticker to the time package the same way, for the rest of its
// life; from then on C and Chan return the new timer's channel, so a caller
// that kept the channel from before must call C again.
//
// Channel timers and tickers outlive their SystemTimer (see
// timingwheel.SystemTimer.NewTimer): those pending when it is stopped go on,
// on the clock's timers, so a goroutine waiting on C or Chan is not
// stranded. AfterFunc callbacks pending then never run (SystemTimer.Stop
// returns them to its caller, not to the adapter), and their timers' Stop
// and Reset return false, where a time.Timer's would return true: code that
// waits for the callback after a Stop that returned false (the idiom of
// time.Timer.Stop's doc) would wait for ever. Stop the SystemTimer after
// the code using the clock has stopped waiting on it.
//
// Misuse panics, as it does with the time package and with its message:
// NewTicker and a Ticker's Reset with a period d <= 0 (Tick(d) then returns
// nil, as time.Tick does); and AfterFunc with a nil function, at once,
// where time.AfterFunc would panic on a goroutine of its own when the timer
// fires.
//
// clockwork.WithTimeout and clockwork.WithDeadline use the wheel only for a
// clockwork.FakeClock; for contexts on the wheel, use the SystemTimer's
// WithTimeout and WithDeadline.
package twclock
