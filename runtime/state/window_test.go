package state_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/statetest"
)

// cat joins the parts of a changelog key.
func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestWindowChangelogBytes checks that a window store logs Kafka Streams'
// records (WindowKeySchema.toStoreKeyBinary): serialized key ‖ start (8
// bytes, big-endian) ‖ sequence number (4 bytes, big-endian), 0 without
// duplicates and 1, 2, … with them; and that the record cache's writes,
// through the kind's ToChangelog, are the same records.
func TestWindowChangelogBytes(t *testing.T) {
	start := []byte{0, 0, 0x01, 0x8c, 0x2a, 0x3b, 0x4c, 0x5d} // 1700000000093
	const ms = 0x018c2a3b4c5d
	for _, dups := range []bool{false, true} {
		opt := state.WindowStoreOptions{WindowSize: time.Minute, Retention: time.Hour, RetainDuplicates: dups}
		log := &statetest.Recorder{Time: 42}
		b := state.NewMemory()
		s := state.NewWindowStore("w", b, serde.String{}, serde.String{}, opt, log)
		must(0, s.Put("key", "v1", ms))
		must(0, s.Put("key", "v2", ms))
		seq1, seq2 := []byte{0, 0, 0, 0}, []byte{0, 0, 0, 0}
		if dups {
			seq1, seq2 = []byte{0, 0, 0, 1}, []byte{0, 0, 0, 2}
		}
		want := []state.Change{
			{Key: cat([]byte("key"), start, seq1), Value: []byte("v1"), Timestamp: 42},
			{Key: cat([]byte("key"), start, seq2), Value: []byte("v2"), Timestamp: 42},
		}
		if diff := cmp.Diff(want, log.Changes); diff != "" {
			t.Errorf("dups=%v: changelog (-want +got):\n%s", dups, diff)
		}
		// What the backend holds, as the cache hands it over, logs the same.
		it := must(b.Range(nil, nil))
		var fromBackend []state.Change
		for _, c := range statetest.DrainRaw(t, it) {
			if lc, ok := state.WindowKind(opt).ToChangelog(c); ok {
				lc.Timestamp = 42
				fromBackend = append(fromBackend, lc)
			}
		}
		if !dups {
			want = want[1:] // one window, overwritten
		}
		if diff := cmp.Diff(want, fromBackend); diff != "" {
			t.Errorf("dups=%v: backend through ToChangelog (-want +got):\n%s", dups, diff)
		}
	}
}

// TestSessionChangelogBytes checks that a session store logs Kafka
// Streams' records (SessionKeySchema.toBinary): serialized key ‖ end ‖
// start, 8 bytes each, big-endian; a removal is a tombstone.
func TestSessionChangelogBytes(t *testing.T) {
	log := &statetest.Recorder{Time: 9}
	s := state.NewSessionStore("s", state.NewMemory(), serde.String{}, serde.String{}, time.Hour, log)
	must(0, s.Put("k", 0x0102, 0x0304, "v"))
	must(0, s.Remove("k", 0x0102, 0x0304))
	key := cat([]byte("k"), []byte{0, 0, 0, 0, 0, 0, 3, 4}, []byte{0, 0, 0, 0, 0, 0, 1, 2})
	want := []state.Change{{Key: key, Value: []byte("v"), Timestamp: 9}, {Key: key, Timestamp: 9}}
	if diff := cmp.Diff(want, log.Changes); diff != "" {
		t.Errorf("changelog (-want +got):\n%s", diff)
	}
}

// TestWindowExpired checks that a put past retention is refused with
// ErrExpired and neither stored nor logged, while time still advances for
// a put that brings it.
func TestWindowExpired(t *testing.T) {
	log := &statetest.Recorder{}
	opt := state.WindowStoreOptions{WindowSize: 10 * time.Second, Retention: time.Minute}
	s := state.NewWindowStore("w", state.NewMemory(), serde.String{}, serde.String{}, opt, log)
	must(0, s.Put("k", "late-but-first", 0)) // nothing observed yet: kept
	must(0, s.Put("k", "now", 120_000))
	err := s.Put("k", "late", 60_000) // 120000 - 60000: exactly the retention, expired
	if !errors.Is(err, state.ErrExpired) {
		t.Fatalf("Put past retention: %v, want ErrExpired", err)
	}
	must(0, s.Put("k", "live", 60_001))
	if len(log.Changes) != 3 {
		t.Errorf("logged %d changes, want 3 (the expired put is not logged)", len(log.Changes))
	}
	if _, ok := must2(s.Fetch("k", 0)); ok {
		t.Error("Fetch of a window past retention found it")
	}
	if v, ok := must2(s.Fetch("k", 60_001)); !ok || v != "live" {
		t.Errorf("Fetch(60001) = %q, %v; want live", v, ok)
	}
	if got := must(s.ObservedTime()); got != 120_000 {
		t.Errorf("ObservedTime = %d, want 120000", got)
	}
	if err := s.Put("k", "x", -1); err == nil || errors.Is(err, state.ErrExpired) {
		t.Errorf("Put with a negative start: %v, want an error other than ErrExpired", err)
	}
}

// TestSegmentedKindsChangelog checks the changelog topics of window and
// session stores: compact,delete, kept for the retention plus the margin,
// as Kafka Streams' windowed changelogs; and that of a timestamped store:
// compacted, with the producer's record times, which it restores.
func TestSegmentedKindsChangelog(t *testing.T) {
	for _, k := range []*state.StoreKind{
		state.WindowKind(state.WindowStoreOptions{WindowSize: time.Minute, Retention: time.Hour}),
		state.SessionKind(time.Hour),
	} {
		got := k.Changelog(time.Hour, state.DefaultChangelogRetentionMargin).Configs()
		want := map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "90000000"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s changelog configs (-want +got):\n%s", k.Name, diff)
		}
	}
	got := state.TimestampedKeyValue.Changelog(0, state.DefaultChangelogRetentionMargin).Configs()
	want := map[string]string{"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("timestamped changelog configs (-want +got):\n%s", diff)
	}
}

// TestRestoreRefusesForeignRecords checks that a window or session
// changelog record too short to be one stops restoration with an error
// that does not claim the store's files are damaged (ErrCorrupt would make
// the runtime wipe the store and restore the same record again).
func TestRestoreRefusesForeignRecords(t *testing.T) {
	for _, k := range []*state.StoreKind{
		state.WindowKind(state.WindowStoreOptions{WindowSize: time.Minute}),
		state.SessionKind(time.Hour),
	} {
		err := k.Restore(state.NewMemory(), []state.Change{{Key: []byte("short"), Value: []byte("v")}})
		if err == nil || errors.Is(err, state.ErrCorrupt) {
			t.Errorf("%s: restore of a 5-byte key: %v, want an error other than ErrCorrupt", k.Name, err)
		}
	}
}

// TestKeyFetchReuse checks that a one-key fetch, whose iterator the store
// reuses once closed, closed twice does not close the fetch that reuses it,
// and that each fetch sees only its own key and range.
func TestKeyFetchReuse(t *testing.T) {
	opt := state.WindowStoreOptions{WindowSize: time.Minute, RetainDuplicates: true}
	s := state.NewWindowStore("w", state.NewCache(state.NewMemory(), 100, nil), serde.String{}, serde.String{}, opt, nil)
	must(0, s.Put("a", "a1", 1000))
	must(0, s.Put("b", "b1", 1000))
	must(0, s.Put("a", "a2", 2000))
	fetch := func(key string, from, to int64, backward bool) []string {
		var it state.WindowIterator[string, string]
		var err error
		if backward {
			it, err = s.BackwardFetchRange(key, from, to)
		} else {
			it, err = s.FetchRange(key, from, to)
		}
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for it.Next() {
			got = append(got, it.Key()+"="+it.Value())
		}
		must(0, it.Err())
		must(0, it.Close())
		must(0, it.Close()) // a second Close is harmless
		return got
	}
	first, err := s.FetchRange("a", 0, 5000)
	must(0, err)
	must(0, first.Close())
	second, err := s.FetchRange("b", 0, 5000)
	must(0, err)
	must(0, first.Close()) // must not close second, which may reuse first's fetch
	if !second.Next() || second.Value() != "b1" || second.Next() {
		t.Error("a fetch was disturbed by the second Close of the fetch before it")
	}
	must(0, second.Close())
	for _, c := range []struct {
		key      string
		from, to int64
		backward bool
		want     []string
	}{
		{"a", 0, 5000, false, []string{"a=a1", "a=a2"}},
		{"a", 0, 5000, true, []string{"a=a2", "a=a1"}},
		{"b", 0, 5000, false, []string{"b=b1"}},
		{"a", 1500, 5000, false, []string{"a=a2"}},
		{"c", 0, 5000, false, nil},
		{"a", 0, 5000, false, []string{"a=a1", "a=a2"}},
	} {
		if got := fetch(c.key, c.from, c.to, c.backward); !cmp.Equal(got, c.want) {
			t.Errorf("fetch %q [%d, %d] backward=%v = %v, want %v", c.key, c.from, c.to, c.backward, got, c.want)
		}
	}
}
