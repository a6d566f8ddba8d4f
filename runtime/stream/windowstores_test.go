package stream

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
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

// windowCounter counts records per key and minute in a window store; a
// record whose key starts with "probe" instead copies the whole store of
// its task into dumped, so a test can see what a restored store holds.
type windowCounter struct {
	store  state.WindowStore[string, int64]
	mu     *sync.Mutex
	dumped map[string]int64 // key@start → count
}

func (p *windowCounter) Init(ctx *Context[string, string]) error {
	var err error
	p.store, err = GetWindowStore[string, int64](ctx, "win")
	return err
}

func (p *windowCounter) Process(ctx *Context[string, string], r Record[string, string]) error {
	if strings.HasPrefix(r.Key, "probe") {
		it, err := p.store.All()
		if err != nil {
			return err
		}
		defer it.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for it.Next() {
			p.dumped[fmt.Sprintf("%s@%d", it.Key(), it.Start())] = it.Value()
		}
		return it.Err()
	}
	start := r.Timestamp.UnixMilli() / 60_000 * 60_000
	n, _, err := p.store.Fetch(r.Key, start)
	if err != nil {
		return err
	}
	return p.store.Put(r.Key, n+1, start)
}

// windowTopology is in → a windowCounter over the window store "win".
func windowTopology(in string, persistent state.Opener, mu *sync.Mutex, dumped map[string]int64) *Topology {
	t := NewTopology()
	AddSource(t, "in", in, serde.String{}, serde.String{})
	AddProcessor(t, "count", func() Processor[string, string, string, string] {
		return &windowCounter{mu: mu, dumped: dumped}
	}, "in")
	AddWindowStore(t, "win", serde.String{}, serde.Int64{}, state.WindowStoreOptions{WindowSize: time.Minute, Retention: time.Hour},
		StoreOptions{Changelog: true, Persistent: persistent}, "count")
	return t
}

// TestWindowStoreRestoresFromItsChangelog runs a topology counting records
// per key and minute in a window store, then checks its changelog on the
// broker (a compact,delete topic kept for the retention plus a day, whose
// records are Kafka Streams': key ‖ start ‖ sequence number 0, with the
// last count of each window), then runs a second instance with no state,
// which restores the store from that changelog, and checks what it holds.
func TestWindowStoreRestoresFromItsChangelog(t *testing.T) {
	c := kafkatest.New(t)
	in := c.CreateTopic(t, 2, nil)
	recs := stampedRecords(in, 200)
	produceRecords(t, c, recs)
	want := map[string]int64{}
	for _, r := range recs {
		want[fmt.Sprintf("%s@%d", r.Key, r.Timestamp.UnixMilli()/60_000*60_000)]++
	}
	probes := func() []*kgo.Record {
		var out []*kgo.Record
		for i := range 10 { // some probe lands on each partition
			out = append(out, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "probe%d", i), Value: []byte("p"), Timestamp: recs[len(recs)-1].Timestamp})
		}
		return out
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
			appID := "winstore-" + strings.ReplaceAll(tc.name, " ", "-") + "-" + in
			topic := changelogTopic(appID, "win")
			t.Cleanup(func() { c.Admin(t).DeleteTopics(context.Background(), topic) })
			var mu sync.Mutex
			first := map[string]int64{}
			runKinds(t, c, windowTopology(in, tc.persistent, &mu, first), appID, t.TempDir(), tc.opts...)

			cfg := topicConfigs(t, c, topic)[topic]
			if cfg["cleanup.policy"] != "compact,delete" || cfg["retention.ms"] != "90000000" {
				t.Errorf("changelog configs: cleanup.policy=%s retention.ms=%s, want compact,delete and 90000000", cfg["cleanup.policy"], cfg["retention.ms"])
			}
			logged := map[string]int64{}
			for _, r := range c.ReadToEnd(t, topic) {
				k := r.Key
				if len(k) < 12 || !bytes.Equal(k[len(k)-4:], []byte{0, 0, 0, 0}) || len(r.Value) != 8 {
					t.Fatalf("changelog record %x=%x is not key ‖ start ‖ seqnum 0 = 8-byte count", k, r.Value)
				}
				start := int64(binary.BigEndian.Uint64(k[len(k)-12:]))
				logged[fmt.Sprintf("%s@%d", k[:len(k)-12], start)] = int64(binary.BigEndian.Uint64(r.Value))
			}
			if diff := cmp.Diff(want, logged); diff != "" {
				t.Errorf("last changelog record of each window (-want +got):\n%s", diff)
			}

			// A second instance with no state restores the store, then
			// dumps it at each probe.
			produceRecords(t, c, probes())
			restored := map[string]int64{}
			app := runKinds(t, c, windowTopology(in, tc.persistent, &mu, restored), appID, t.TempDir(), tc.opts...)
			if app.Stats().Restored == 0 {
				t.Error("the second instance restored nothing")
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(want, restored); diff != "" {
				t.Errorf("restored store (-want +got):\n%s", diff)
			}
		})
	}
}
