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

// sessionStamper puts each record as a one-record session (start = end =
// its time) in a session store, and its value with its time in a
// timestamped key-value store and in its minute's window of a timestamped
// window store.
type sessionStamper struct {
	sessions state.SessionStore[string, string]
	latest   state.KeyValueStore[string, state.ValueAndTimestamp[string]]
	windows  state.WindowStore[string, state.ValueAndTimestamp[string]]
}

func (p *sessionStamper) Init(ctx *Context[string, string]) error {
	var err error
	if p.sessions, err = GetSessionStore[string, string](ctx, "sess"); err != nil {
		return err
	}
	if p.latest, err = GetKeyValueStore[string, state.ValueAndTimestamp[string]](ctx, "latest"); err != nil {
		return err
	}
	p.windows, err = GetWindowStore[string, state.ValueAndTimestamp[string]](ctx, "tw")
	return err
}

func (p *sessionStamper) Process(ctx *Context[string, string], r Record[string, string]) error {
	ts := r.Timestamp.UnixMilli()
	if err := p.sessions.Put(r.Key, ts, ts, r.Value); err != nil {
		return err
	}
	if err := p.windows.Put(r.Key, state.ValueAndTimestamp[string]{Value: r.Value, Timestamp: ts}, ts/60_000*60_000); err != nil {
		return err
	}
	return p.latest.Put(r.Key, state.ValueAndTimestamp[string]{Value: r.Value, Timestamp: ts})
}

// TestSessionAndTimestampedStoresInATopology checks that a topology
// declares session, timestamped key-value and timestamped window stores,
// that a processor gets them typed, and that their changelogs hold Kafka
// Streams' records: key ‖ end ‖ start for a session; the bare value, with
// its time as the record's, for a timestamped value (in a window: under
// key ‖ start ‖ seqnum).
func TestSessionAndTimestampedStoresInATopology(t *testing.T) {
	topo := NewTopology()
	AddSource(topo, "in", "in", serde.String{}, serde.String{})
	AddProcessor(topo, "stamp", func() Processor[string, string, string, string] { return &sessionStamper{} }, "in")
	AddSessionStore(topo, "sess", serde.String{}, serde.String{}, time.Hour, StoreOptions{Changelog: true}, "stamp")
	AddTimestampedKeyValueStore(topo, "latest", serde.String{}, serde.String{}, StoreOptions{Changelog: true}, "stamp")
	AddTimestampedWindowStore(topo, "tw", serde.String{}, serde.String{}, state.WindowStoreOptions{WindowSize: time.Minute},
		StoreOptions{Changelog: true}, "stamp")
	d, err := NewLocalDriver(topo, LocalConfig{Logger: kindsLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	at := time.UnixMilli(0x0102030405)
	if err := d.Pipe("in", []byte("k"), []byte("v"), nil, at); err != nil {
		t.Fatal(err)
	}
	sess := d.Changelog("sess")
	ms := []byte{0, 0, 0, 0x01, 0x02, 0x03, 0x04, 0x05}
	if len(sess) != 1 || !bytes.Equal(sess[0].Key, cat([]byte("k"), ms, ms)) || string(sess[0].Value) != "v" {
		t.Errorf("session changelog: %v, want one record k ‖ end ‖ start = v", sess)
	}
	latest := d.Changelog("latest")
	if len(latest) != 1 || string(latest[0].Key) != "k" || string(latest[0].Value) != "v" || !latest[0].Timestamp.Equal(at) {
		t.Errorf("timestamped changelog: %v, want one record k=v at %v", latest, at)
	}
	tw := d.Changelog("tw")
	start := binary.BigEndian.AppendUint64(nil, uint64(at.UnixMilli()/60_000*60_000))
	if len(tw) != 1 || !bytes.Equal(tw[0].Key, cat([]byte("k"), start, []byte{0, 0, 0, 0})) || string(tw[0].Value) != "v" || !tw[0].Timestamp.Equal(at) {
		t.Errorf("timestamped window changelog: %v, want one record k ‖ start ‖ 0 = v at %v", tw, at)
	}
	s := d.Store("latest").(state.KeyValueStore[string, state.ValueAndTimestamp[string]])
	if v, ok, err := s.Get("k"); err != nil || !ok || v.Value != "v" || v.Timestamp != at.UnixMilli() {
		t.Errorf("Get(k) = %v, %v, %v; want v at %d", v, ok, err, at.UnixMilli())
	}
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
