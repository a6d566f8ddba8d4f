package faults

import (
	"fmt"
	"math/rand/v2"
)

// Workload describes the input the driver produces. The same Workload always
// generates the same records.
type Workload struct {
	Records int     // input records in all
	Keys    int     // distinct keys
	Skew    float64 // Zipf exponent s (> 1) of the key distribution
	Seed    uint64
}

// Truth is the expected content of the input, per key: the values of its
// records in sequence order (the record with sequence number s is at index
// s-1).
type Truth map[string][]int64

// Record is one input record, in produce order.
type Record struct {
	Key string
	Input
}

// keyName is the key of the i-th key; fixed width so keys sort as numbers.
func keyName(i uint64) string { return fmt.Sprintf("k%05d", i) }

// Generate returns the input records in produce order and the truth they
// make. Keys follow a Zipf distribution (key k00000 is the most frequent);
// values are uniform in [1, 1000], so that sums only grow.
func (w Workload) Generate() ([]Record, Truth, error) {
	if w.Records <= 0 || w.Keys <= 0 {
		return nil, nil, fmt.Errorf("generate workload: want records and keys > 0, got %d and %d", w.Records, w.Keys)
	}
	if w.Skew <= 1 {
		return nil, nil, fmt.Errorf("generate workload: Zipf exponent %v must be > 1", w.Skew)
	}
	rng := rand.New(rand.NewPCG(w.Seed, w.Seed^0x9e3779b97f4a7c15))
	zipf := rand.NewZipf(rng, w.Skew, 1, uint64(w.Keys-1))
	truth := Truth{}
	recs := make([]Record, w.Records)
	for i := range recs {
		k := keyName(zipf.Uint64())
		v := 1 + rng.Int64N(1000)
		truth[k] = append(truth[k], v)
		recs[i] = Record{Key: k, Input: Input{Seq: int64(len(truth[k])), Value: v}}
	}
	return recs, truth, nil
}

// Records is the number of input records the truth holds.
func (t Truth) Records() int {
	n := 0
	for _, vs := range t {
		n += len(vs)
	}
	return n
}
