package stream_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// stateLog records an App's state changes.
type stateLog struct {
	mu     sync.Mutex
	states []stream.State
}

func (l *stateLog) option() stream.Option {
	return stream.OnStateChange(func(_, to stream.State) {
		l.mu.Lock()
		l.states = append(l.states, to)
		l.mu.Unlock()
	})
}

func (l *stateLog) get() []stream.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.states)
}

// States follow Kafka Streams: Rebalancing until the group is joined and
// every active task restored, then Running, then Closing and Stopped; a
// batch run (ExitWhenCaughtUp) ends only after its restore, and a shutdown
// during a restore never shows Running.
func TestStatesFollowKafkaStreams(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "states-" + in
	const keys = 50_000
	recs, _ := keyedRecords(in, keys*2, keys, 9)
	produceAll(t, c.Client(t), recs)
	opts := func(extra ...stream.Option) []stream.Option {
		// In-memory stores: every run restores the whole changelog.
		return append([]stream.Option{stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(t.TempDir()),
			stream.Parallelism(2), stream.Logger(testLogger(t))}, extra...)
	}
	first, err := runApp(t, countTopology(in, out, nil), opts(stream.ExitWhenCaughtUp())...)
	if err != nil {
		t.Fatal(err)
	}
	if first.Stats().Processed != keys*2 {
		t.Fatalf("first run processed %d, want %d", first.Stats().Processed, keys*2)
	}
	// The run's latencies and task counts are measured, for the metrics.
	if st := first.Stats(); st.ProcessLatency.Count == 0 || st.EndToEndLatency.Count == 0 || st.CommitLatency.Count == 0 ||
		st.TasksCreated < 2 || st.TasksClosed != st.TasksCreated || st.RestoreRemaining != 0 {
		t.Fatalf("after the first run: %d process, %d end-to-end and %d commit latencies measured, tasks created %d and closed %d, restore remaining %d",
			st.ProcessLatency.Count, st.EndToEndLatency.Count, st.CommitLatency.Count, st.TasksCreated, st.TasksClosed, st.RestoreRemaining)
	}

	t.Run("a batch run restores, runs, stops", func(t *testing.T) {
		var log stateLog
		// One unit: with two, the second one's join is a rebalance of its own.
		app, err := runApp(t, countTopology(in, out, nil), opts(stream.ExitWhenCaughtUp(), log.option(), stream.Parallelism(1))...)
		if err != nil {
			t.Fatal(err)
		}
		want := []stream.State{stream.Rebalancing, stream.Running, stream.Closing, stream.Stopped}
		if got := log.get(); !slices.Equal(want, got) {
			t.Fatalf("states %v, want %v", got, want)
		}
		// Every input offset was committed already, so only the restore
		// kept it from stopping at once: all of it must have happened.
		if got := app.Stats().Restored; got < keys {
			t.Fatalf("restored %d changelog records before stopping, want all %d: it stopped in the middle of the restore", got, keys)
		}
	})

	t.Run("a shutdown during the restore never shows running", func(t *testing.T) {
		var log stateLog
		app, err := stream.New(countTopology(in, out, nil), opts(log.option())...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- app.Run(ctx) }()
		waitFor(t, "a task restoring", func() bool {
			for _, ts := range app.Stats().Tasks {
				if ts.Restoring {
					return true
				}
			}
			return false
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		got := log.get()
		if slices.Contains(got, stream.Running) {
			t.Fatalf("states %v: running while a task was restoring", got)
		}
		if want := []stream.State{stream.Rebalancing, stream.Closing, stream.Stopped}; !slices.Equal(want, got) {
			t.Fatalf("states %v, want %v", got, want)
		}
	})
}

// A restore logs a summary per task: how many records and how long, as an
// operator of Kafka Streams expects from its restore listener.
func TestRestoreLogsASummary(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "restorelog-" + in
	recs, _ := keyedRecords(in, 2000, 500, 4)
	produceAll(t, c.Client(t), recs)
	opts := func(extra ...stream.Option) []stream.Option {
		return append([]stream.Option{stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(t.TempDir()),
			stream.Parallelism(1), stream.ExitWhenCaughtUp()}, extra...)
	}
	if _, err := runApp(t, countTopology(in, out, nil), opts(stream.Logger(testLogger(t)))...); err != nil {
		t.Fatal(err)
	}
	var buf syncBuffer
	if _, err := runApp(t, countTopology(in, out, nil), opts(stream.Logger(slog.New(slog.NewTextHandler(&buf, nil))))...); err != nil {
		t.Fatal(err)
	}
	var summaries int
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, `msg="restored task"`) {
			summaries++
			if !strings.Contains(line, "records=") || !strings.Contains(line, "duration=") || strings.Contains(line, "records=0 ") {
				t.Errorf("restore summary without its figures: %s", line)
			}
		}
	}
	if summaries != 2 {
		t.Fatalf("%d restore summaries logged, want one per task (2):\n%s", summaries, buf.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the units' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
