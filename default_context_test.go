package timingwheel

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// The context package's tests of WithTimeout and WithDeadline (x_test.go:
// TestDeadline, TestTimeout, TestCanceledTimeout, the deadline rows of
// TestCause, TestAfterFuncCalledAfterTimeout), ported in our words to the
// package-level functions, in synctest bubbles with a default each.

// hiddenContext hides the context it wraps from the context package, as
// x_test.go's otherContext does: a context of a type it does not know.
type hiddenContext struct{ context.Context }

// mustExpire fails the test unless c is done with DeadlineExceeded once
// d has passed (fake time: exact), and not before.
func mustExpire(t *testing.T, name string, c context.Context, d time.Duration) {
	t.Helper()
	if d > 0 {
		select {
		case <-c.Done():
			t.Fatalf("%s: done at once, before its deadline", name)
		default:
		}
	}
	select {
	case <-c.Done():
	case <-time.After(d + pkgTick):
		t.Fatalf("%s: not done a tick after its deadline", name)
	}
	if err := c.Err(); err != context.DeadlineExceeded {
		t.Errorf("%s: Err() = %v, want DeadlineExceeded", name, err)
	}
}

func TestDefaultContextDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		const short, long = 50 * time.Millisecond, time.Hour
		bg := context.Background()

		c, cancel := WithDeadline(bg, time.Now().Add(short))
		defer cancel()
		if got, prefix := c.(interface{ String() string }).String(), "context.Background.WithDeadline("; !strings.HasPrefix(got, prefix) {
			t.Errorf("String() = %q, want the prefix %q", got, prefix)
		}
		mustExpire(t, "WithDeadline", c, short)

		c, cancel = WithDeadline(bg, time.Now().Add(short))
		defer cancel()
		mustExpire(t, "WithDeadline+hidden", hiddenContext{c}, short)

		c, cancel = WithDeadline(bg, time.Now().Add(short))
		defer cancel()
		c, cancel = WithDeadline(hiddenContext{c}, time.Now().Add(long))
		defer cancel()
		mustExpire(t, "WithDeadline+hidden+WithDeadline", c, short)

		c, cancel = WithDeadline(bg, time.Now().Add(-short))
		defer cancel()
		mustExpire(t, "WithDeadline in the past", c, 0)

		c, cancel = WithDeadline(bg, time.Now())
		defer cancel()
		mustExpire(t, "WithDeadline now", c, 0)
	})
}

func TestDefaultContextTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		const short, long = 50 * time.Millisecond, time.Hour
		bg := context.Background()

		c, cancel := WithTimeout(bg, short)
		defer cancel()
		if got, prefix := c.(interface{ String() string }).String(), "context.Background.WithDeadline("; !strings.HasPrefix(got, prefix) {
			t.Errorf("String() = %q, want the prefix %q", got, prefix)
		}
		if dl, ok := c.Deadline(); !ok || !dl.Equal(time.Now().Add(short)) {
			t.Errorf("Deadline() = %v, %v; want now+%v exactly", dl, ok, short)
		}
		mustExpire(t, "WithTimeout", c, short)

		c, cancel = WithTimeout(bg, short)
		defer cancel()
		mustExpire(t, "WithTimeout+hidden", hiddenContext{c}, short)

		c, cancel = WithTimeout(bg, short)
		defer cancel()
		c, cancel = WithTimeout(hiddenContext{c}, long)
		defer cancel()
		mustExpire(t, "WithTimeout+hidden+WithTimeout", c, short)
	})
}

// TestDefaultContextCanceledTimeout is TestCanceledTimeout: the cancel of a
// context under a hidden one ends it at once, with Canceled.
func TestDefaultContextCanceledTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		c, cancel0 := WithTimeout(context.Background(), time.Second)
		defer cancel0()
		c, cancel := WithTimeout(hiddenContext{c}, time.Hour)
		cancel()
		select {
		case <-c.Done():
		default:
			t.Error("not done once canceled")
		}
		if err := c.Err(); err != context.Canceled {
			t.Errorf("Err() = %v, want Canceled", err)
		}
	})
}

// TestDefaultContextCause is the deadline rows of TestCause, each also
// with a deadline that passes on the wheel (the context package's rows use
// a timeout of 0, which both packages settle at birth), and with the
// contexts' Done asked before the end or only after it.
func TestDefaultContextCause(t *testing.T) {
	errTooSlow := errors.New("too slow")
	errFinishedEarly := errors.New("finished early")
	const forever = 10000 * time.Hour
	type row struct {
		name       string
		ctx        func() context.Context
		err, cause error
	}
	rows := []row{
		{"WithTimeout", func() context.Context {
			ctx, cancel := WithTimeout(context.Background(), 0)
			cancel()
			return ctx
		}, context.DeadlineExceeded, context.DeadlineExceeded},
		{"WithTimeout canceled", func() context.Context {
			ctx, cancel := WithTimeout(context.Background(), forever)
			cancel()
			return ctx
		}, context.Canceled, context.Canceled},
		{"WithTimeoutCause", func() context.Context {
			ctx, cancel := WithTimeoutCause(context.Background(), 0, errTooSlow)
			cancel()
			return ctx
		}, context.DeadlineExceeded, errTooSlow},
		{"WithTimeoutCause canceled", func() context.Context {
			ctx, cancel := WithTimeoutCause(context.Background(), forever, errTooSlow)
			cancel()
			return ctx
		}, context.Canceled, context.Canceled},
		{"WithTimeoutCause stacked", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			ctx, _ = WithTimeoutCause(ctx, 0, errTooSlow)
			cancel(errFinishedEarly)
			return ctx
		}, context.DeadlineExceeded, errTooSlow},
		{"WithTimeoutCause stacked canceled", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			ctx, _ = WithTimeoutCause(ctx, forever, errTooSlow)
			cancel(errFinishedEarly)
			return ctx
		}, context.Canceled, errFinishedEarly},
		{"WithDeadlineCause", func() context.Context {
			ctx, cancel := WithDeadlineCause(context.Background(), time.Now(), errTooSlow)
			cancel()
			return ctx
		}, context.DeadlineExceeded, errTooSlow},
		{"WithDeadlineCause nil", func() context.Context {
			ctx, cancel := WithDeadlineCause(context.Background(), time.Now().Add(10*time.Millisecond), nil)
			defer cancel()
			time.Sleep(20 * time.Millisecond) // fake time: the bubble's clock
			return ctx
		}, context.DeadlineExceeded, context.DeadlineExceeded},
		{"WithoutCancel timeout", func() context.Context {
			ctx, cancel := WithTimeoutCause(context.Background(), 0, errTooSlow)
			ctx = context.WithoutCancel(ctx)
			cancel()
			return ctx
		}, nil, nil},
	}
	// The same ends on the wheel: a deadline 10ms out that passes.
	for _, waitFirst := range []bool{false, true} {
		suffix := map[bool]string{false: ", Done asked after", true: ", Done asked before"}[waitFirst]
		expireLater := func(ctx context.Context) {
			if waitFirst {
				_ = ctx.Done()
			}
			time.Sleep(20 * time.Millisecond)
		}
		rows = append(rows,
			row{"WithTimeoutCause expires" + suffix, func() context.Context {
				ctx, cancel := WithTimeoutCause(context.Background(), 10*time.Millisecond, errTooSlow)
				defer cancel()
				expireLater(ctx)
				return ctx
			}, context.DeadlineExceeded, errTooSlow},
			row{"WithDeadlineCause expires" + suffix, func() context.Context {
				ctx, cancel := WithDeadlineCause(context.Background(), time.Now().Add(10*time.Millisecond), errTooSlow)
				defer cancel()
				expireLater(ctx)
				return ctx
			}, context.DeadlineExceeded, errTooSlow},
			row{"WithTimeoutCause expires, child made before" + suffix, func() context.Context {
				ctx, cancel := WithTimeoutCause(context.Background(), 10*time.Millisecond, errTooSlow)
				defer cancel()
				child, cancelChild := context.WithCancel(ctx)
				defer cancelChild()
				expireLater(child)
				return child
			}, context.DeadlineExceeded, errTooSlow},
			row{"WithTimeoutCause expires, child made after" + suffix, func() context.Context {
				ctx, cancel := WithTimeoutCause(context.Background(), 10*time.Millisecond, errTooSlow)
				defer cancel()
				expireLater(ctx)
				child, cancelChild := context.WithCancel(ctx)
				defer cancelChild()
				return child
			}, context.DeadlineExceeded, errTooSlow},
			row{"WithTimeoutCause expires, wheel child" + suffix, func() context.Context {
				ctx, cancel := WithTimeoutCause(context.Background(), 10*time.Millisecond, errTooSlow)
				defer cancel()
				child, cancelChild := WithTimeoutCause(ctx, forever, errFinishedEarly)
				defer cancelChild()
				expireLater(child)
				return child
			}, context.DeadlineExceeded, errTooSlow},
			row{"WithTimeoutCause under a canceled parent" + suffix, func() context.Context {
				parent, cancelParent := context.WithCancelCause(context.Background())
				ctx, cancel := WithTimeoutCause(parent, 10*time.Millisecond, errTooSlow)
				defer cancel()
				if waitFirst {
					_ = ctx.Done()
				}
				cancelParent(errFinishedEarly)
				time.Sleep(20 * time.Millisecond)
				return ctx
			}, context.Canceled, errFinishedEarly},
		)
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bubbleDefault(t)
				ctx := r.ctx()
				if err := ctx.Err(); err != r.err {
					t.Errorf("Err() = %v, want %v", err, r.err)
				}
				if cause := context.Cause(ctx); cause != r.cause {
					t.Errorf("Cause() = %v, want %v", cause, r.cause)
				}
			})
		})
	}
}

// TestDefaultContextAfterFunc is TestAfterFuncCalledAfterTimeout:
// context.AfterFunc on a context of WithTimeout runs once it expires.
func TestDefaultContextAfterFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bubbleDefault(t)
		ctx, cancel := WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		ran := make(chan time.Time)
		start := time.Now()
		context.AfterFunc(ctx, func() { ran <- time.Now() })
		select {
		case at := <-ran:
			within(t, "AfterFunc on a 50ms WithTimeout", at.Sub(start), 50*time.Millisecond)
		case <-time.After(time.Hour):
			t.Fatal("context.AfterFunc did not run after the timeout")
		}
	})
}
