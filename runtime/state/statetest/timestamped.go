package statetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// TimestampedStore checks a timestamped key-value store over a backend of
// kind: what it reads back, what it logs (Kafka Streams' changelog: the
// bare value, with the value's time as the record's), the same records
// whether written directly or through a record cache, and a restore from
// them that reads back the same.
func TimestampedStore(t *testing.T, kind Kind) {
	type vt = state.ValueAndTimestamp[*string]
	str := func(s string) *string { return &s }
	var logs [][]state.Change
	for _, path := range writePaths {
		log := &Recorder{Time: 7}
		w := newWritePath(path.name, path.cached, state.TimestampedKeyValue, kind.Open(t), log)
		s := state.NewTimestampedKeyValueStore("ts", w.backend(), serde.String{}, NullableString{}, w.logger())
		for _, p := range []struct {
			k string
			v vt
		}{
			{"a", vt{Value: str("one"), Timestamp: 100}},
			{"b", vt{Value: str(""), Timestamp: 200}}, // empty: a value
			{"c", vt{Value: str("three"), Timestamp: 300}},
			{"c", vt{Value: nil, Timestamp: 400}}, // null: a deletion
			{"a", vt{Value: str("four"), Timestamp: 50}},
		} {
			if err := s.Put(p.k, p.v); err != nil {
				t.Fatal(err)
			}
			if err := w.commit(); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Delete("b"); err != nil {
			t.Fatal(err)
		}
		if err := w.commit(); err != nil {
			t.Fatal(err)
		}
		want := []KV[string, vt]{{"a", vt{Value: str("four"), Timestamp: 50}}}
		it, err := s.All()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, Drain(t, it)); diff != "" {
			t.Errorf("%s: contents (-want +got):\n%s", path.name, diff)
		}
		got, ok, err := s.Get("a")
		if err != nil || !ok || *got.Value != "four" || got.Timestamp != 50 {
			t.Errorf("%s: Get(a) = %v, %v, %v; want four@50", path.name, got, ok, err)
		}
		logs = append(logs, log.Changes)

		r := rand.New(rand.NewPCG(1, 2))
		b := restoreLog(t, r, kind, state.TimestampedKeyValue, log.Changes)
		restored := state.NewTimestampedKeyValueStore("ts", b, serde.String{}, NullableString{}, nil)
		it, err = restored.All()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, Drain(t, it)); diff != "" {
			t.Errorf("%s: restored contents (-want +got):\n%s", path.name, diff)
		}
	}
	wantLog := []state.Change{
		{Key: []byte("a"), Value: []byte("one"), Timestamp: 100},
		{Key: []byte("b"), Value: []byte{}, Timestamp: 200},
		{Key: []byte("c"), Value: []byte("three"), Timestamp: 300},
		{Key: []byte("c"), Timestamp: 7},
		{Key: []byte("a"), Value: []byte("four"), Timestamp: 50},
		{Key: []byte("b"), Timestamp: 7},
	}
	for i, path := range writePaths {
		if diff := cmp.Diff(wantLog, logs[i]); diff != "" {
			t.Errorf("%s: changelog (-want +got):\n%s", path.name, diff)
		}
	}
}

// TimestampedWindowStore checks a timestamped window store over a backend
// of kind, written directly and through a record cache: its changelog has
// Kafka Streams' records (window key ‖ start ‖ sequence number; the bare
// value; the value's time as the record's), the same both ways, and a
// restore from them reads back what was written.
func TimestampedWindowStore(t *testing.T, kind Kind) {
	type vt = state.ValueAndTimestamp[*string]
	str := func(s string) *string { return &s }
	opt := state.WindowStoreOptions{WindowSize: time.Minute, Retention: time.Hour}
	sk := state.TimestampedWindowKind(opt)
	var logs [][]state.Change
	for _, path := range writePaths {
		log := &Recorder{Time: 7}
		w := newWritePath(path.name, path.cached, sk, kind.Open(t), log)
		s := state.NewTimestampedWindowStore("tw", w.backend(), serde.String{}, NullableString{}, opt, w.logger())
		for _, p := range []struct {
			k     string
			v     vt
			start int64
		}{
			{"a", vt{Value: str("one"), Timestamp: 100}, 0},
			{"a", vt{Value: str("two"), Timestamp: 61_000}, 60_000},
			{"b", vt{Value: str("three"), Timestamp: 300}, 0},
			{"b", vt{Value: nil, Timestamp: 400}, 0}, // null: a deletion
		} {
			if err := s.Put(p.k, p.v, p.start); err != nil {
				t.Fatal(err)
			}
			if err := w.commit(); err != nil {
				t.Fatal(err)
			}
		}
		logs = append(logs, log.Changes)
		b := restoreLog(t, rand.New(rand.NewPCG(1, 2)), kind, sk, log.Changes)
		for _, s := range []state.WindowStore[string, vt]{s, state.NewTimestampedWindowStore("tw", b, serde.String{}, NullableString{}, opt, nil)} {
			it, err := s.All()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for it.Next() {
				got = append(got, fmt.Sprintf("%s@%d=%s@%d", it.Key(), it.Start(), *it.Value().Value, it.Value().Timestamp))
			}
			if err := errors.Join(it.Err(), it.Close()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"a@0=one@100", "a@60000=two@61000"}, got); diff != "" {
				t.Errorf("%s: contents, then restored (-want +got):\n%s", path.name, diff)
			}
		}
	}
	key := func(k string, start int64) []byte {
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64([]byte(k), uint64(start)), 0)
	}
	wantLog := []state.Change{
		{Key: key("a", 0), Value: []byte("one"), Timestamp: 100},
		{Key: key("a", 60_000), Value: []byte("two"), Timestamp: 61_000},
		{Key: key("b", 0), Value: []byte("three"), Timestamp: 300},
		{Key: key("b", 0), Timestamp: 7},
	}
	for i, path := range writePaths {
		if diff := cmp.Diff(wantLog, logs[i]); diff != "" {
			t.Errorf("%s: changelog (-want +got):\n%s", path.name, diff)
		}
	}
}
