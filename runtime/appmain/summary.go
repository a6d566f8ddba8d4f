package appmain

import (
	"context"
	"log/slog"
	"time"

	"github.com/kgen-dev/kgen/runtime/stream"
)

// statsSource is what a summary reads; *stream.App implements it.
type statsSource interface {
	State() stream.State
	Stats() stream.Stats
}

// logSummaries logs a summary of app every interval until ctx ends or the
// returned function is called, as Kafka Streams' periodic log summary does:
// an operator reading the log sees progress without a metrics system.
func logSummaries(ctx context.Context, app statsSource, logger *slog.Logger, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		last, lastAt := app.Stats().Processed, time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				s := app.Stats()
				logSummary(logger, app.State(), s, s.Processed-last, now.Sub(lastAt))
				last, lastAt = s.Processed, now
			}
		}
	}()
	return func() { cancel(); <-done }
}

// logSummary logs one summary line: records processed in the last period
// and in all, their rate, the lag of the active tasks, the tasks.
func logSummary(logger *slog.Logger, state stream.State, s stream.Stats, processed uint64, period time.Duration) {
	var lag int64
	restoring := 0
	for _, ts := range s.Tasks {
		lag += ts.Lag
		if ts.Restoring {
			restoring++
		}
	}
	var dropped uint64
	for _, n := range s.Dropped {
		dropped += n
	}
	rate := 0.0
	if period > 0 {
		rate = float64(processed) / period.Seconds()
	}
	logger.Info("summary",
		"state", state.String(),
		"processed", processed, "processed_total", s.Processed, "rate_per_s", roundTo(rate, 1),
		"lag", lag, "tasks", len(s.Tasks), "restoring", restoring, "restored_total", s.Restored, "standbys", len(s.Standbys),
		"skipped_total", s.Skipped, "dropped_total", dropped, "dead_lettered_total", s.DeadLettered, "commits_total", s.Commits,
		"period", period.Round(time.Millisecond).String())
}

func roundTo(f float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(f*p+0.5)) / p
}
