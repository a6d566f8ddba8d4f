package streamtest_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamtest"
)

// With several partitions a store has a copy per task; KeyValueStoreFor
// reads and seeds them as one store, each key in its partition's copy.
func TestKeyValueStoreForSeveralPartitions(t *testing.T) {
	topo := stream.NewTopology()
	stream.AddSource(topo, "words", "words", serde.String{}, serde.String{})
	stream.AddProcessor(topo, "count", func() stream.Processor[string, string, string, int64] { return &counter{} }, "words")
	stream.AddKeyValueStore(topo, "counts", serde.String{}, serde.Int64{}, stream.StoreOptions{Changelog: true}, "count")
	stream.AddSink(topo, "out", "counts", serde.String{}, serde.Int64{}, "count")
	d, err := streamtest.New(topo, streamtest.Config{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	words := []string{"h", "c", "a", "g", "e", "b", "f", "d", "a", "b"}
	for _, w := range words {
		// Keyed by the word, so each word's count lives in its partition.
		if err := streamtest.Pipe(d, "words", serde.String{}, serde.String{}, w, w, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := streamtest.KeyValueStore[string, int64](d, "counts"); err == nil {
		t.Fatal("KeyValueStore of a store kept by 4 tasks: no error, want one saying to use KeyValueStoreAt")
	}
	s, err := streamtest.KeyValueStoreFor[string, int64](d, "counts", serde.String{})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok, err := s.Get("a"); err != nil || !ok || n != 2 {
		t.Fatalf("Get(a) = %d, %v, %v; want 2", n, ok, err)
	}
	if err := s.Put("i", 9); err != nil {
		t.Fatal(err)
	}
	it, err := s.All()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	got := map[string]int64{}
	var order []string
	for it.Next() {
		got[it.Key()] = it.Value()
		order = append(order, it.Key())
	}
	want := map[string]int64{"a": 2, "b": 2, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1, "h": 1, "i": 9}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("All (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, order); diff != "" {
		t.Fatalf("All's order, merged over the partitions (-want +got):\n%s", diff)
	}
	spread := 0
	for p := range int32(4) {
		ps, err := streamtest.KeyValueStoreAt[string, int64](d, "counts", p)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := ps.ApproximateCount(); n > 0 {
			spread++
		}
	}
	if spread < 2 {
		t.Fatalf("the keys sit in %d partitions' copies, want them spread", spread)
	}
}
