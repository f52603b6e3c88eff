// Package refuse holds the timers twmigrate leaves alone, each with the
// reason it reports.
package refuse

import (
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"timerutil"
)

// A field given both kinds of timer: no one timingwheel type holds both.
type session struct {
	expiry *time.Timer
}

func (s *session) arm(d time.Duration, f func()) {
	s.expiry = time.AfterFunc(d, f)
}

func (s *session) armChan(d time.Duration) {
	s.expiry = time.NewTimer(d) // want `session.expiry: not migrated, stays \*time.Timer: it is given both time.AfterFunc \(refuse.go:21\) and time.NewTimer \(refuse.go:25\) results`
}

// A timer made by another package's function.
type conn struct {
	idle *time.Timer
}

func (c *conn) start(d time.Duration, f func()) {
	c.idle = timerutil.NewIdle(d, f) // want `conn.idle: not migrated, stays \*time.Timer: returned by timerutil.NewIdle of package timerutil`
}

func (c *conn) restart(d time.Duration, f func()) {
	c.idle = time.AfterFunc(d, f)
}

// A timer passed to another package's function.
func drained(d time.Duration) {
	t := time.NewTimer(d)
	timerutil.StopAndDrain(t) // want `t: not migrated, stays \*time.Timer: passed to timerutil.StopAndDrain of package timerutil`
}

// A timer in an interface: fmt, sync.Map, a variable of type any.
func logged(d time.Duration) {
	t := time.NewTimer(d)
	fmt.Printf("armed %v\n", t) // want `t: not migrated, stays \*time.Timer: passed to fmt.Printf of package fmt`
}

var registry sync.Map

func registered(id string, d time.Duration, f func()) {
	registry.Store(id, time.AfterFunc(d, f)) // want `the timer of time.AfterFunc: not migrated, stays \*time.Timer: passed to method Store of package sync`
}

func lookup(id string) {
	if v, ok := registry.Load(id); ok {
		v.(*time.Timer).Stop() // want `\*time.Timer not migrated: taken out of an interface by a type assertion`
	}
}

func addressInInterface(d time.Duration) any {
	t := time.NewTimer(d)
	var x any = &t // want `t: not migrated, stays \*time.Timer: assigned to a variable of type any`
	return x
}

// A timer held by value, or reached through one.
type byValue struct {
	t time.Timer // want `byValue.t: not migrated, stays \*time.Timer: byValue.t holds a time.Timer held by value, not through a pointer`
}

func deref(d time.Duration) time.Timer { // want `the result of deref: not migrated, stays \*time.Timer: the result of deref holds a time.Timer held by value`
	t := time.NewTimer(d)
	return *t // want `t: not migrated, stays \*time.Timer: a time.Timer held by value, not through a pointer`
}

// A time.AfterFunc timer whose C is read: it is nil there, and
// timingwheel.Timer has none.
func readsC(d time.Duration) {
	t := time.AfterFunc(d, func() {})
	select {
	case <-t.C: // want `t: not migrated, stays \*time.Timer: it reads C of a time.AfterFunc timer`
	default:
	}
}

// A function used as a value: its callers are out of sight.
func makeTimer(d time.Duration) *time.Timer { return time.NewTimer(d) }

var maker = makeTimer // want `the result of makeTimer: not migrated, stays \*time.Timer: makeTimer is used as a function value`

// A function literal with a timer parameter, used as a value.
var onExpire = func(t *time.Timer) { t.Stop() } // want `parameter t of a function literal: not migrated, stays \*time.Timer: a function literal used as a value`

func expireNow() {
	onExpire(time.NewTimer(0)) // want `the timer of time.NewTimer: not migrated, stays \*time.Timer: passed to the function value onExpire`
}

// A constructor used as a value: its type would change.
var newTimer = time.NewTimer // want `newTimer: not migrated, stays \*time.Timer: newTimer holds a timer in a function type`

// An embedded timer: its field's name would change with its type.
type embedded struct {
	*time.Timer // want `embedded.Timer: not migrated, stays \*time.Timer: embedded field Timer`
}

func embed(d time.Duration) embedded { return embedded{time.NewTimer(d)} }

// A timer in a type argument.
type latest struct {
	t atomic.Pointer[time.Timer] // want `latest.t: not migrated, stays \*time.Timer: latest.t holds a type argument of Pointer`
}

func (l *latest) set(d time.Duration) { l.t.Store(time.NewTimer(d)) } // want `the timer of time.NewTimer: not migrated, stays \*time.Timer: passed to method Store of package sync/atomic`

// A timer as a map key.
var seen = map[*time.Timer]bool{} // want `seen: not migrated, stays \*time.Timer: seen holds a timer as a map key`

func mark(d time.Duration) { seen[time.NewTimer(d)] = true }

// A timer made without a constructor.
func zero() *time.Timer { return new(time.Timer) } // want `the result of zero: not migrated, stays \*time.Timer: new\(time.Timer\) makes a timer that no constructor started`

// An exported field and function of a package others import.
type Limits struct {
	Timeout *time.Timer // want `Limits.Timeout: not migrated, stays \*time.Timer: exported field Limits.Timeout`
}

func NewLimits(d time.Duration) *Limits { return &Limits{Timeout: time.NewTimer(d)} }

// A method that may implement an interface method of the package.
type stopper interface {
	stopTimer(t *time.Timer) bool // want `parameter t of interface method stopTimer: not migrated, stays \*time.Timer: in the signature of interface method stopTimer`
}

type quiet struct{}

func (quiet) stopTimer(t *time.Timer) bool { return t.Stop() } // want `parameter t of quiet.stopTimer: not migrated, stays \*time.Timer: method quiet.stopTimer may implement interface method stopTimer`

func stopQuietly(d time.Duration) bool { return quiet{}.stopTimer(time.NewTimer(d)) }

// A timer compared with an interface value.
func same(d time.Duration, x any) bool {
	t := time.NewTimer(d)
	return t == x // want `t: not migrated, stays \*time.Timer: compared with a value of type any`
}

// A timer from a range-over-func iterator.
type batch struct {
	timers []*time.Timer
}

func (b *batch) add(d time.Duration) {
	b.timers = append(b.timers, time.AfterFunc(d, func() {}))
}

func (b *batch) addAll(seq iter.Seq[*time.Timer]) { // want `parameter seq of batch.addAll: not migrated, stays \*time.Timer: parameter seq of batch.addAll holds a type argument of Seq`
	for t := range seq { // want `batch.timers, t: not migrated, stays \*time.Timer: produced by a range-over-func iterator`
		b.timers = append(b.timers, t)
	}
}
