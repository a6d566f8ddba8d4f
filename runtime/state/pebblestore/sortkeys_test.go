package pebblestore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
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

// BenchmarkSortKeys orders a chunk shaped like a restored window store's
// (one segment, 10,000 keys, window starts, in changelog (time) order) by
// a sort of its sort keys and by orderChanges (here a radix sort: the
// prefixes differ in under 64 bits).
func BenchmarkSortKeys(b *testing.B) {
	changes := windowChunk()
	keys := make([]sortKey, len(changes))
	for _, sorter := range []string{"slices.SortFunc", "sortKeys", "orderChanges"} {
		b.Run(sorter, func(b *testing.B) {
			for b.Loop() {
				if sorter == "orderChanges" {
					_ = orderChanges(changes, func(int32, bool) error { return nil })
					continue
				}
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

// TestOrderChangesIsCompareSortKeysOrder checks orderChanges against a
// plain sort, by each of its three ways: changes in order already (keys
// ascending, repeated), keys whose prefixes differ in few bits (the radix
// sort: a few segments and keys, times, equal prefixes with different
// tails, "a" and "a\x00"), and keys that differ in more (sortKeys). Every
// change comes once, in compareSortKeys' order, and a key equal to the one
// before it is flagged as having its prefix.
func TestOrderChangesIsCompareSortKeysOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	ways := map[string]int{}
	for round := range 600 {
		n := 1 + rng.IntN(3000)
		if round%100 == 0 {
			n = 40000
		}
		changes := make([]state.Change, n)
		for i := range changes {
			var k []byte
			switch round % 3 {
			case 0, 1: // few differing bits
				k = binary.BigEndian.AppendUint64(nil, uint64(rng.IntN(2)))
				k = fmt.Appendf(k, "k%d", rng.IntN(20))
				k = binary.BigEndian.AppendUint64(k, uint64(1_700_000_000_000+rng.IntN(64)*60_000))
				if rng.IntN(4) == 0 {
					k = append(k, byte(rng.IntN(3))) // past the prefix
				}
				if rng.IntN(50) == 0 {
					k = []byte{'a', 0, 0}[:1+rng.IntN(3)] // zero padding
				}
			default: // random bytes
				k = make([]byte, rng.IntN(30))
				for j := range k {
					k[j] = byte(rng.IntN(256))
				}
			}
			changes[i] = state.Change{Key: k}
		}
		if round%3 == 1 && rng.IntN(2) == 0 {
			slices.SortStableFunc(changes, func(a, b state.Change) int { return bytes.Compare(a.Key, b.Key) })
			if n > 1 && round%2 == 0 {
				// In order but for two keys of one prefix, which only their
				// bytes past it (or zero padding) put the other way.
				i := rng.IntN(n - 1)
				p := changes[i].Key[:min(len(changes[i].Key), sortPrefix)]
				if rng.IntN(2) == 0 {
					changes[i].Key, changes[i+1].Key = append(p[:len(p):len(p)], 0), p
				} else {
					changes[i].Key, changes[i+1].Key = append(p[:len(p):len(p)], 9), append(p[:len(p):len(p)], 8)
				}
				if i+2 < n && bytes.Compare(changes[i+2].Key, changes[i].Key) < 0 {
					changes[i+2].Key = changes[i].Key
				}
			}
		}
		// The way orderChanges takes.
		first := newSortKey(changes[0].Key, 0)
		var diff [3]uint64
		way := "in order"
		for i := range changes {
			k := newSortKey(changes[i].Key, i)
			diff[0], diff[1], diff[2] = diff[0]|k.p0^first.p0, diff[1]|k.p1^first.p1, diff[2]|k.p2^first.p2
			if i > 0 && bytes.Compare(changes[i].Key, changes[i-1].Key) < 0 {
				way = "radix"
			}
		}
		if way == "radix" && bits.OnesCount64(diff[0])+bits.OnesCount64(diff[1])+bits.OnesCount64(diff[2]) > 64 {
			way = "sorted"
		}
		ways[way]++
		want := make([]sortKey, n)
		for i, c := range changes {
			want[i] = newSortKey(c.Key, i)
		}
		slices.SortFunc(want, func(a, b sortKey) int { return compareSortKeys(changes, a, b) })
		var got []int32
		if err := orderChanges(changes, func(i int32, same bool) error {
			if len(got) > 0 && !same && bytes.Equal(changes[got[len(got)-1]].Key, changes[i].Key) {
				t.Fatalf("round %d (%s): change #%d follows an equal key, not flagged", round, way, i)
			}
			got = append(got, i)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("round %d (%d changes, %s): %d emitted", round, n, way, len(got))
		}
		for j := range got {
			if got[j] != want[j].i {
				t.Fatalf("round %d (%d changes, %s): at %d got change #%d (%x), want #%d (%x)", round, n, way, j,
					got[j], changes[got[j]].Key, want[j].i, changes[want[j].i].Key)
			}
		}
	}
	t.Logf("ways: %v", ways)
	for _, way := range []string{"in order", "radix", "sorted"} {
		if ways[way] < 30 {
			t.Errorf("%d rounds %s, want more: %v", ways[way], way, ways)
		}
	}
}
