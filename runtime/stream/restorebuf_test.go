package stream

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/pebblestore"
)

// TestRestoreBufKeepsRecords adds records of every shape to a restoreBuf
// and reads them back as changes: nil keys and values (tombstones) stay
// nil, empty ones stay empty, a record larger than a block gets one of its
// own, and each key and value is capped, so appending to one cannot
// overwrite the next.
func TestRestoreBufKeepsRecords(t *testing.T) {
	type rec struct {
		key, value []byte
		ts         int64
	}
	big := bytes.Repeat([]byte("v"), restoreBlockBytes+10)
	recs := []rec{
		{[]byte("a"), []byte("1"), 1},
		{[]byte("b"), nil, 2},         // a tombstone
		{[]byte("c"), []byte{}, 3},    // an empty value
		{nil, []byte("no key"), 4},    // a null key
		{[]byte("d"), big, 5},         // larger than a block
		{[]byte("e"), []byte("5"), 6}, // after it
	}
	var b restoreBuf
	for i, r := range recs {
		// Small fetches first (a standby's), then a large one.
		fetched := 16
		if i >= 4 {
			fetched = restoreBlockBytes
		}
		b.add(r.key, r.value, r.ts, fetched)
	}
	if cap(b.blocks[0]) != 16 {
		t.Errorf("first block of %d bytes, want the fetch's 16", cap(b.blocks[0]))
	}
	changes := b.changes()
	if len(changes) != len(recs) {
		t.Fatalf("%d changes, want %d", len(changes), len(recs))
	}
	for i, r := range recs {
		c := changes[i]
		if (c.Key == nil) != (r.key == nil) || !bytes.Equal(c.Key, r.key) {
			t.Errorf("change %d: key %q (nil %v), want %q (nil %v)", i, c.Key, c.Key == nil, r.key, r.key == nil)
		}
		if (c.Value == nil) != (r.value == nil) || !bytes.Equal(c.Value, r.value) {
			t.Errorf("change %d: value of %d bytes (nil %v), want %d (nil %v)", i, len(c.Value), c.Value == nil, len(r.value), r.value == nil)
		}
		if c.Timestamp != r.ts {
			t.Errorf("change %d: time %d, want %d", i, c.Timestamp, r.ts)
		}
		if cap(c.Key) != len(c.Key) || cap(c.Value) != len(c.Value) {
			t.Errorf("change %d: key or value not capped (%d/%d, %d/%d)", i, len(c.Key), cap(c.Key), len(c.Value), cap(c.Value))
		}
	}
}

// TestRestoredStoresKeepNoPooledBytes restores a chunk of over a megabyte
// (so its blocks are of the pooled size) into each backend, for a
// key-value and a window store, gives the chunk's buffers back as the
// restore does, scribbles over its blocks as their next user would, and
// reads the store again: a store that kept the restored bytes rather than
// copies of them would now hold the scribbles.
func TestRestoredStoresKeepNoPooledBytes(t *testing.T) {
	kinds := []*state.StoreKind{state.KeyValue, state.WindowKind(state.WindowStoreOptions{WindowSize: time.Minute, Retention: time.Hour})}
	backends := map[string]func(t *testing.T) state.Backend{
		"memory": func(*testing.T) state.Backend { return state.NewMemory() },
		"pebble": func(t *testing.T) state.Backend {
			b, err := pebblestore.Open(t.TempDir(), pebblestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	}
	for name, open := range backends {
		for _, kind := range kinds {
			t.Run(name+"/"+kind.Name, func(t *testing.T) {
				b := open(t)
				defer b.Close()
				var buf restoreBuf
				base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
				for i := range 3000 {
					key := fmt.Appendf(nil, "key-%05d", i)
					if kind != state.KeyValue {
						// The window's start and a sequence number, as Kafka
						// Streams' window changelog keys.
						key = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(key, uint64(base+int64(i)*1000)), 0)
					}
					buf.add(key, bytes.Repeat([]byte{byte('a' + i%26)}, 400), base+int64(i)*1000, restoreBlockBytes)
				}
				blocks := slices.Clone(buf.blocks)
				if len(blocks) < 2 || cap(blocks[0]) != restoreBlockBytes {
					t.Fatalf("%d blocks, the first of %d bytes: want pooled-size blocks", len(blocks), cap(blocks[0]))
				}
				changes := buf.changes()
				if err := kind.Restore(b, changes); err != nil {
					t.Fatal(err)
				}
				want := dumpBackend(t, b)
				if len(want) < 3000 {
					t.Fatalf("%d entries restored, want 3000 or more", len(want))
				}
				releaseChanges(changes)
				buf.releaseBlocks()
				for _, blk := range blocks {
					blk = blk[:cap(blk)]
					for i := range blk {
						blk[i] = 0xee
					}
				}
				if got := dumpBackend(t, b); !slices.EqualFunc(got, want, func(a, b [2]string) bool { return a == b }) {
					t.Fatal("the store's entries changed when the restored chunk's buffers were reused")
				}
			})
		}
	}
}

// dumpBackend is every entry of b, in key order.
func dumpBackend(t *testing.T, b state.Backend) [][2]string {
	t.Helper()
	it, err := b.Range(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out [][2]string
	for it.Next() {
		out = append(out, [2]string{string(it.Key()), string(it.Value())})
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRestoreChangesOfReusedSlices makes changes from a slice a kind's
// Restore wrote past the length it was given (a window store appends its
// sequence number in place), given back and taken again: a tombstone and
// a null key at that place must come out nil, not as what was written
// there. (With the pool's reuse: the race detector's pool drops some
// items, and the test then passes without testing.)
func TestRestoreChangesOfReusedSlices(t *testing.T) {
	for range 20 {
		var first restoreBuf
		first.add([]byte("a"), []byte("1"), 1, 16)
		first.add([]byte("b"), []byte("2"), 2, 16)
		changes := first.changes()
		changes = append(changes, state.Change{Key: []byte("seq"), Value: []byte{0, 0, 0, 7}}) // past the length
		releaseChanges(changes[:2])

		var next restoreBuf
		next.add([]byte("c"), []byte("3"), 3, 16)
		next.add([]byte("d"), []byte("4"), 4, 16)
		next.add(nil, nil, 5, 16) // a tombstone with a null key, where "seq" was written
		got := next.changes()
		if got[2].Key != nil || got[2].Value != nil {
			t.Fatalf("the null key and tombstone came out as %q = %q: a reused slice's old change showed through", got[2].Key, got[2].Value)
		}
		releaseChanges(got)
	}
}
