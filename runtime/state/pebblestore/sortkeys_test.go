package pebblestore

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kgen-dev/kgen/runtime/state"
)

// randomChanges makes n changes whose keys share prefixes often: few
// segments, few keys, long and short keys, equal keys, sorted and reversed
// runs, so that sortKeys meets ties in the prefix and poor pivots.
func randomChanges(rng *rand.Rand, n int) []state.Change {
	changes := make([]state.Change, n)
	order := rng.IntN(3) // random, ascending, descending
	for i := range changes {
		k := binary.BigEndian.AppendUint64(nil, uint64(rng.IntN(3)))
		k = fmt.Appendf(k, "key-%d", rng.IntN(50))
		switch order {
		case 1:
			k = binary.BigEndian.AppendUint64(k[:8], uint64(i))
		case 2:
			k = binary.BigEndian.AppendUint64(k[:8], uint64(n-i))
		default:
			k = binary.BigEndian.AppendUint64(k, uint64(rng.IntN(4)))
			if rng.IntN(2) == 0 {
				k = binary.BigEndian.AppendUint32(k, uint32(rng.IntN(3))) // past the prefix
			}
		}
		changes[i] = state.Change{Key: k[:rng.IntN(len(k)+1)]}
	}
	return changes
}

func TestSortKeysIsCompareSortKeysOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for round := range 300 {
		n := rng.IntN(2000)
		if round%50 == 0 {
			n = 20000
		}
		changes := randomChanges(rng, n)
		got := make([]sortKey, n)
		for i, c := range changes {
			got[i] = newSortKey(c.Key, i)
		}
		want := slices.Clone(got)
		slices.SortFunc(want, func(a, b sortKey) int { return compareSortKeys(changes, a, b) })
		sortKeys(changes, got)
		if !slices.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("round %d (%d changes): at %d got change #%d (%x), want #%d (%x)", round, n, i,
						got[i].i, changes[got[i].i].Key, want[i].i, changes[want[i].i].Key)
				}
			}
		}
	}
}

// BenchmarkSortKeys sorts a chunk shaped like a restored window store's:
// one segment, 10,000 keys, window starts, in changelog (time) order.
func BenchmarkSortKeys(b *testing.B) {
	changes := windowChunk()
	keys := make([]sortKey, len(changes))
	for _, sorter := range []string{"slices.SortFunc", "sortKeys"} {
		b.Run(sorter, func(b *testing.B) {
			for b.Loop() {
				for i, c := range changes {
					keys[i] = newSortKey(c.Key, i)
				}
				if sorter == "sortKeys" {
					sortKeys(changes, keys)
				} else {
					slices.SortFunc(keys, func(a, b sortKey) int { return compareSortKeys(changes, a, b) })
				}
			}
		})
	}
}

// BenchmarkIngestChunk applies a restored chunk shaped like a window
// store's (125,000 changes) to an empty store: sort, table, ingestion.
func BenchmarkIngestChunk(b *testing.B) {
	changes := windowChunk()
	for b.Loop() {
		b.StopTimer()
		st, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := st.(state.Restorer).ApplyBatch(changes); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		st.Close()
		b.StartTimer()
	}
}

// windowChunk is 125,000 changes shaped like a restored window store's
// chunk: one segment, 10,000 keys in random order, window starts in
// changelog (time) order, 8-byte values.
func windowChunk() []state.Change {
	rng := rand.New(rand.NewPCG(1, 2))
	changes := make([]state.Change, 125_000)
	for i := range changes {
		k := binary.BigEndian.AppendUint64(nil, 7)
		k = fmt.Appendf(k, "key-%d", rng.IntN(10000))
		k = binary.BigEndian.AppendUint64(k, uint64(1_700_000_000_000+i/2000*60_000))
		changes[i] = state.Change{Key: binary.BigEndian.AppendUint32(k, 0), Value: binary.BigEndian.AppendUint64(nil, uint64(i))}
	}
	return changes
}
