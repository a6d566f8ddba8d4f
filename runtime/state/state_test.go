package state_test

import (
	"testing"

	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/state/statetest"
)

// memory is the in-memory backend kind; runtime/state/pebblestore runs the
// same suite on Pebble.
var memory = statetest.Kind{
	Name: "memory",
	Open: func(t testing.TB) state.Backend {
		b := state.NewMemory()
		statetest.CloseAtEnd(t, b)
		return b
	},
	ExactCount: true,
}

// memoryWide is the in-memory backend with wide nodes (NewMemoryWide).
var memoryWide = statetest.Kind{
	Name: "memory-wide",
	Open: func(t testing.TB) state.Backend {
		b := state.NewMemoryWide()
		statetest.CloseAtEnd(t, b)
		return b
	},
	ExactCount: true,
}

// TestConformance runs the backend conformance suite on the in-memory
// backends; -state.seed and -state.ops tune its model test.
func TestConformance(t *testing.T) { statetest.Run(t, memory, memoryWide) }

func BenchmarkPut(b *testing.B) { statetest.BenchmarkPut(b, memory) }
func BenchmarkGet(b *testing.B) { statetest.BenchmarkGet(b, memory) }
func BenchmarkAll(b *testing.B) { statetest.BenchmarkAll(b, memory) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func BenchmarkWindowCount(b *testing.B)      { statetest.BenchmarkWindowCount(b, memory) }
func BenchmarkWindowFetchRange(b *testing.B) { statetest.BenchmarkWindowFetchRange(b, memory) }
func BenchmarkWindowFetchAll(b *testing.B)   { statetest.BenchmarkWindowFetchAll(b, memory) }
