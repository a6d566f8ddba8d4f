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
	if !mergeRuns(keys) {
		quickSortKeys(keys, 2*bits.Len(uint(len(keys))))
	}
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

// minMergeRun is the average length of the ascending runs from which
// mergeRuns merges them rather than leave keys to the quicksort.
const minMergeRun = 64

// mergeRuns sorts k by lessKey when it is made of few ascending runs (an
// average run of minMergeRun keys or more), merging them pairwise: a
// changelog written in sorted batches (a window store's keys in order
// within each window, as the bench writes them) is then sorted in a few
// linear passes, where the quicksort pays log n of them. It returns false,
// k unchanged, when the runs are too short; finding that out costs at most
// one pass, and usually much less.
func mergeRuns(k []sortKey) bool {
	n := len(k)
	if n < 2*minMergeRun {
		return false
	}
	limit := n / minMergeRun
	starts := []int{0}
	for i := 1; i < n; i++ {
		if lessKey(&k[i], &k[i-1]) {
			if len(starts) == limit {
				return false
			}
			starts = append(starts, i)
		}
	}
	if len(starts) == 1 {
		return true
	}
	src, dst := k, make([]sortKey, n)
	for len(starts) > 1 {
		next := starts[:0:0]
		for r := 0; r < len(starts); r += 2 {
			lo := starts[r]
			next = append(next, lo)
			if r+1 == len(starts) {
				copy(dst[lo:], src[lo:]) // an odd run out
				break
			}
			mid, hi := starts[r+1], n
			if r+2 < len(starts) {
				hi = starts[r+2]
			}
			mergeKeys(dst[lo:hi], src[lo:mid], src[mid:hi])
		}
		starts = next
		src, dst = dst, src
	}
	if &src[0] != &k[0] {
		copy(k, src)
	}
	return true
}

// mergeKeys merges the sorted a and b into dst (len(a)+len(b) long).
func mergeKeys(dst, a, b []sortKey) {
	i, j, o := 0, 0, 0
	for i < len(a) && j < len(b) {
		if lessKey(&b[j], &a[i]) {
			dst[o] = b[j]
			j++
		} else {
			dst[o] = a[i]
			i++
		}
		o++
	}
	o += copy(dst[o:], a[i:])
	copy(dst[o:], b[j:])
}
