package state

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
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

// BenchmarkMemoryLoadRandom applies BenchmarkMemoryLoad's rows in fetches
// of 36,000 in a random order: no ascending runs for the tree's last-leaf
// shortcut to take.
func BenchmarkMemoryLoadRandom(b *testing.B) {
	const rows, perFetch = 1_000_000, 36_000
	value := make([]byte, 100)
	all := make([]Change, rows)
	for i := range rows {
		all[i] = Change{Key: fmt.Appendf(nil, "key-%07d", i), Value: value}
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(rows, func(i, j int) { all[i], all[j] = all[j], all[i] })
	b.ResetTimer()
	for b.Loop() {
		m := NewMemoryWide().(Restorer)
		for f := all; len(f) > 0; f = f[min(perFetch, len(f)):] {
			if err := m.ApplyBatch(f[:min(perFetch, len(f))]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}
