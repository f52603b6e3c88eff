package main

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// The rewrite changes the package of a call and nothing else: it holds
// only while timingwheel's functions have the signatures of time's and
// context's, which these assignments check at compile time.
var (
	_ func(time.Duration, func()) *timingwheel.Timer = timingwheel.AfterFunc
	_ func(time.Duration) *timingwheel.ChanTimer     = timingwheel.NewTimer
	_ func(time.Duration) *timingwheel.Ticker        = timingwheel.NewTicker

	_ = []func(time.Duration) <-chan time.Time{time.After, timingwheel.After, time.Tick, timingwheel.Tick}
	_ = []func(time.Duration){time.Sleep, timingwheel.Sleep}
	_ = []func(context.Context, time.Duration) (context.Context, context.CancelFunc){context.WithTimeout, timingwheel.WithTimeout}
	_ = []func(context.Context, time.Time) (context.Context, context.CancelFunc){context.WithDeadline, timingwheel.WithDeadline}
	_ = []func(context.Context, time.Duration, error) (context.Context, context.CancelFunc){context.WithTimeoutCause, timingwheel.WithTimeoutCause}
	_ = []func(context.Context, time.Time, error) (context.Context, context.CancelFunc){context.WithDeadlineCause, timingwheel.WithDeadlineCause}
)

// TestTypesStandIn checks that each type the rewrite puts in place of
// *time.Timer or *time.Ticker has every method and field of it that code
// can use: the rewrite changes a type and leaves its uses as they are.
func TestTypesStandIn(t *testing.T) {
	for _, c := range []struct {
		old, new reflect.Type
		fieldC   bool // code may read C: a time.AfterFunc timer's C is nil, and such a timer is not rewritten
	}{
		{reflect.TypeFor[*time.Timer](), reflect.TypeFor[*timingwheel.Timer](), false},
		{reflect.TypeFor[*time.Timer](), reflect.TypeFor[*timingwheel.ChanTimer](), true},
		{reflect.TypeFor[*time.Ticker](), reflect.TypeFor[*timingwheel.Ticker](), true},
	} {
		t.Run(c.new.String(), func(t *testing.T) {
			for i := range c.old.NumMethod() {
				m := c.old.Method(i)
				n, ok := c.new.MethodByName(m.Name)
				if !ok {
					t.Errorf("no method %s", m.Name)
					continue
				}
				// Compare without the receiver.
				if got, want := funcIn(n.Type, 1), funcIn(m.Type, 1); got != want {
					t.Errorf("%s: %s, want %s", m.Name, got, want)
				}
			}
			if !c.fieldC {
				return
			}
			f, ok := c.new.Elem().FieldByName("C")
			old, _ := c.old.Elem().FieldByName("C")
			if !ok || f.Type != old.Type {
				t.Errorf("field C: %v, want %v", f.Type, old.Type)
			}
		})
	}
}

// funcIn formats a func type from its parameter from on.
func funcIn(ft reflect.Type, from int) string {
	var in, out []reflect.Type
	for i := from; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i))
	}
	for i := range ft.NumOut() {
		out = append(out, ft.Out(i))
	}
	return reflect.FuncOf(in, out, ft.IsVariadic()).String()
}
