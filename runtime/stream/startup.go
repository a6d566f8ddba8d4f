package stream

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// transientError is a startup failure that may pass by itself: the broker
// down or restarting, a leader moving. Anything else (a topic that does not
// exist, partition counts that cannot be co-partitioned) fails at once.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// retryStartup runs fn until it succeeds, fails for good, or the startup
// timeout passes, with a doubling backoff (100 ms to 5 s) and a log line per
// failed attempt: an app started while its brokers restart waits for them,
// as it rides out the same outage once running.
func retryStartup[T any](ctx context.Context, cfg config, what string, fn func(context.Context) (T, error)) (T, error) {
	start := time.Now()
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		v, err := fn(ctx)
		var te *transientError
		if err == nil || !errors.As(err, &te) || ctx.Err() != nil {
			return v, err
		}
		waited := time.Since(start)
		if waited+backoff > cfg.startupTimeout {
			return v, fmt.Errorf("%w (gave up after %d attempts in %s; StartupTimeout is %s)", err, attempt, waited.Round(time.Millisecond), cfg.startupTimeout)
		}
		cfg.logger.Warn("cannot start yet; retrying", "app", cfg.appID, "step", what, "attempt", attempt, "retry_in", backoff, "error", err)
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
