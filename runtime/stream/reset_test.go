package stream_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kadm"
)

// Reset, as Kafka Streams' reset tool: refused while an instance runs; then
// internal topics deleted, inputs back to the earliest, local state wiped,
// so the next run computes everything again from nothing.
func TestReset(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
	appID := "reset-" + in
	recs, truth := sentences(in, 500)
	produceAll(t, c.Client(t), recs)
	dir := t.TempDir()
	newApp := func(extra ...stream.Option) *stream.App {
		app, err := stream.New(wordCountTopology(in, out, onDisk), append([]stream.Option{stream.Brokers(c.Seeds()...),
			stream.AppID(appID), stream.StateDir(dir), stream.Parallelism(1), stream.Logger(testLogger(t))}, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		return app
	}
	run := func() {
		t.Helper()
		if err := newApp(stream.ExitWhenCaughtUp()).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	run()
	adm := c.Admin(t)
	internal := []string{appID + "-counts-changelog", appID + "-words-repartition"}
	if topics, _ := adm.ListTopics(context.Background(), internal...); len(topics) != 2 || topics.Error() != nil {
		t.Fatalf("internal topics %v after a run, want %v", topics.Names(), internal)
	}

	// A running instance (its own state directory) keeps the group busy.
	running, err := stream.New(wordCountTopology(in, out, onDisk), stream.Brokers(c.Seeds()...), stream.AppID(appID),
		stream.StateDir(t.TempDir()), stream.Parallelism(1), stream.Logger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- running.Run(ctx) }()
	waitFor(t, "the instance to run", func() bool { return running.State() == stream.Running })
	if err := newApp().Reset(context.Background(), stream.ResetOptions{}); err == nil || !strings.Contains(err.Error(), "stop every instance first") {
		t.Fatalf("Reset while an instance runs: %v, want a refusal", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if err := newApp().Reset(context.Background(), stream.ResetOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the internal topics to go", func() bool {
		topics, err := adm.ListTopics(context.Background(), internal...)
		return err == nil && allMissing(topics)
	})
	offs, err := adm.FetchOffsets(context.Background(), appID)
	if err != nil {
		t.Fatal(err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == in && o.At != 0 {
			t.Errorf("input %s/%d committed at %d after the reset, want 0", o.Topic, o.Partition, o.At)
		}
	})
	tasks, _ := filepath.Glob(filepath.Join(dir, appID, "*_*"))
	if len(tasks) != 0 {
		t.Fatalf("task directories %v left after the reset", tasks)
	}
	if _, err := os.Stat(filepath.Join(dir, appID, ".instance-id")); err != nil {
		t.Fatalf("the instance id went with the reset: %v", err)
	}

	run()
	perKey := map[string]int64{}
	last := map[string]int64{}
	for _, r := range c.ReadToEnd(t, out) {
		n, _ := serde.Int64{}.Deserialize(r.Value)
		perKey[string(r.Key)]++
		last[string(r.Key)] = max(last[string(r.Key)], n)
	}
	for w, n := range truth {
		if perKey[w] != 2*n || last[w] != n {
			t.Fatalf("word %s: %d outputs, largest count %d; want two full rounds (%d) counting to %d: the reset did not start from nothing",
				w, perKey[w], last[w], 2*n, n)
		}
	}
}

// allMissing says whether every topic listed is reported as not existing.
func allMissing(topics kadm.TopicDetails) bool {
	for _, d := range topics {
		if d.Err == nil {
			return false
		}
	}
	return true
}
