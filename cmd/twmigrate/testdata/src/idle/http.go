package idle

import (
	"context"
	"time"
)

// A handler serves one request.
type handler func(ctx context.Context, req string) string

// withDeadline gives every request of h a deadline, and its cause.
func withDeadline(h handler, d time.Duration) handler {
	return func(ctx context.Context, req string) string {
		ctx, cancel := context.WithTimeoutCause(ctx, d, errSlow) // want `context.WithTimeoutCause becomes timingwheel.WithTimeoutCause`
		defer cancel()
		return h(ctx, req)
	}
}

// until serves until a fixed time.
func until(parent context.Context, at time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, at) // want `context.WithDeadline becomes timingwheel.WithDeadline`
}

var errSlow = context.DeadlineExceeded
