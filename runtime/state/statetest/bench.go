package statetest

import (
	"fmt"
	"testing"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

const benchKeys = 10_000

func benchStore(b *testing.B, kind Kind) (state.KeyValueStore[string, int64], []string) {
	b.Helper()
	be := kind.Open(b)
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%08d", i*7919%benchKeys)
	}
	return state.NewKeyValueStore("bench", be, serde.String{}, serde.Int64{}, nil), keys
}

// BenchmarkPut measures a typed Put of a string key and an int64 value,
// overwriting a working set of 10,000 keys, with a sub-benchmark per kind.
func BenchmarkPut(b *testing.B, kinds ...Kind) {
	for _, kind := range kinds {
		b.Run(kind.Name, func(b *testing.B) {
			s, keys := benchStore(b, kind)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := s.Put(keys[i%len(keys)], int64(i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkGet measures a typed Get of a present key among 10,000, with a
// sub-benchmark per kind.
func BenchmarkGet(b *testing.B, kinds ...Kind) {
	for _, kind := range kinds {
		b.Run(kind.Name, func(b *testing.B) {
			s, keys := benchStore(b, kind)
			for i, k := range keys {
				if err := s.Put(k, int64(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok, err := s.Get(keys[i%len(keys)]); !ok || err != nil {
					b.Fatalf("Get = %v, %v", ok, err)
				}
				i++
			}
		})
	}
}

// BenchmarkAll measures a full typed iteration over 10,000 entries, per
// entry, with a sub-benchmark per kind.
func BenchmarkAll(b *testing.B, kinds ...Kind) {
	for _, kind := range kinds {
		b.Run(kind.Name, func(b *testing.B) {
			s, keys := benchStore(b, kind)
			for i, k := range keys {
				if err := s.Put(k, int64(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				it, err := s.All()
				if err != nil {
					b.Fatal(err)
				}
				for it.Next() {
					n++
				}
				if err := it.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/entry")
		})
	}
}
