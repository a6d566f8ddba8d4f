package dsl_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/internal/testlog"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state/pebblestore"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// operatorApp is a word count and a table grouped by a new key, both with
// operators and the repartition steps the generator adds: sentences are
// split into words, grouped by word and counted; users (a table: upserts and
// tombstones) are counted per first letter of their name.
func operatorApp(sentences, users, wordCounts, letterCounts string) *stream.Topology {
	s, l := serde.String{}, serde.Int64{}
	disk := stream.StoreOptions{Changelog: true, Persistent: pebblestore.Opener(pebblestore.Options{})}
	t := stream.NewTopology()
	stream.AddSource(t, "sentences", sentences, s, s)
	dsl.FlatMapValues(t, "words", func(_, v string) []string { return strings.Fields(v) }, "sentences")
	dsl.SelectKey(t, "by-word-select", func(_, w string) string { return w }, "words")
	stream.AddRepartition(t, "by-word", s, s, stream.RepartitionOptions{}, "by-word-select")
	dsl.Count[string, string](t, "count", "word-counts", s, disk, "by-word")
	dsl.ToStream[string, int64](t, "count-updates", "count")
	stream.AddSink(t, "word-counts-sink", wordCounts, s, dsl.Nullable[int64](l), "count-updates")

	dsl.Table(t, "users", users, s, s, "users", disk)
	dsl.TableGroupBy(t, "by-letter-select", s, func(_, name string) (string, string) { return name[:1], name }, "users")
	stream.AddRepartition(t, "by-letter", s, dsl.Changes[string](s), stream.RepartitionOptions{}, "by-letter-select")
	dsl.TableCount[string, string](t, "letters", "letter-counts", s, stream.StoreOptions{Changelog: true}, "by-letter")
	dsl.ToStream[string, int64](t, "letter-updates", "letters")
	stream.AddSink(t, "letter-counts-sink", letterCounts, s, dsl.Nullable[int64](l), "letter-updates")
	return t
}

// Operators in an App, on 8 partitions and two instances (the second joins
// mid-run), under both guarantees: every word's and every letter's last
// count equals an independent count of the input, so no key was counted in
// a task that does not own it, and a table's updates and deletions moved
// rows between groups exactly once.
func TestOperatorsInAnApp(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			c := kafkatest.New(t)
			sentences, users := c.CreateTopic(t, 8, nil), c.CreateTopic(t, 8, nil)
			wordCounts, letterCounts := c.CreateTopic(t, 8, nil), c.CreateTopic(t, 8, nil)
			rng := rand.New(rand.NewPCG(7, 8))
			words, letters := map[string]int64{}, map[string]int64{}
			var recs []*kgo.Record
			for i := range 1500 {
				var ws []string
				for range 4 {
					w := fmt.Sprintf("w%02d", rng.IntN(40))
					ws = append(ws, w)
					words[w]++
				}
				recs = append(recs, &kgo.Record{Topic: sentences, Key: fmt.Appendf(nil, "s%d", i), Value: []byte(strings.Join(ws, " "))})
			}
			rows := map[string]string{}
			for range 1500 {
				u := fmt.Sprintf("u%03d", rng.IntN(200))
				if rng.IntN(5) == 0 {
					delete(rows, u)
					recs = append(recs, &kgo.Record{Topic: users, Key: []byte(u)}) // a tombstone
					continue
				}
				name := string(rune('a'+rng.IntN(6))) + fmt.Sprint(rng.IntN(1000))
				rows[u] = name
				recs = append(recs, &kgo.Record{Topic: users, Key: []byte(u), Value: []byte(name)})
			}
			for l := range 6 {
				letters[string(rune('a'+l))] = 0 // a group emptied shows 0
			}
			for _, name := range rows {
				letters[name[:1]]++
			}
			cl := c.Client(t)
			produce := func(rs []*kgo.Record) {
				if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			produce(recs[:len(recs)/2])
			appID := "ops-" + sentences
			start := func(name string) func() {
				app, err := stream.New(operatorApp(sentences, users, wordCounts, letterCounts), stream.Brokers(c.Seeds()...),
					stream.AppID(appID), stream.StateDir(t.TempDir()), stream.InstanceID(name), stream.Parallelism(1),
					stream.Guarantee(g), stream.CommitInterval(200*time.Millisecond), stream.CacheRecords(0),
					stream.Logger(testlog.New(t)))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- app.Run(ctx) }()
				return func() {
					cancel()
					if err := <-done; err != nil {
						t.Errorf("instance %s: %v", name, err)
					}
				}
			}
			stopA := start("a")
			defer stopA()
			time.Sleep(500 * time.Millisecond)
			stopB := start("b")
			defer stopB()
			produce(recs[len(recs)/2:])
			last := func(topic string) map[string]int64 {
				got := map[string]int64{}
				for _, r := range c.ReadToEnd(t, topic, kafkatest.ReadCommitted()) {
					n, _ := serde.Int64{}.Deserialize(r.Value)
					got[string(r.Key)] = n
				}
				return got
			}
			deadline := time.Now().Add(90 * time.Second)
			for {
				gotWords, gotLetters := last(wordCounts), last(letterCounts)
				wrongWords, wrongLetters := differing(words, gotWords), differing(letters, gotLetters)
				if wrongWords == 0 && wrongLetters == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 90 s, %d of %d words and %d of %d letters have a last count other than the input's",
						wrongWords, len(words), wrongLetters, len(letters))
				}
				time.Sleep(300 * time.Millisecond)
			}
		})
	}
}

// differing counts the keys of want whose value in got is not the same.
func differing(want, got map[string]int64) int {
	n := 0
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			n++
		}
	}
	return n
}
