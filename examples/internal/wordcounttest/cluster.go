// Package wordcounttest is what the tests of the two word-count examples
// (examples/wordcount, with processors, and examples/wordcount-ops, with
// operators) share: the word count run as deployed, on a cluster.
package wordcounttest

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// OnACluster runs a word count as deployed: 8 partitions, two instances,
// one of them stopped and started again mid-run, on kfake and on the real
// broker (KGEN_TEST_BROKERS). Every word's last count must equal an
// independent count of the input, under both guarantees. app prefixes the
// application ids; topology builds the application's generated topology,
// which reads sentences (records made by encode from a line of text) and
// writes each word's count (an int64) to counts.
func OnACluster(t *testing.T, app string, topology func() (*stream.Topology, error), sentences, counts string, encode func(text string) ([]byte, error)) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			c := kafkatest.New(t)
			// The generated topology's own topic names: recreated for the
			// test, since a real broker keeps them between runs.
			in, out := sentences, counts
			adm := c.Admin(t)
			recreate := func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, _ = adm.DeleteTopics(ctx, in, out)
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
					resps, err := adm.CreateTopics(ctx, 8, -1, nil, in, out)
					if err == nil && resps.Error() == nil {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("create topics: %v %v", err, resps.Error())
					}
				}
			}
			recreate()
			t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), in, out) })
			appID := fmt.Sprintf("%s-%s-%d", app, g, time.Now().UnixNano())
			rng := rand.New(rand.NewPCG(1, 2))
			truth := map[string]int64{}
			var recs []*kgo.Record
			for i := range 2000 {
				var words []string
				for range 6 {
					w := fmt.Sprintf("w%d", rng.IntN(50))
					words = append(words, w)
					truth[w]++
				}
				v, err := encode(strings.Join(words, " "))
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "s%d", i), Value: v})
			}
			produce := func(rs []*kgo.Record) {
				t.Helper()
				if err := c.Client(t).ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			produce(recs[:1000])
			start := func(name, dir string) func() {
				topo, err := topology()
				if err != nil {
					t.Fatal(err)
				}
				app, err := stream.New(topo, stream.Brokers(c.Seeds()...), stream.AppID(appID), stream.StateDir(dir),
					stream.InstanceID(name), stream.Parallelism(1), stream.Guarantee(g), stream.CommitInterval(200*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- app.Run(ctx) }()
				var once sync.Once
				return func() {
					once.Do(func() {
						cancel()
						if err := <-done; err != nil {
							t.Errorf("instance %s: %v", name, err)
						}
					})
				}
			}
			stopA := start("a", t.TempDir())
			defer stopA()
			dirB := t.TempDir()
			stopB := start("b", dirB)
			waitCommitted(t, adm, appID, in, 500)
			stopB()
			produce(recs[1000:])
			stopB = start("b", dirB)
			defer stopB()
			deadline := time.Now().Add(2 * time.Minute)
			for {
				last := map[string]int64{}
				for _, r := range c.ReadToEnd(t, out, kafkatest.ReadCommitted()) {
					n, err := serde.Int64{}.Deserialize(r.Value)
					if err != nil {
						t.Fatal(err)
					}
					last[string(r.Key)] = max(last[string(r.Key)], n)
				}
				if fmt.Sprint(last) == fmt.Sprint(truth) {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("last counts after 2 minutes:\n%v\nwant:\n%v", last, truth)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// waitCommitted waits until the group has committed n offsets of topic.
func waitCommitted(t *testing.T, adm *kadm.Client, group, topic string, n int64) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		offs, err := adm.FetchOffsets(context.Background(), group)
		if err != nil {
			continue
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic {
				sum += o.At
			}
		})
		if sum >= n {
			return
		}
	}
	t.Fatalf("group %s did not commit %d offsets of %s", group, n, topic)
}
