package stream

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/pebblestore"
)

const globalBenchRows = 1_000_000

// loadedGlobal is a global table of globalBenchRows rows (8-byte keys,
// 100-byte values) over b.
func loadedGlobal(tb testing.TB, b state.Backend) *GlobalTable[int64, []byte] {
	tb.Helper()
	topo := NewTopology()
	AddGlobalTable(topo, "g", "g", serde.Int64{}, serde.Bytes{}, StoreOptions{})
	g := newGlobalStore(topo.globals["g"], b)
	value := make([]byte, 100)
	var batch []state.Change
	for i := range int64(globalBenchRows) {
		k, _ := serde.Int64{}.Serialize(i)
		batch = append(batch, state.Change{Key: k, Value: value})
		if len(batch) == 10_000 {
			if err := g.apply(batch); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return g.reader.(*GlobalTable[int64, []byte])
}

// BenchmarkGlobalLookup measures what a task pays to read a global table
// while every core reads it (b.RunParallel): the shared in-memory copy
// under its read lock; the same copy without the lock, which is what a
// per-unit copy (one reader, updated by its own unit) would pay; and a
// Pebble copy. The shared run also reports the heap one in-memory copy
// takes, which per-unit copies would multiply by Parallelism.
func BenchmarkGlobalLookup(b *testing.B) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	mem := loadedGlobal(b, state.NewMemoryWide())
	runtime.GC()
	runtime.ReadMemStats(&after)
	copyMiB := float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
	b.Run("memory-shared", func(b *testing.B) {
		lookups(b, mem.Get)
		b.ReportMetric(copyMiB, "MiB/copy")
	})
	b.Run("memory-unlocked", func(b *testing.B) {
		lookups(b, func(key int64) ([]byte, bool, error) {
			kb, _ := serde.Int64{}.Serialize(key)
			return mem.s.b.Get(kb) // no lock: as a per-unit copy would read
		})
	})
	b.Run("pebble", func(b *testing.B) {
		pb, err := pebblestore.Open(b.TempDir(), pebblestore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer pb.Close()
		lookups(b, loadedGlobal(b, pb).Get)
	})
}

func lookups(b *testing.B, get func(int64) ([]byte, bool, error)) {
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int64(0)
		for pb.Next() {
			i = (i + 7919) % globalBenchRows
			if _, ok, err := get(i); err != nil || !ok {
				panic(fmt.Sprint("lookup ", i, ": ", ok, err))
			}
		}
	})
}

// BenchmarkGlobalApply is the updater's work per record without the
// broker: decoding it for the policy, batching it, writing it.
func BenchmarkGlobalApply(b *testing.B) {
	topo := NewTopology()
	AddGlobalTable(topo, "g", "g", serde.String{}, serde.Bytes{}, StoreOptions{})
	value := make([]byte, 100)
	recs := make([]*kgo.Record, 10_000)
	cfg := defaultConfig()
	sink := &LocalDriver{cfg: cfg}
	for b.Loop() {
		g := newGlobalStore(topo.globals["g"], state.NewMemoryWide())
		stores := map[string]*globalStore{"g": g}
		var n globalCounters
		var batches map[*globalStore][]state.Change
		for i := 0; i < globalBenchRows; i += len(recs) {
			for j := range recs {
				recs[j] = &kgo.Record{Topic: "g", Key: fmt.Appendf(nil, "key-%07d", i+j), Value: value}
			}
			for s, b := range batches {
				batches[s] = b[:0]
			}
			var err error
			if batches, err = collectGlobal(stores, recs, sink, &n, batches); err != nil {
				b.Fatal(err)
			}
			if err := g.apply(batches[g]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*globalBenchRows), "ns/record")
}
