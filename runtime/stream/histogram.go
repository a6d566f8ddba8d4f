package stream

import (
	"math/bits"
	"time"
)

// Histogram is a latency distribution, as Stats reports it: Counts[i] is
// how many observations were at most Bounds[i] (not cumulative: each falls
// in one bucket), and Counts[len(Bounds)] those above the last bound.
type Histogram struct {
	Bounds []time.Duration
	Counts []uint64
	Count  uint64
	Sum    time.Duration
}

// latencyBounds are the buckets of every latency histogram: powers of two
// from 1 µs to about 67 s, so that a record's processing and a commit of a
// minute both fall somewhere useful.
var latencyBounds = func() []time.Duration {
	b := make([]time.Duration, 27)
	for i := range b {
		b[i] = time.Microsecond << i
	}
	return b
}()

// histogram is a unit's own, owned by its goroutine; publish copies it.
type histogram struct {
	counts [28]uint64
	count  uint64
	sum    time.Duration
}

func (h *histogram) observe(d time.Duration) {
	if d < 0 {
		d = 0
	}
	// Bucket i holds (bound i-1, bound i]: the index is the bit length of
	// the duration in microseconds, rounded up.
	us := uint64((d + time.Microsecond - 1) / time.Microsecond)
	i := 0
	if us > 1 {
		i = bits.Len64(us - 1)
	}
	i = min(i, len(h.counts)-1)
	h.counts[i]++
	h.count++
	h.sum += d
}

// add folds o into h.
func (h *histogram) add(o *histogram) {
	for i := range h.counts {
		h.counts[i] += o.counts[i]
	}
	h.count += o.count
	h.sum += o.sum
}

func (h *histogram) snapshot() Histogram {
	return Histogram{Bounds: latencyBounds, Counts: append([]uint64(nil), h.counts[:]...), Count: h.count, Sum: h.sum}
}

// merge adds o (of the same bounds) to h.
func (h *Histogram) merge(o Histogram) {
	if len(h.Counts) == 0 {
		h.Bounds, h.Counts = o.Bounds, make([]uint64, len(o.Counts))
	}
	for i := range o.Counts {
		h.Counts[i] += o.Counts[i]
	}
	h.Count += o.Count
	h.Sum += o.Sum
}

// latencySample is how often a record's latencies are measured: one record
// in 64, as reading the clock for each would cost a tenth of a fast
// pipeline's CPU (Kafka Streams records them only at its debug level).
const latencySample = 64
