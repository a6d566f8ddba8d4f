package stream

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Header is one Kafka record header. It is franz-go's type, so headers pass
// from input to output records without a copy.
type Header = kgo.RecordHeader

// Record is what flows between the nodes of a topology: a typed key and
// value with the record's timestamp and headers. Records are passed by value;
// nothing is boxed on the way from a source to a sink.
type Record[K, V any] struct {
	Key       K
	Value     V
	Timestamp time.Time
	Headers   []Header
}

// TaskID names a task: partition Partition of every source topic of
// sub-topology Subtopology.
type TaskID struct {
	Subtopology int
	Partition   int32
}

func (id TaskID) String() string { return fmt.Sprintf("%d_%d", id.Subtopology, id.Partition) }

// PunctuationType says which clock drives a scheduled punctuation.
type PunctuationType int

const (
	// StreamTime punctuations fire when the task's stream time (the largest
	// record timestamp processed) reaches the next scheduled time. They do not
	// fire while no records arrive.
	StreamTime PunctuationType = iota
	// WallClock punctuations fire from the system clock, records or not.
	WallClock
)

func (p PunctuationType) String() string {
	if p == WallClock {
		return "wall-clock"
	}
	return "stream-time"
}

// Cancellable stops a scheduled punctuation.
type Cancellable struct{ s *schedule }

// Cancel stops the punctuation; it does not fire again. Safe to call twice.
func (c Cancellable) Cancel() {
	if c.s != nil {
		c.s.cancelled = true
	}
}

func fromMillis(ms int64) time.Time {
	if ms < 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
