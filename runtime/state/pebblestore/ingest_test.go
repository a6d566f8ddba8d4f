package pebblestore

import (
	"bytes"
	"cmp"
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
