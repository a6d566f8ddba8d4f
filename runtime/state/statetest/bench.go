package state

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kgen-dev/kgen/runtime/serde"
)

const benchKeys = 10_000

func benchBackends() []struct {
	name string
	open func(b *testing.B) Backend
} {
	return []struct {
		name string
		open func(b *testing.B) Backend
	}{
		{"memory", func(*testing.B) Backend { return NewMemory() }},
		{"pebble", func(b *testing.B) Backend {
			s, err := OpenPebble(filepath.Join(b.TempDir(), "store"), PebbleOptions{})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"pebble-nowal", func(b *testing.B) Backend {
			s, err := OpenPebble(filepath.Join(b.TempDir(), "store"), PebbleOptions{DisableWAL: true})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
}

func benchStore(b *testing.B, open func(*testing.B) Backend) (KeyValueStore[string, int64], []string) {
	b.Helper()
	be := open(b)
	b.Cleanup(func() {
		if err := be.Close(); err != nil {
			b.Error(err)
		}
	})
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%08d", i*7919%benchKeys)
	}
	return NewKeyValueStore("bench", be, serde.String{}, serde.Int64{}, nil), keys
}

// BenchmarkPut measures a typed Put of a string key and an int64 value,
// overwriting a working set of benchKeys keys.
func BenchmarkPut(b *testing.B) {
	for _, bk := range benchBackends() {
		b.Run(bk.name, func(b *testing.B) {
			s, keys := benchStore(b, bk.open)
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

// BenchmarkGet measures a typed Get of a present key among benchKeys.
func BenchmarkGet(b *testing.B) {
	for _, bk := range benchBackends() {
		b.Run(bk.name, func(b *testing.B) {
			s, keys := benchStore(b, bk.open)
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

// BenchmarkAll measures a full typed iteration, per entry.
func BenchmarkAll(b *testing.B) {
	for _, bk := range benchBackends() {
		b.Run(bk.name, func(b *testing.B) {
			s, keys := benchStore(b, bk.open)
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
