package pebblestore

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/state"
)

// BenchmarkWindowRestore restores one partition's share of the bench's
// restore-window changelog (1,250 keys × 100 one-minute windows, time
// order, 8-byte counts) into a window store, as one chunk.
func BenchmarkWindowRestore(b *testing.B) {
	kind := state.WindowKind(state.WindowStoreOptions{Retention: 7 * 24 * time.Hour, WindowSize: time.Minute})
	const keys, windows = 1250, 100
	first := time.Now().Truncate(time.Minute).UnixMilli()
	mk := func() []state.Change {
		out := make([]state.Change, 0, keys*windows)
		for w := range windows {
			for k := range keys {
				key := fmt.Appendf(make([]byte, 0, 24), "key-%05d", k*8)
				key = binary.BigEndian.AppendUint64(key, uint64(first+int64(w)*60000))
				key = binary.BigEndian.AppendUint32(key, 0)
				out = append(out, state.Change{Key: key, Value: binary.BigEndian.AppendUint64(nil, uint64(w*keys+k)), Timestamp: first})
			}
		}
		return out
	}
	src := mk()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		changes := append([]state.Change(nil), src...)
		be, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := kind.Restore(be, changes); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		be.Close()
		b.StartTimer()
	}
}
