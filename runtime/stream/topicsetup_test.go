package stream_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// A replication factor above the cluster's broker count stops Run before
// it creates any internal topic, with an error naming the setting (the
// test cluster, kfake or the real single broker, has one broker).
func TestReplicationFactorAboveBrokerCount(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "rf-" + in
	_, err := runApp(t, countTopology(in, out, onDisk),
		stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(t.TempDir()),
		stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp(), stream.ReplicationFactor(2))
	var rf *stream.ReplicationFactorError
	if !errors.As(err, &rf) || rf.Factor != 2 || rf.Brokers != 1 {
		t.Fatalf("Run = %v, want a ReplicationFactorError for 2 over 1 broker", err)
	}
	if !strings.Contains(err.Error(), "replication factor 2 (ReplicationFactor, Kafka Streams' replication.factor) is more than the cluster's 1 broker(s)") {
		t.Fatalf("message: %v", err)
	}
	details, lerr := c.Admin(t).ListTopics(context.Background())
	if lerr != nil {
		t.Fatal(lerr)
	}
	for name := range details {
		if strings.HasPrefix(name, appID+"-") {
			t.Fatalf("topic %q was created before the refusal", name)
		}
	}
}

// Factor 1 is the broker count: the changelog is created with it.
func TestReplicationFactorOneCreatesChangelog(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "rf1-" + in
	_, err := runApp(t, countTopology(in, out, onDisk),
		stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(t.TempDir()),
		stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp(), stream.ReplicationFactor(1))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	details, err := c.Admin(t).ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var changelogs []kadm.TopicDetail
	for name, d := range details {
		if strings.HasPrefix(name, appID+"-") && strings.HasSuffix(name, "-changelog") {
			changelogs = append(changelogs, d)
		}
	}
	if len(changelogs) == 0 {
		t.Fatal("no changelog created")
	}
	for _, d := range changelogs {
		if rf := len(d.Partitions[0].Replicas); rf != 1 {
			t.Fatalf("changelog %s has %d replicas, want 1", d.Topic, rf)
		}
	}
}

func TestReplicationFactorOptionRefusesZero(t *testing.T) {
	topo := stream.NewTopology()
	_, err := stream.New(topo, stream.Brokers("127.0.0.1:1"), stream.AppID("x"), stream.ReplicationFactor(0))
	if err == nil || !strings.Contains(err.Error(), "ReplicationFactor(0): want -1 (the broker's default) or 1 to 32767") {
		t.Fatalf("New = %v", err)
	}
}

// A missing dead-letter topic is named as such, with how to create it;
// a missing user topic says the app does not create it.
func TestMissingTopicMessages(t *testing.T) {
	c := kafkatest.New(t)
	in := c.CreateTopic(t, 1, nil)
	out := "missing-out-" + in
	dlq := "missing-dlq-" + in
	_, err := runApp(t, countTopology(in, out, onDisk),
		stream.Brokers(c.Seeds()...), stream.AppID("missing-"+in), stream.StateDir(t.TempDir()),
		stream.Logger(testLogger(t)), stream.ExitWhenCaughtUp(), stream.OnDeserializeError(stream.DeadLetter(dlq)))
	if err == nil {
		t.Fatal("Run with missing topics succeeded")
	}
	for _, want := range []string{
		`topic "` + dlq + `" does not exist: it is the dead-letter topic of the deserialize-error policy, which the app does not create; create it first (kgen topics creates it when given the same -on-deserialize-error setting)`,
		`topic "` + out + `" does not exist: the app creates only its changelog and repartition topics; create the others first (kgen topics creates those of kgen.yaml)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
