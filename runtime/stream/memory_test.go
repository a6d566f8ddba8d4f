package stream

import (
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgen-dev/kgen/runtime/serde"
)

// TestUnitClientMemoryBounds checks that a unit's client gets kgen's
// memory bounds, smaller fetches where a task reads several topics, and
// that ClientOpts, applied after them, override them.
func TestUnitClientMemoryBounds(t *testing.T) {
	for _, tc := range []struct {
		name          string
		join          bool
		opts          []kgo.Opt
		records       int64
		fetch, fetchP int32
	}{
		{"defaults", false, nil, produceBufferRecords, fetchMaxBytes, 1 << 20},
		{"overridden", false, []kgo.Opt{kgo.MaxBufferedRecords(50_000), kgo.FetchMaxBytes(50 << 20)}, 50_000, 50 << 20, 1 << 20},
		{"a task of two topics", true, nil, produceBufferRecords, joinFetchMaxBytes, joinFetchMaxPartitionBytes},
		{"a task of two topics, overridden", true, []kgo.Opt{kgo.FetchMaxBytes(50 << 20), kgo.FetchMaxPartitionBytes(1 << 20)}, produceBufferRecords, 50 << 20, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := NewTopology()
			AddSource(topo, "in", "in", serde.Bytes{}, serde.Bytes{})
			parents := []string{"in"}
			if tc.join {
				AddSource(topo, "other", "other", serde.Bytes{}, serde.Bytes{})
				parents = append(parents, "other")
			}
			AddSink(topo, "out", "out", serde.Bytes{}, serde.Bytes{}, parents...)
			a, err := New(topo, Brokers("127.0.0.1:1"), AppID("memory-bounds"), StateDir(t.TempDir()),
				InstanceID("i"), Logger(slog.New(slog.DiscardHandler)), ClientOpts(tc.opts...))
			if err != nil {
				t.Fatal(err)
			}
			u, err := newUnit(a, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer u.cl.Close()
			if got := u.cl.OptValue(kgo.MaxBufferedRecords).(int64); got != tc.records {
				t.Errorf("MaxBufferedRecords = %d, want %d", got, tc.records)
			}
			if got := u.cl.OptValue(kgo.FetchMaxBytes).(int32); got != tc.fetch {
				t.Errorf("FetchMaxBytes = %d, want %d", got, tc.fetch)
			}
			if got := u.cl.OptValue(kgo.FetchMaxPartitionBytes).(int32); got != tc.fetchP {
				t.Errorf("FetchMaxPartitionBytes = %d, want %d", got, tc.fetchP)
			}
		})
	}
}
