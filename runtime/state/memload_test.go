package state

import (
	"fmt"
	"hash/fnv"
	"testing"
)

// BenchmarkMemoryLoad applies 1,000,000 rows (11-byte keys, 100-byte
// values) to a wide memory store in fetches as a global table's load makes
// them: four partitions, each in key order, about 9,000 records of each
// per fetch.
func BenchmarkMemoryLoad(b *testing.B) {
	const rows, perPart = 1_000_000, 9000
	parts := make([][]Change, 4)
	value := make([]byte, 100)
	for i := range rows {
		k := fmt.Appendf(nil, "key-%07d", i)
		h := fnv.New32a()
		h.Write(k)
		p := h.Sum32() % 4
		parts[p] = append(parts[p], Change{Key: k, Value: value})
	}
	var fetches [][]Change
	for {
		var f []Change
		for p := range parts {
			n := min(perPart, len(parts[p]))
			f = append(f, parts[p][:n]...)
			parts[p] = parts[p][n:]
		}
		if len(f) == 0 {
			break
		}
		fetches = append(fetches, f)
	}
	b.ResetTimer()
	for b.Loop() {
		m := NewMemoryWide().(Restorer)
		for _, f := range fetches {
			if err := m.ApplyBatch(f); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}
