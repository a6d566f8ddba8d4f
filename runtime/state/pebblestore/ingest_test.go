package pebblestore

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kgen-dev/kgen/runtime/state"
)

// TestCompareSortKeysIsKeyOrder checks the ingest sort's comparison against
// bytes.Compare, on keys made to share prefixes, differ past the prefix, and
// end in zero bytes (which the integer prefixes pad with).
func TestCompareSortKeysIsKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	alphabet := []byte{0, 1, 'a', 0xff}
	var keys [][]byte
	for range 3000 {
		k := make([]byte, rng.IntN(32))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		keys = append(keys, k)
	}
	keys = append(keys, []byte{}, []byte("a"), []byte("a\x00"), []byte("a\x00\x00"))
	changes := make([]state.Change, len(keys))
	for i, k := range keys {
		changes[i].Key = k
	}
	mk := func(i int) sortKey { return newSortKey(keys[i], i) }
	for i := range keys {
		for _, j := range []int{rng.IntN(len(keys)), (i + 1) % len(keys), len(keys) - 1 - i%4} {
			want := bytes.Compare(keys[i], keys[j])
			if want == 0 {
				want = cmp.Compare(i, j)
			}
			if got := compareSortKeys(changes, mk(i), mk(j)); got != want {
				t.Fatalf("compare(%q #%d, %q #%d) = %d, want %d", keys[i], i, keys[j], j, got, want)
			}
		}
	}
	sorted := make([]sortKey, len(keys))
	for i := range keys {
		sorted[i] = mk(i)
	}
	slices.SortFunc(sorted, func(a, b sortKey) int { return compareSortKeys(changes, a, b) })
	for i := 1; i < len(sorted); i++ {
		if a, b := keys[sorted[i-1].i], keys[sorted[i].i]; bytes.Compare(a, b) > 0 {
			t.Fatalf("%q sorted before %q", a, b)
		}
	}
}

// TestIngestedTablesCompressWhatShrinks ingests a batch of compressible
// values and one of random ones: the first table is much smaller than its
// data (its blocks still compressed), the second no larger than it plus
// the table's own keys and overhead, and both read back whole.
func TestIngestedTablesCompressWhatShrinks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name       string
		value      func() []byte
		maxPercent int64 // table bytes, as a percentage of the batch's
	}{
		{"compressible", func() []byte { return bytes.Repeat([]byte("count "), 20) }, 40},
		{"random", func() []byte {
			v := make([]byte, 120)
			for i := range v {
				v[i] = byte(rng.Uint32())
			}
			return v
		}, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			changes := make([]state.Change, 20_000) // some 2.5 MiB: ingested
			for i := range changes {
				changes[i] = state.Change{Key: fmt.Appendf(nil, "key-%06d", i), Value: tc.value()}
			}
			if err := b.(state.Restorer).ApplyBatch(changes); err != nil {
				t.Fatal(err)
			}
			s := b.(*pebbleStore)
			if n := s.db.Metrics().Flush.Count; n != 0 {
				t.Fatalf("%d memtable flushes: the batch was written, not ingested", n)
			}
			var tables int64
			for _, lvl := range s.db.Metrics().Levels {
				tables += lvl.TablesSize
			}
			data := int64(batchBytes(changes))
			if tables == 0 || tables*100 > data*tc.maxPercent {
				t.Errorf("tables of %d bytes for %d bytes of changes, want at most %d%%", tables, data, tc.maxPercent)
			}
			for _, c := range changes[:100] {
				got, ok, err := s.Get(c.Key)
				if err != nil || !ok || !bytes.Equal(got, c.Value) {
					t.Fatalf("Get(%q) = %q, %v, %v; want %q", c.Key, got, ok, err, c.Value)
				}
			}
		})
	}
}
