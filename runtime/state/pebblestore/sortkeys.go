package pebblestore

import (
	"bytes"
	"math/bits"
	"slices"
	"sync"

	"github.com/kgen-dev/kgen/runtime/state"
)

// sortKeys sorts keys in compareSortKeys' order, in two steps: by prefix
// and position, with the comparisons inline (lessKey), then each run of
// keys whose prefixes are equal (keys longer than the prefix, rare) by
// compareSortKeys. That took the sort of a restored chunk of a window store
// (125,000 changes) from about 19 ms with slices.SortFunc and
// compareSortKeys to under half of that.
func sortKeys(changes []state.Change, keys []sortKey) {
	quickSortKeys(keys, 2*bits.Len(uint(len(keys))))
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && samePrefix(&keys[i], &keys[j]) {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(keys[i:j], func(a, b sortKey) int { return compareSortKeys(changes, a, b) })
		}
		i = j
	}
}

func samePrefix(a, b *sortKey) bool { return a.p0 == b.p0 && a.p1 == b.p1 && a.p2 == b.p2 }

// lessKey orders by prefix, then by position.
func lessKey(a, b *sortKey) bool {
	if a.p0 != b.p0 {
		return a.p0 < b.p0
	}
	if a.p1 != b.p1 {
		return a.p1 < b.p1
	}
	if a.p2 != b.p2 {
		return a.p2 < b.p2
	}
	return a.i < b.i
}

// quickSortKeys sorts k by lessKey. Every key differs (by position at
// least), so it needs no care for runs of equal keys.
func quickSortKeys(k []sortKey, depth int) {
	for len(k) > 12 {
		if depth == 0 {
			// Too many poor pivots: pdqsort's guarantees instead.
			slices.SortFunc(k, func(a, b sortKey) int {
				if lessKey(&a, &b) {
					return -1
				}
				return 1
			})
			return
		}
		depth--
		p := partitionKeys(k)
		// The smaller side recursively, the larger in the loop: the stack
		// stays logarithmic.
		if p < len(k)-p {
			quickSortKeys(k[:p], depth)
			k = k[p+1:]
		} else {
			quickSortKeys(k[p+1:], depth)
			k = k[:p]
		}
	}
	for i := 1; i < len(k); i++ {
		for j := i; j > 0 && lessKey(&k[j], &k[j-1]); j-- {
			k[j], k[j-1] = k[j-1], k[j]
		}
	}
}

// partitionKeys puts the median of k's first, middle and last keys at the
// index it returns, the smaller keys before it and the larger after it.
func partitionKeys(k []sortKey) int {
	n, m := len(k), len(k)/2
	if lessKey(&k[m], &k[0]) {
		k[m], k[0] = k[0], k[m]
	}
	if lessKey(&k[n-1], &k[m]) {
		k[n-1], k[m] = k[m], k[n-1]
		if lessKey(&k[m], &k[0]) {
			k[m], k[0] = k[0], k[m]
		}
	}
	k[0], k[m] = k[m], k[0]
	pivot := k[0]
	i, j := 1, n-1
	for {
		for i <= j && lessKey(&k[i], &pivot) {
			i++
		}
		for i <= j && lessKey(&pivot, &k[j]) {
			j--
		}
		if i >= j {
			break
		}
		k[i], k[j] = k[j], k[i]
		i++
		j--
	}
	k[0], k[j] = k[j], k[0]
	return j
}

// orderChanges calls emit with the position of each change in key order,
// then position order, so the last change of a key is the last of its
// run; samePrefix says the change's key has the first sortPrefix bytes
// (zero-padded) of the one before it, so that only then may the keys be
// equal. It looks at the keys once first, for what it can spare: changes
// already in order (a changelog of keys written in order) are not sorted,
// and when the bits that differ among the keys' prefixes are few (with a
// change's position, they fit in 64), the changes are sorted by those
// bits alone by a radix sort of a few passes (radixOrder); otherwise by
// sortKeys.
func orderChanges(changes []state.Change, emit func(i int32, samePrefix bool) error) error {
	if len(changes) == 0 {
		return nil
	}
	keys := takeSortKeys(len(changes))
	defer sortKeysPool.Put(&keys)
	var diff [3]uint64 // the bits in which some prefix differs from the first
	ordered := true
	keys[0] = newSortKey(changes[0].Key, 0)
	first := keys[0]
	for i := 1; i < len(changes); i++ {
		k := newSortKey(changes[i].Key, i)
		keys[i] = k
		diff[0] |= k.p0 ^ first.p0
		diff[1] |= k.p1 ^ first.p1
		diff[2] |= k.p2 ^ first.p2
		if ordered && descends(changes, &keys[i-1], &k) {
			ordered = false
		}
	}
	width := bits.OnesCount64(diff[0]) + bits.OnesCount64(diff[1]) + bits.OnesCount64(diff[2])
	switch {
	case ordered:
		for i := range changes {
			if err := emit(int32(i), i > 0 && samePrefix(&keys[i-1], &keys[i])); err != nil {
				return err
			}
		}
		return nil
	case width+bits.Len(uint(len(keys)-1)) <= 64:
		return radixOrder(changes, keys, diff, width, emit)
	}
	sortKeys(changes, keys)
	for i := range keys {
		if err := emit(keys[i].i, i > 0 && samePrefix(&keys[i-1], &keys[i])); err != nil {
			return err
		}
	}
	return nil
}

// descends says whether key b sorts before key a, a the one before it in
// the changes (equal keys are in order, by position).
func descends(changes []state.Change, a, b *sortKey) bool {
	if !samePrefix(a, b) {
		return lessKey(b, a)
	}
	return compareSortKeys(changes, *b, *a) < 0
}

// radixBits is the width of a radix pass's digit: 2,048 counters (8 KiB)
// a pass, a window store's chunk (some 30 differing bits) in three.
const radixBits = 11

// radixOrder is orderChanges for prefixes that differ in width bits (diff)
// few enough that, with a change's position, they fit in 64: each key's
// differing bits (the bit fields of diff, most significant first) and its
// position are packed into an integer, and the integers sorted by the
// packed bits in a least-significant-digit radix sort, which keeps equal
// ones in position order; keys with equal prefixes are then compared
// whole. A window store's chunk is ordered in about a fifth of sortKeys'
// time: each pass reads and writes 8 bytes a change, where the sort
// compares 32-byte keys some log2(n) times each.
func radixOrder(changes []state.Change, keys []sortKey, diff [3]uint64, width int, emit func(i int32, samePrefix bool) error) error {
	// The bit fields to pack: word, shift and width, most significant first.
	type field struct {
		word  int
		shift uint
		n     uint
	}
	var fields []field
	for w, d := range diff {
		for d != 0 {
			hi := 63 - bits.LeadingZeros64(d) // the field's top bit
			n := bits.LeadingZeros64(^(d << (63 - hi)))
			lo := hi - n + 1
			fields = append(fields, field{word: w, shift: uint(lo), n: uint(n)})
			d &^= (1<<n - 1) << lo
		}
	}
	idxBits := uint(bits.Len(uint(len(keys) - 1)))
	words := takeWords(len(keys))
	defer wordsPool.Put(&words)
	packed := words
	for i := range keys {
		k := &keys[i]
		p := [3]uint64{k.p0, k.p1, k.p2}
		var b uint64
		for _, f := range fields {
			b = b<<f.n | p[f.word]>>f.shift&(1<<f.n-1)
		}
		packed[i] = b<<idxBits | uint64(i)
	}
	passes := (width + radixBits - 1) / radixBits
	if passes > 0 {
		counts := make([][1 << radixBits]int32, passes)
		for _, k := range packed {
			k >>= idxBits
			for p := range counts {
				counts[p][k&(1<<radixBits-1)]++
				k >>= radixBits
			}
		}
		spare := takeWords(len(packed))
		defer wordsPool.Put(&spare)
		src, dst := packed, spare
		for p := range counts {
			c := &counts[p]
			sum := int32(0)
			for d, n := range c {
				c[d] = sum
				sum += n
			}
			shift := idxBits + uint(p*radixBits)
			for _, k := range src {
				d := k >> shift & (1<<radixBits - 1)
				dst[c[d]] = k
				c[d]++
			}
			src, dst = dst, src
		}
		packed = src
	}
	mask := uint64(1)<<idxBits - 1
	for j := 0; j < len(packed); {
		e := j + 1
		for e < len(packed) && packed[e]>>idxBits == packed[j]>>idxBits {
			e++
		}
		if e-j > 1 {
			// Equal prefixes: the keys whole, then positions (stable).
			slices.SortStableFunc(packed[j:e], func(a, b uint64) int {
				return bytes.Compare(changes[a&mask].Key, changes[b&mask].Key)
			})
		}
		for m := j; m < e; m++ {
			if err := emit(int32(packed[m]&mask), m > j); err != nil {
				return err
			}
		}
		j = e
	}
	return nil
}

// The orders of restored chunks (a window restore's 32 bytes of keys and
// 16 of radix words a change) are garbage once a chunk is written, and
// were among a restore's largest allocations: they are pooled for the
// next chunk's.
var (
	sortKeysPool sync.Pool // *[]sortKey
	wordsPool    sync.Pool // *[]uint64
)

// takeSortKeys returns n sort keys, to be overwritten.
func takeSortKeys(n int) []sortKey {
	if p, ok := sortKeysPool.Get().(*[]sortKey); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]sortKey, n)
}

// takeWords returns n words, to be overwritten.
func takeWords(n int) []uint64 {
	if p, ok := wordsPool.Get().(*[]uint64); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]uint64, n)
}
