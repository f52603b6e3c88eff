package timingwheel

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/benbjohnson/clock"
)

// Defaults and bounds, documented on the options and in the package doc.
const (
	defaultTick      = time.Millisecond
	defaultWheelSize = 512

	// maxWheelSize bounds WithWheelSize: every level of every shard holds
	// a bucket array of this many entries.
	maxWheelSize = 1 << 16
	maxWorkers   = 1 << 16

	// maxTick bounds WithTick. A callback runs up to a tick late, so a
	// tick of an hour makes a 1ms timer fire an hour late; and a coarse
	// tick saves nothing, since the driver sleeps until the next bucket
	// that holds timers however fine the tick is. A minute is already far
	// coarser than any timeout needs.
	maxTick = time.Minute
)

// An Option configures a SystemTimer in New.
type Option interface {
	apply(*config)
}

type config struct {
	tick       time.Duration
	wheelSize  int
	clock      clock.Clock
	clockSet   bool
	workers    int
	maxPending int
	onPanic    func(any)
	manual     bool // tests: no driver or workers; step runs due work
	byAddress  bool // tests and benchmarks: a timer's shard by its address, not by the processor that arms it (see SystemTimer.shardFor)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithTick sets the tick of the lowest wheel: the width of its buckets. A
// callback runs at its deadline when it is alone in its tick, and at most
// one tick after it when the tick is crowded (see "Precision" in the
// package doc). From 1ns to 1 minute; default 1ms.
func WithTick(d time.Duration) Option {
	return optionFunc(func(c *config) { c.tick = d })
}

// WithWheelSize sets the number of buckets per wheel level, from 2 to
// 65536. Default 512.
func WithWheelSize(n int) Option {
	return optionFunc(func(c *config) { c.wheelSize = n })
}

// WithClock sets the clock, for tests; clock.NewMock() makes time move only
// when the test says so. Default clock.New(), the real clock.
func WithClock(cl clock.Clock) Option {
	return optionFunc(func(c *config) { c.clock, c.clockSet = cl, true })
}

// WithWorkers sets how many worker goroutines wait to run callbacks, from 1
// to 65536. Default runtime.GOMAXPROCS(0), at least 2. They are shared out
// among the shards' pools, a pool per shard while there are at least as
// many workers as shards (see the package doc's Cores), and a pool's
// workers take another pool's callbacks when theirs are done. See the
// package doc for what happens when all of them are busy.
func WithWorkers(n int) Option {
	return optionFunc(func(c *config) { c.workers = n })
}

// WithMaxPending bounds the number of pending timers: beyond it AfterFunc
// and ScheduleFunc return ErrTooManyPending. 0, the default, means no bound.
func WithMaxPending(n int) Option {
	return optionFunc(func(c *config) { c.maxPending = n })
}

// WithPanicHandler sets the function that receives the value a callback
// panicked with. It runs on the worker that ran the callback, which then
// goes on; if h panics in turn, the program crashes, as on a panic in a
// callback of time.AfterFunc. Default: log the value with log/slog, and
// write it with the goroutine's stack to standard error, as the runtime
// prints a panic.
func WithPanicHandler(h func(v any)) Option {
	return optionFunc(func(c *config) { c.onPanic = h })
}

// withManual makes New start no goroutines; tests drive the timer with step.
func withManual() Option {
	return optionFunc(func(c *config) { c.manual = true })
}

// withAddressShards places timers on a shard chosen by their address, for
// good, instead of on the shard of the processor that makes or re-arms
// them: for tests that need timers on a given shard, and BenchmarkParallel,
// which measures both placements (see doc.go, "Cores").
func withAddressShards() Option {
	return optionFunc(func(c *config) { c.byAddress = true })
}

var errNilOption = errors.New("timingwheel: nil Option")

func buildConfig(opts []Option) (config, error) {
	c := config{
		tick:      defaultTick,
		wheelSize: defaultWheelSize,
		workers:   max(2, runtime.GOMAXPROCS(0)),
		onPanic:   logPanic,
	}
	for _, o := range opts {
		if o == nil {
			return c, errNilOption
		}
		o.apply(&c)
	}
	switch {
	case c.tick <= 0 || c.tick > maxTick:
		return c, fmt.Errorf("timingwheel: WithTick(%v): the tick must be from 1ns to %v (a callback may run a tick late)", c.tick, maxTick)
	case c.wheelSize < 2 || c.wheelSize > maxWheelSize:
		return c, fmt.Errorf("timingwheel: WithWheelSize(%d): the wheel size must be from 2 to %d", c.wheelSize, maxWheelSize)
	case c.clockSet && c.clock == nil:
		return c, errors.New("timingwheel: WithClock(nil): the clock must not be nil")
	case c.workers < 1 || c.workers > maxWorkers:
		return c, fmt.Errorf("timingwheel: WithWorkers(%d): the number of workers must be from 1 to %d", c.workers, maxWorkers)
	case c.maxPending < 0:
		return c, fmt.Errorf("timingwheel: WithMaxPending(%d): the bound must not be negative (0 means none)", c.maxPending)
	case c.onPanic == nil:
		return c, errors.New("timingwheel: WithPanicHandler(nil): the handler must not be nil")
	}
	if c.clock == nil {
		c.clock = clock.New()
	}
	return c, nil
}

// panicOutput is where the default panic handler writes the stack. Tests
// replace it.
var panicOutput io.Writer = os.Stderr

// logPanic is the default panic handler. It logs the value with log/slog,
// as an error record a log pipeline can count, and writes the value with
// the goroutine's stack to standard error, laid out as the runtime prints
// an unrecovered panic: a slog handler would quote the stack into one
// line of escaped newlines and tabs. It writes with one Write call, so
// that the stacks of callbacks panicking at once do not interleave (an
// *os.File holds its lock for the whole of a Write).
func logPanic(v any) {
	slog.Error("timingwheel: callback panicked", "panic", v)
	var b bytes.Buffer
	fmt.Fprintf(&b, "timingwheel: callback panicked: %v\n\n", v)
	b.Write(panicStack(debug.Stack()))
	panicOutput.Write(b.Bytes())
}

// panicStack drops the frames of the handler itself from stack, the text
// of debug.Stack called while recovering: the frames from debug.Stack down
// to the deferred recover, above the frame of the call to panic. So the
// stack reads from the panic down, as the runtime's does.
func panicStack(stack []byte) []byte {
	header, frames, ok := bytes.Cut(stack, []byte("\n"))
	if !ok {
		return stack
	}
	i := bytes.Index(frames, []byte("\npanic("))
	if i < 0 {
		return stack
	}
	return append(append(header[:len(header):len(header)], '\n'), frames[i+1:]...)
}
