package state_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/statetest"
)

// TestVersionedStoreByExample walks one key through Kafka Streams'
// documented cases: the latest version, out-of-order puts into the
// history with their validTo, a tombstone, a put older than the history
// retention (not put, not logged), reads past the history (only a latest
// version old enough answers), and that the sweep takes expired versions
// out of the backend, of keys not written again too.
func TestVersionedStoreByExample(t *testing.T) {
	b := state.NewMemory()
	log := &statetest.Recorder{}
	s := state.NewVersionedKeyValueStore("v", b, serde.String{}, statetest.NullableString{}, 100*time.Millisecond, log)
	str := func(v string) *string { return &v }
	put := func(v *string, ts, want int64) {
		t.Helper()
		got, err := s.Put("k", v, ts)
		if err != nil || got != want {
			t.Fatalf("Put(%v@%d) = %d, %v; want %d", v, ts, got, err, want)
		}
	}
	asOf := func(at int64, want string, from, to int64) {
		t.Helper()
		got, ok, err := s.GetAsOf("k", at)
		if err != nil {
			t.Fatal(err)
		}
		if want == "" {
			if ok {
				t.Errorf("GetAsOf(%d) = %s@[%d,%d), want none", at, *got.Value, got.Timestamp, got.ValidTo)
			}
			return
		}
		if !ok || *got.Value != want || got.Timestamp != from || got.ValidTo != to {
			t.Errorf("GetAsOf(%d) = %+v, %v; want %s@[%d,%d)", at, got, ok, want, from, to)
		}
	}
	put(str("a"), 1000, state.PutValidToUndefined)
	put(str("c"), 1020, state.PutValidToUndefined)
	put(str("b"), 1010, 1020)  // out of order: into the history
	put(str("a0"), 990, 1000)  // before the oldest version
	put(str("b2"), 1010, 1020) // replaces the version of 1010
	asOf(989, "", 0, 0)
	asOf(995, "a0", 990, 1000)
	asOf(1015, "b2", 1010, 1020)
	asOf(5000, "c", 1020, state.PutValidToUndefined)
	if old, ok, err := s.Delete("k", 1030); err != nil || !ok || *old.Value != "c" {
		t.Fatalf("Delete(1030) = %+v, %v, %v; want c", old, ok, err)
	}
	if _, ok, _ := s.Get("k"); ok {
		t.Error("Get after the tombstone found a value")
	}
	asOf(1025, "c", 1020, 1030)
	put(str("d"), 1025, 1030) // ends at the tombstone
	put(str("e"), 1200, state.PutValidToUndefined)
	// Observed 1200, history 100 ms: 1100 is the oldest time still seen.
	put(str("late"), 1099, state.PutNotPut)
	asOf(1100, "", 0, 0) // the tombstone of 1030 was valid then
	asOf(1099, "", 0, 0) // past the history: only the latest may answer, and it is later
	asOf(1300, "e", 1200, state.PutValidToUndefined)
	put(str("f"), 1150, 1200)
	asOf(1149, "", 0, 0)
	asOf(1099, "", 0, 0)
	put(str("g"), 1210, state.PutValidToUndefined)
	put(str("h"), 1400, state.PutValidToUndefined)
	asOf(1250, "", 0, 0) // observed 1400: past the history, and h is later
	asOf(1350, "g", 1210, 1400)
	put(str("i"), 1600, state.PutValidToUndefined)
	asOf(1550, "h", 1400, 1600)
	// Past the history, the latest version answers when it is old enough.
	if _, err := s.Put("z", str("z"), 1590); err != nil {
		t.Fatal(err)
	}
	put(str("j"), 1800, state.PutValidToUndefined)
	if got, ok, err := s.GetAsOf("z", 1650); err != nil || !ok || *got.Value != "z" || got.ValidTo != state.PutValidToUndefined {
		t.Errorf("GetAsOf(z, 1650) past the history = %+v, %v, %v; want z, the latest", got, ok, err)
	}
	for _, c := range log.Changes {
		if c.Timestamp == 1099 {
			t.Errorf("the refused put of 1099 was logged: %+v", c)
		}
	}
	if len(log.Changes) != 14 {
		t.Errorf("%d changelog records, want 14 (one per accepted put or delete)", len(log.Changes))
	}
	// Keys not written again lose their expired versions to the sweep
	// as other keys are written: z's old versions, y's tombstone.
	for i, k := range []string{"z", "z", "y", "y"} {
		v := str("z")
		if k == "y" && i == 3 {
			v = nil
		}
		if _, err := s.Put(k, v, int64(1810+i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		if _, err := s.Put("k", str("w"), int64(2000+i)); err != nil {
			t.Fatal(err)
		}
	}
	// Time jumps: k's history expires, and the sweep finds it while
	// other keys are written.
	for i := range 100 {
		if _, err := s.Put(fmt.Sprintf("n%02d", i), str("n"), 2500); err != nil {
			t.Fatal(err)
		}
	}
	it, err := b.Range(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Left: k's version of 2019 (the latest), z's of 1811, the n keys',
	// the observed time, the sweep's cursor.
	if raw := statetest.DrainRaw(t, it); len(raw) != 104 {
		t.Errorf("after the sweep the backend holds %d entries, want 104: %v", len(raw), raw)
	}
	if got, ok, err := s.Get("z"); err != nil || !ok || got.Timestamp != 1811 {
		t.Errorf("Get(z) after the sweep = %+v, %v, %v; want the version of 1811", got, ok, err)
	}
	nullKeys := state.NewVersionedKeyValueStore("n", state.NewMemory(), serde.Bytes{}, serde.Bytes{}, time.Hour, nil)
	if _, err := nullKeys.Put(nil, []byte("x"), 1); err == nil {
		t.Error("a null key was put")
	}
}

// BenchmarkVersioned measures a versioned store in memory holding 1,000
// keys of 100 versions each (one hour of history): an in-order Put, an
// out-of-order Put into the history, and a GetAsOf in the history.
func BenchmarkVersioned(b *testing.B) {
	open := func(b *testing.B) (state.VersionedKeyValueStore[string, int64], []string) {
		s := state.NewVersionedKeyValueStore("v", state.NewMemory(), serde.String{}, serde.Int64{}, time.Hour, nil)
		keys := make([]string, 1000)
		for i := range keys {
			keys[i] = fmt.Sprintf("key-%04d", i)
		}
		for v := range 100 {
			for i, k := range keys {
				if _, err := s.Put(k, int64(v), int64(v*1000+i)); err != nil {
					b.Fatal(err)
				}
			}
		}
		return s, keys
	}
	b.Run("put-latest", func(b *testing.B) {
		s, keys := open(b)
		b.ResetTimer()
		for i := range b.N {
			if _, err := s.Put(keys[i%len(keys)], 1, int64(100_000+i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("put-history", func(b *testing.B) {
		s, keys := open(b)
		b.ResetTimer()
		for i := range b.N {
			if _, err := s.Put(keys[i%len(keys)], 1, int64(50_000+i%40_000)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get-as-of", func(b *testing.B) {
		s, keys := open(b)
		b.ResetTimer()
		for i := range b.N {
			if _, _, err := s.GetAsOf(keys[i%len(keys)], int64(i%100_000)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
