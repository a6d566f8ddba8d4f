package stream_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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

// A reset run from one instance of two (issue 22): the other instance's
// stores still hold the counts of the first run, with positions in
// changelogs the reset deleted. Both start again and count the input once
// more from the start: every word's count must be its count in the input,
// not twice it, which needs the other instance to notice its stores are
// stale and wipe them (its actives and its standbys, in Pebble). The last
// step stops the reset instance, so the other's standbys become actives,
// and counts more input. With resetFirst, the reset instance runs alone
// first and writes the new changelogs past the other's positions, so only
// the changelogs' topic ids tell the other's stores are stale.
func TestResetFromOneInstance(t *testing.T) {
	for _, tc := range []struct {
		g          stream.GuaranteeKind
		resetFirst bool
	}{{stream.AtLeastOnce, false}, {stream.ExactlyOnce, false}, {stream.AtLeastOnce, true}, {stream.ExactlyOnce, true}} {
		g, resetFirst := tc.g, tc.resetFirst
		name := g.String()
		if resetFirst {
			name += "/reset-instance-first"
		}
		t.Run(name, func(t *testing.T) {
			c := kafkatest.New(t)
			in, out := c.CreateTopic(t, 4, nil), c.CreateTopic(t, 4, nil)
			appID := "reset-one-" + in
			recs, truth := sentences(in, 2000) // 10,000 words
			dirs := map[string]string{"a": t.TempDir(), "b": t.TempDir()}
			newApp := func(name string) *stream.App {
				app, err := stream.New(wordCountTopology(in, out, onDisk), stream.Brokers(c.Seeds()...), stream.AppID(appID),
					stream.StateDir(dirs[name]), stream.InstanceID(name), stream.Parallelism(1), stream.Guarantee(g),
					stream.StandbyReplicas(1), stream.CommitInterval(100*time.Millisecond), stream.Logger(testLogger(t)))
				if err != nil {
					t.Fatal(err)
				}
				return app
			}
			startApp := func(name string) (*stream.App, func()) {
				app := newApp(name)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- app.Run(ctx) }()
				var once sync.Once
				stop := func() {
					once.Do(func() {
						cancel()
						if err := <-done; err != nil {
							t.Errorf("instance %s: %v", name, err)
						}
					})
				}
				t.Cleanup(stop)
				return app, stop
			}
			start := func(name string) func() {
				_, stop := startApp(name)
				return stop
			}
			// counts reads the output from offsets on: the largest count of
			// each word, and where the output ends.
			counts := func(from map[int32]int64) (map[string]int64, map[int32]int64) {
				got, ends := map[string]int64{}, map[int32]int64{}
				for _, r := range readCommitted(t, c, out, g) {
					ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
					if r.Offset < from[r.Partition] {
						continue
					}
					n, err := serde.Int64{}.Deserialize(r.Value)
					if err != nil {
						t.Fatalf("output %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
					}
					got[string(r.Key)] = max(got[string(r.Key)], n)
				}
				return got, ends
			}
			// reached says whether every word counted from offsets on has
			// reached want, and none went past it (stale counts do).
			reached := func(what string, from map[int32]int64, want map[string]int64) map[int32]int64 {
				t.Helper()
				var got map[string]int64
				var ends map[int32]int64
				waitFor(t, what, func() bool {
					got, ends = counts(from)
					for w, n := range got {
						if n > want[w] {
							t.Fatalf("%s: word %s counted to %d, more than the input's %d (a store kept data from before the reset): %s",
								what, w, n, want[w], mapDiff(want, got))
						}
					}
					return mapsEqual(want, got)
				})
				return ends
			}

			// The input goes in once both instances hold tasks: on a fast
			// machine one instance counted all of it before the other
			// joined, and b then held no state for the test to be about.
			a, stopA := startApp("a")
			b, stopB := startApp("b")
			waitFor(t, "both instances to hold tasks", func() bool {
				return a.State() == stream.Running && b.State() == stream.Running &&
					len(a.Stats().Tasks) > 0 && len(b.Stats().Tasks) > 0
			})
			produceAll(t, c.Client(t), recs)
			firstEnds := reached("the first run to count every word", nil, truth)
			stopA()
			stopB()

			if err := newApp("a").Reset(context.Background(), stream.ResetOptions{}); err != nil {
				t.Fatal(err)
			}
			adm := c.Admin(t)
			internal := []string{appID + "-counts-changelog", appID + "-words-repartition"}
			waitFor(t, "the internal topics to go", func() bool {
				topics, err := adm.ListTopics(context.Background(), internal...)
				return err == nil && allMissing(topics)
			})
			if tasks, _ := filepath.Glob(filepath.Join(dirs["b"], appID, "1_*")); len(tasks) == 0 {
				t.Fatal("instance b holds no counting task's state before the second run: the test would prove nothing")
			}

			more, moreTruth := keyedWords(in, 500)
			want := map[string]int64{}
			for w, n := range truth {
				want[w] = n + moreTruth[w]
			}
			if !resetFirst {
				stopA, stopB = start("a"), start("b")
				resetEnds := reached("the run after the reset to count every word once", firstEnds, truth)
				// b's standbys become actives, fed from the new changelogs.
				stopA()
				produceAll(t, c.Client(t), more)
				reached("instance b alone to count the new words", resetEnds, want)
				stopB()
				return
			}
			// a runs alone and writes the new changelogs past the
			// positions b's stores hold; then b runs alone.
			stopA = start("a")
			produceAll(t, c.Client(t), more)
			resetEnds := reached("instance a alone to count every word once", firstEnds, want)
			stopA()
			last, lastTruth := keyedWords(in, 100)
			produceAll(t, c.Client(t), last)
			for w, n := range lastTruth {
				want[w] += n
			}
			stopB = start("b")
			reached("instance b alone to count on", resetEnds, want)
			stopB()
		})
	}
}

// keyedWords makes n sentences of one word each, over the vocabulary of
// sentences, and the count of each word.
func keyedWords(topic string, n int) ([]*kgo.Record, map[string]int64) {
	truth := map[string]int64{}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		w := fmt.Sprintf("w%02d", (i*7)%60)
		truth[w]++
		recs[i] = &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "m%d", i), Value: []byte(w)}
	}
	return recs, truth
}
