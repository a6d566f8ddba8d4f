package stream

import (
	"bytes"
	"testing"
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
