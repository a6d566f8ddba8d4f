package statetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
)

// windowBenchKeys and windowBenchStep shape the window benchmarks' data:
// 1,000 keys, a record every windowBenchStep ms of stream time, each
// counted in a one-minute window of a store keeping an hour.
const (
	windowBenchKeys = 1_000
	windowBenchStep = 10
)

var windowBenchOpt = state.WindowStoreOptions{WindowSize: time.Minute, Retention: time.Hour}

// windowBenchStore fills a window store with an hour and a half of counts
// (so that some segments have expired), and returns it, its keys and the
// stream time reached.
func windowBenchStore(b *testing.B, kind Kind) (state.WindowStore[string, int64], []string, int64) {
	b.Helper()
	s := state.NewWindowStore("bench", kind.Open(b), serde.String{}, serde.Int64{}, windowBenchOpt, nil)
	keys := make([]string, windowBenchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%06d", i*7919%windowBenchKeys)
	}
	var now int64
	for i := 0; now < 90*60_000; i++ {
		now = int64(i) * windowBenchStep * 50 // fill faster than the benchmarks write
		if err := s.Put(keys[i%len(keys)], int64(i), now/60_000*60_000); err != nil {
			b.Fatal(err)
		}
	}
	return s, keys, now
}

// BenchmarkWindowCount measures a windowed count's step: Fetch of the
// record's one-minute window, then Put of the count, stream time moving on
// (and segments expiring) as it goes.
func BenchmarkWindowCount(b *testing.B, kinds ...Kind) {
	for _, kind := range kinds {
		b.Run(kind.Name, func(b *testing.B) {
			s, keys, now := windowBenchStore(b, kind)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				now += windowBenchStep
				k, start := keys[i%len(keys)], now/60_000*60_000
				n, _, err := s.Fetch(k, start)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Put(k, n+1, start); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkWindowFetchRange measures a join's lookup: one key's windows
// over ten minutes, among 1,000 keys' windows of the last hour.
func BenchmarkWindowFetchRange(b *testing.B, kinds ...Kind) {
	for _, kind := range kinds {
		b.Run(kind.Name, func(b *testing.B) {
			s, keys, now := windowBenchStore(b, kind)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				it, err := s.FetchRange(keys[i%len(keys)], now-10*60_000, now)
				if err != nil {
					b.Fatal(err)
				}
				for it.Next() {
				}
				if err := it.Close(); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkWindowFetchAll measures what the key-first layout inside a
// segment costs: every key's windows of one minute, which reads the whole
// segment holding that minute.
func BenchmarkWindowFetchAll(b *testing.B, kinds ...Kind) {
	for _, kind := range kinds {
		b.Run(kind.Name, func(b *testing.B) {
			s, _, now := windowBenchStore(b, kind)
			start := now/60_000*60_000 - 60_000
			b.ReportAllocs()
			for b.Loop() {
				it, err := s.FetchAll(start, start)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for it.Next() {
					n++
				}
				if err := it.Close(); err != nil {
					b.Fatal(err)
				}
				if n == 0 {
					b.Fatal("no window")
				}
			}
		})
	}
}
