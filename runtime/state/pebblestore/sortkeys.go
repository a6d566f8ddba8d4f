package pebblestore

import (
	"math/bits"
	"slices"

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
