// Package retry retries an operation with backoff, bounded by the
// caller's context.
package retry

import (
	"context"
	"errors"
	"time"
)

var errGaveUp = errors.New("retry: gave up")

var pauseFor = 10 * time.Millisecond

func do(ctx context.Context, attempts int, backoff time.Duration, op func(context.Context) error) error {
	for i := 0; i < attempts; i++ {
		if err := op(ctx); err == nil {
			return nil
		}
		select {
		case <-time.After(backoff): // want `time.After becomes timingwheel.After`
			backoff *= 2
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errGaveUp
}

// attempt runs op with a deadline of its own and the cause of a miss.
func attempt(ctx context.Context, at time.Time, op func(context.Context) error) error {
	ctx, cancel := context.WithDeadlineCause(ctx, at, errGaveUp) // want `context.WithDeadlineCause becomes timingwheel.WithDeadlineCause`
	defer cancel()
	return op(ctx)
}
