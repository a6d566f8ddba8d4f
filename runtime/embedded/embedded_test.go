package embedded_test

import (
	"context"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/embedded"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestStartCreatesTopicsAndServesKafka(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Topics: map[string]int32{"in": 3, "out": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Creating an existing topic again is not an error.
	if err := b.CreateTopics(map[string]int32{"in": 3, "more": 2}); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumeTopics("in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"in": 3, "out": 1, "more": 2} {
		if got := len(topics[name].Partitions); got != want {
			t.Errorf("topic %q has %d partitions, want %d", name, got, want)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Value: []byte("hi")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fetches := cl.PollFetches(ctx)
	if recs := fetches.Records(); len(recs) != 1 || string(recs[0].Value) != "hi" {
		t.Fatalf("consumed %v, errors %v; want the one record", recs, fetches.Errors())
	}
}

// TestStartCreatesTopicsWithConfigs: a topic with configs in
// Config.TopicConfigs is created with them (kgen.yaml's configs:), as kgen
// topics creates it on a cluster.
func TestStartCreatesTopicsWithConfigs(t *testing.T) {
	b, err := embedded.Start(embedded.Config{
		Topics:       map[string]int32{"table": 2, "stream": 2},
		TopicConfigs: map[string]map[string]string{"table": {"cleanup.policy": "compact"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfgs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, "table", "stream")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, rc := range cfgs {
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && c.Value != nil {
				got[rc.Name] = *c.Value
			}
		}
	}
	if got["table"] != "compact" || (got["stream"] != "" && got["stream"] != "delete") {
		t.Errorf("cleanup.policy by topic: %v; want table compact, stream the default", got)
	}
}
