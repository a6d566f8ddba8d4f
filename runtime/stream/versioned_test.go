package stream

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/twmb/franz-go/pkg/kgo"
)

// versionedPutter puts each record into the versioned store "ver" as the
// key's version at the record's time; a record whose key starts with
// "probe" instead asks the store, for every key and time in probeTimes,
// the version valid then, and writes the answers into answers.
type versionedPutter struct {
	store   state.VersionedKeyValueStore[string, string]
	keys    []string
	times   []int64
	mu      *sync.Mutex
	answers map[string]string // key@asOf → value@[from,to)
}

func (p *versionedPutter) Init(ctx *Context[string, string]) error {
	var err error
	p.store, err = GetVersionedKeyValueStore[string, string](ctx, "ver")
	return err
}

func (p *versionedPutter) Process(ctx *Context[string, string], r Record[string, string]) error {
	if strings.HasPrefix(r.Key, "probe") {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, k := range p.keys {
			for _, at := range p.times {
				v, ok, err := p.store.GetAsOf(k, at)
				if err != nil {
					return err
				}
				if ok {
					p.answers[fmt.Sprintf("%s@%d", k, at)] = fmt.Sprintf("%s@[%d,%d)", v.Value, v.Timestamp, v.ValidTo)
				}
			}
		}
		return nil
	}
	_, err := p.store.Put(r.Key, r.Value, r.Timestamp.UnixMilli())
	return err
}

// TestVersionedStoreRestoresFromItsChangelog runs a topology putting
// records, out of time order, into a versioned store; checks its changelog
// on the broker (compacted with min.compaction.lag.ms of the history
// retention plus a day, CreateTime; one record per put, with the put's
// time as the record's); then runs a second instance with no state, which
// restores the store from the changelog and must give the answers the
// first gave, which are those of the records' histories.
func TestVersionedStoreRestoresFromItsChangelog(t *testing.T) {
	c := kafkatest.New(t)
	in := c.CreateTopic(t, 2, nil)
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5"}
	base := time.Now().Add(-10 * time.Minute).UnixMilli()
	r := rand.New(rand.NewPCG(1, 2))
	var recs []*kgo.Record
	for i := range 150 {
		// Times go back as much as 10 s: out-of-order puts land in the
		// history (kept for an hour).
		ts := base + int64(i)*250 - int64(r.IntN(10_000))
		recs = append(recs, &kgo.Record{Topic: in, Key: []byte(keys[r.IntN(len(keys))]), Value: fmt.Appendf(nil, "v%d", i), Timestamp: time.UnixMilli(ts)})
	}
	produceRecords(t, c, recs)
	var times []int64
	for at := base - 11_000; at < base+150*250+1000; at += 97 {
		times = append(times, at)
	}
	// What a version history answers: the version of the largest time
	// not after asOf (the last put of a time wins), valid up to the next.
	want := map[string]string{}
	for _, k := range keys {
		vers := map[int64]string{}
		for _, rec := range recs {
			if string(rec.Key) == k {
				vers[rec.Timestamp.UnixMilli()] = string(rec.Value)
			}
		}
		ts := slices.Sorted(func(yield func(int64) bool) {
			for t := range vers {
				if !yield(t) {
					return
				}
			}
		})
		for _, at := range times {
			i, found := slices.BinarySearch(ts, at)
			if !found {
				i--
			}
			if i < 0 {
				continue
			}
			to := int64(state.PutValidToUndefined)
			if i+1 < len(ts) {
				to = ts[i+1]
			}
			want[fmt.Sprintf("%s@%d", k, at)] = fmt.Sprintf("%s@[%d,%d)", vers[ts[i]], ts[i], to)
		}
	}
	probes := func() []*kgo.Record {
		var out []*kgo.Record
		for i := range 10 { // some probe lands on each partition
			out = append(out, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "probe%d", i), Value: []byte("p"), Timestamp: time.UnixMilli(base)})
		}
		return out
	}
	topology := func(persistent state.Opener, mu *sync.Mutex, answers map[string]string) *Topology {
		topo := NewTopology()
		AddSource(topo, "in", in, serde.String{}, serde.String{})
		AddProcessor(topo, "put", func() Processor[string, string, string, string] {
			return &versionedPutter{keys: keys, times: times, mu: mu, answers: answers}
		}, "in")
		AddVersionedKeyValueStore(topo, "ver", serde.String{}, serde.String{}, time.Hour,
			StoreOptions{Changelog: true, Persistent: persistent}, "put")
		return topo
	}
	for _, tc := range []struct {
		name       string
		persistent state.Opener
		opts       []Option
	}{
		{"cached", nil, []Option{CacheRecords(10_000)}},
		{"uncached pebble", testPebble, []Option{CacheRecords(0)}},
		{"exactly-once pebble", testPebble, []Option{Guarantee(ExactlyOnce)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			appID := "verstore-" + strings.ReplaceAll(tc.name, " ", "-") + "-" + in
			topic := changelogTopic(appID, "ver")
			t.Cleanup(func() { c.Admin(t).DeleteTopics(context.Background(), topic) })
			var mu sync.Mutex
			first, dir := map[string]string{}, t.TempDir()
			runKinds(t, c, topology(tc.persistent, &mu, first), appID, dir, tc.opts...)

			cfg := topicConfigs(t, c, topic)[topic]
			if cfg["cleanup.policy"] != "compact" || cfg["min.compaction.lag.ms"] != "90000000" || cfg["message.timestamp.type"] != "CreateTime" {
				t.Errorf("changelog configs: cleanup.policy=%s min.compaction.lag.ms=%s message.timestamp.type=%s, want compact, 90000000, CreateTime",
					cfg["cleanup.policy"], cfg["min.compaction.lag.ms"], cfg["message.timestamp.type"])
			}
			// One changelog record per put, in each key's order, with the
			// put's time.
			wantLog, gotLog := map[string][]string{}, map[string][]string{}
			for _, rec := range recs {
				wantLog[string(rec.Key)] = append(wantLog[string(rec.Key)], fmt.Sprintf("%s@%d", rec.Value, rec.Timestamp.UnixMilli()))
			}
			// Read committed: under exactly-once a transaction the app
			// aborted (and redid) leaves its records in the log.
			for _, rec := range c.ReadToEnd(t, topic, kafkatest.ReadCommitted()) {
				gotLog[string(rec.Key)] = append(gotLog[string(rec.Key)], fmt.Sprintf("%s@%d", rec.Value, rec.Timestamp.UnixMilli()))
			}
			if diff := cmp.Diff(wantLog, gotLog); diff != "" {
				t.Errorf("changelog records by key (-want +got):\n%s", diff)
			}

			// Both instances answer the probes: the first from the store
			// it wrote, the second from the one it restored.
			produceRecords(t, c, probes())
			runKinds(t, c, topology(tc.persistent, &mu, first), appID, dir, tc.opts...)
			restored := map[string]string{}
			produceRecords(t, c, probes())
			app := runKinds(t, c, topology(tc.persistent, &mu, restored), appID, t.TempDir(), tc.opts...)
			if app.Stats().Restored == 0 {
				t.Error("the second instance restored nothing")
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(want, first); diff != "" {
				t.Errorf("answers of the store (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, restored); diff != "" {
				t.Errorf("answers of the restored store (-want +got):\n%s", diff)
			}
		})
	}
}
