package pageviews

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/examples/pageviews/model"
	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// TestPageViewsOnACluster runs the page views as deployed: 8 partitions,
// two instances, one of them stopped and started again mid-run, on kfake
// and on the real broker (KGEN_TEST_BROKERS), under both guarantees. The
// views come in four phases, one 5-minute window each; every phase is
// processed through the repartition topic before the next is produced, so
// that no view is late by another task's order (stream time is per task:
// a view of one phase read after a later phase's in the same task would
// be dropped as late, as in Kafka Streams). Each closed window's count must
// equal an independent count of the views, once under exactly-once.
func TestPageViewsOnACluster(t *testing.T) {
	for _, g := range []stream.GuaranteeKind{stream.AtLeastOnce, stream.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			c := kafkatest.New(t)
			adm := c.Admin(t)
			recreate(t, adm, TopicPageViews, TopicViewsPerUser)
			appID := fmt.Sprintf("pageviews-%s-%d", g, time.Now().UnixNano())
			repartition := appID + "-by-user-repartition"
			// Windows start on multiples of 5 minutes since the epoch; an
			// hour ago keeps the views inside the topics' retention.
			t0 := time.Now().Truncate(5 * time.Minute).Add(-time.Hour)
			rng := rand.New(rand.NewPCG(3, 4))
			truth := map[windowKey]int64{}
			var phases [][]*kgo.Record
			for k := range 4 {
				var recs []*kgo.Record
				for u := range 20 {
					user := fmt.Sprintf("u%d", u)
					// Each user's views of the phase, in time order, the
					// last 4 minutes in: it closes the window before.
					n := 1 + rng.IntN(5)
					for j := range n {
						at := t0.Add(time.Duration(5*k)*time.Minute + time.Duration(j)*4*time.Minute/time.Duration(n))
						if j == n-1 {
							at = t0.Add(time.Duration(5*k)*time.Minute + 4*time.Minute)
						}
						page := fmt.Sprintf("/p%d", rng.IntN(30))
						v, err := json.Marshal(model.PageView{User: user, Page: page})
						if err != nil {
							t.Fatal(err)
						}
						recs = append(recs, &kgo.Record{Topic: TopicPageViews, Key: []byte(page), Value: v, Timestamp: at})
						truth[windowKey{user, at.Truncate(5 * time.Minute).UnixMilli()}]++
					}
				}
				phases = append(phases, recs)
			}
			produced := 0
			phase := func(k int) {
				t.Helper()
				if err := c.Client(t).ProduceSync(context.Background(), phases[k]...).FirstErr(); err != nil {
					t.Fatal(err)
				}
				produced += len(phases[k])
				waitCommitted(t, adm, appID, TopicPageViews, int64(produced))
				// Then every view the phase wrote to the repartition topic
				// must be processed: committed past its last record.
				last := map[int32]int64{}
				for _, r := range c.ReadToEnd(t, repartition, kafkatest.ReadCommitted()) {
					last[r.Partition] = max(last[r.Partition], r.Offset+1)
				}
				waitProcessed(t, adm, appID, repartition, last)
			}
			start := func(name, dir string) func() {
				topo, err := NewTopology(Factories{}, DefaultSerdes())
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
			phase(0)
			phase(1)
			stopB()
			phase(2)
			stopB = start("b", dirB)
			defer stopB()
			phase(3)

			// Windows 0 to 2 closed (phase 3's views are 4 minutes past the
			// end of window 2, more than its 30 s grace); window 3 is open.
			want := map[windowKey]int64{}
			for k, n := range truth {
				if k.start < t0.Add(15*time.Minute).UnixMilli() {
					want[k] = n
				}
			}
			ks := serde.TimeWindowed[string](serde.String{}, 5*time.Minute)
			deadline := time.Now().Add(2 * time.Minute)
			for {
				got, times := map[windowKey]int64{}, map[windowKey]int{}
				for _, r := range c.ReadToEnd(t, TopicViewsPerUser, kafkatest.ReadCommitted()) {
					k, err := ks.Deserialize(r.Key)
					if err != nil {
						t.Fatal(err)
					}
					if k.End-k.Start != (5 * time.Minute).Milliseconds() {
						t.Fatalf("window %v is not 5 minutes", k)
					}
					// As Kafka Streams, by the user alone: a user's windows
					// share the user's partition.
					if p := stream.KafkaPartition([]byte(k.Key), 8); r.Partition != p {
						t.Fatalf("window %v in partition %d, want the user's %d", k, r.Partition, p)
					}
					n, err := serde.Int64{}.Deserialize(r.Value)
					if err != nil {
						t.Fatal(err)
					}
					wk := windowKey{k.Key, k.Start}
					got[wk] = n
					times[wk]++
				}
				if fmt.Sprint(got) == fmt.Sprint(want) {
					if g == stream.ExactlyOnce {
						for k, n := range times {
							if n != 1 {
								t.Errorf("window %v emitted %d times under exactly-once", k, n)
							}
						}
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("final counts after 2 minutes:\n%v\nwant:\n%v", got, want)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// windowKey is a user's window by its start (epoch milliseconds).
type windowKey struct {
	user  string
	start int64
}

// recreate deletes and creates topics with 8 partitions: a real broker
// keeps them between runs.
func recreate(t *testing.T, adm *kadm.Client, topics ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = adm.DeleteTopics(ctx, topics...)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resps, err := adm.CreateTopics(ctx, 8, -1, nil, topics...)
		if err == nil && resps.Error() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create topics: %v %v", err, resps.Error())
		}
	}
	// Created is not yet known to every broker answering metadata: wait
	// until the topics are listed with their partitions, as the
	// application checks them once at startup.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		td, err := adm.ListTopics(ctx, topics...)
		ready := err == nil
		for _, name := range topics {
			d, ok := td[name]
			ready = ready && ok && d.Err == nil && len(d.Partitions) == 8
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("topics %v not listed with 8 partitions: %v", topics, err)
		}
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), topics...) })
}

// waitCommitted waits until the group has committed n offsets of topic.
func waitCommitted(t *testing.T, adm *kadm.Client, group, topic string, n int64) {
	t.Helper()
	waitOffsets(t, adm, group, topic, func(at map[int32]int64) bool {
		var sum int64
		for _, o := range at {
			sum += o
		}
		return sum >= n
	})
}

// waitProcessed waits until the group's committed offsets of topic reach
// want, partition by partition.
func waitProcessed(t *testing.T, adm *kadm.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	waitOffsets(t, adm, group, topic, func(at map[int32]int64) bool {
		for p, o := range want {
			if at[p] < o {
				return false
			}
		}
		return true
	})
}

func waitOffsets(t *testing.T, adm *kadm.Client, group, topic string, done func(map[int32]int64) bool) {
	t.Helper()
	var last map[int32]int64
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		offs, err := adm.FetchOffsets(context.Background(), group)
		if err != nil {
			continue
		}
		last = map[int32]int64{}
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic {
				last[o.Partition] = o.At
			}
		})
		if done(last) {
			return
		}
	}
	t.Fatalf("group %s: committed offsets of %s stayed at %v", group, topic, last)
}
