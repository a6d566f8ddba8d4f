package serde

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Windowed is the key of a windowed aggregation: the grouping key and the
// window it was aggregated in, as Kafka Streams' Windowed<K>. Start and End
// are milliseconds since the epoch, as record timestamps on the wire. A
// time window (tumbling, hopping, sliding) holds the records with
// Start <= timestamp < End; a session window holds Start <= timestamp <=
// End (a session of one record has Start == End).
//
// Kafka Streams' windows never start before 0, and a window ends no
// earlier than it starts: the serdes refuse a Windowed that breaks either
// rule, as Kafka Streams' own cannot make one.
type Windowed[K any] struct {
	Key   K
	Start int64
	End   int64
}

// StartTime is Start as a time.Time.
func (w Windowed[K]) StartTime() time.Time { return time.UnixMilli(w.Start) }

// EndTime is End as a time.Time.
func (w Windowed[K]) EndTime() time.Time { return time.UnixMilli(w.End) }

// String formats the key and its window as Kafka Streams' Windowed does:
// [key@start/end].
func (w Windowed[K]) String() string { return fmt.Sprintf("[%v@%d/%d]", w.Key, w.Start, w.End) }

// ShortError reports bytes too short to be what a deserializer reads: a
// windowed key needs room for its window after the key.
type ShortError struct {
	// Type is what was decoded ("time-windowed key").
	Type string
	// Min is the fewest bytes it can have, Got how many there were.
	Min, Got int
	// Layout says what the bytes should hold.
	Layout string
}

func (e *ShortError) Error() string {
	return fmt.Sprintf("decode %s: want at least %d bytes (%s), got %d", e.Type, e.Min, e.Layout, e.Got)
}

const (
	timeWindowedType    = "time-windowed key"
	sessionWindowedType = "session-windowed key"
)

// TimeWindowed encodes the keys of a tumbling, hopping or sliding window
// aggregation as Kafka Streams' TimeWindowedSerializer does: the key as
// inner encodes it, then the window's start as 8 bytes big-endian. The
// end is not written: reading derives it as start+size, where size is the
// windows' size (that of the spec's windows; a sliding window's is its
// time difference), cut to whole milliseconds as Kafka Streams does; an end
// past the largest int64 is capped there, as Kafka Streams caps it.
// A size under a millisecond cannot make a window, so reading with one is
// an error (Kafka Streams' deserializer fails too when it has no size).
//
// The key must not be null (Kafka Streams fails on one too): with an inner
// serde that can say null (a NullDecoder, such as Bytes or dsl.Nullable), a
// key it encodes as null is an error. Bytes shorter than the 8-byte start
// are a *ShortError; a start before 0 is an error on both sides.
// A Windowed cannot say null: read with dsl.Nullable for a topic whose keys
// may be absent.
func TimeWindowed[K any](inner Serde[K], size time.Duration) Serde[Windowed[K]] {
	return timeWindowed[K]{inner: inner, size: size.Milliseconds()}
}

type timeWindowed[K any] struct {
	inner Serde[K]
	size  int64 // milliseconds
}

func (s timeWindowed[K]) Serialize(w Windowed[K]) ([]byte, error) { return s.AppendSerialize(nil, w) }

// AppendSerialize appends the bytes Serialize returns to dst (Appender).
func (s timeWindowed[K]) AppendSerialize(dst []byte, w Windowed[K]) ([]byte, error) {
	if w.Start < 0 {
		return nil, fmt.Errorf("encode %s: window start %d is before 0", timeWindowedType, w.Start)
	}
	dst, err := appendKey(dst, s.inner, w.Key, 8, timeWindowedType)
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint64(dst, uint64(w.Start)), nil
}

func (s timeWindowed[K]) Deserialize(b []byte) (Windowed[K], error) {
	var w Windowed[K]
	if len(b) < 8 {
		return w, &ShortError{Type: timeWindowedType, Min: 8, Got: len(b), Layout: "the key, then the window's 8-byte start"}
	}
	if s.size < 1 {
		return w, fmt.Errorf("decode %s: the window size %dms is not positive: the serde needs the windows' size to give a window its end", timeWindowedType, s.size)
	}
	n := len(b) - 8
	w.Start = int64(binary.BigEndian.Uint64(b[n:]))
	if w.Start < 0 {
		return w, fmt.Errorf("decode %s: window start %d is before 0", timeWindowedType, w.Start)
	}
	w.End = w.Start + s.size
	if w.End < w.Start { // overflow: Kafka Streams caps the end
		w.End = math.MaxInt64
	}
	k, err := s.inner.Deserialize(b[:n:n])
	if err != nil {
		return w, fmt.Errorf("decode %s: the key: %w", timeWindowedType, err)
	}
	w.Key = k
	return w, nil
}

// SessionWindowed encodes the keys of a session window aggregation as
// Kafka Streams' SessionWindowedSerializer does: the key as inner encodes
// it, then the window's end and then its start, each 8 bytes big-endian.
// Both are on the wire, so reading needs no size.
//
// The key must not be null, as with TimeWindowed. Bytes shorter than the
// 16 bytes of the window are a *ShortError; a start before 0 or an end
// before the start is an error on both sides.
func SessionWindowed[K any](inner Serde[K]) Serde[Windowed[K]] {
	return sessionWindowed[K]{inner: inner}
}

type sessionWindowed[K any] struct{ inner Serde[K] }

func (s sessionWindowed[K]) Serialize(w Windowed[K]) ([]byte, error) {
	return s.AppendSerialize(nil, w)
}

// AppendSerialize appends the bytes Serialize returns to dst (Appender).
func (s sessionWindowed[K]) AppendSerialize(dst []byte, w Windowed[K]) ([]byte, error) {
	if err := checkSession(w.Start, w.End); err != nil {
		return nil, fmt.Errorf("encode %s: %w", sessionWindowedType, err)
	}
	dst, err := appendKey(dst, s.inner, w.Key, 16, sessionWindowedType)
	if err != nil {
		return nil, err
	}
	dst = binary.BigEndian.AppendUint64(dst, uint64(w.End))
	return binary.BigEndian.AppendUint64(dst, uint64(w.Start)), nil
}

func (s sessionWindowed[K]) Deserialize(b []byte) (Windowed[K], error) {
	var w Windowed[K]
	if len(b) < 16 {
		return w, &ShortError{Type: sessionWindowedType, Min: 16, Got: len(b), Layout: "the key, then the window's 8-byte end and 8-byte start"}
	}
	n := len(b) - 16
	w.End = int64(binary.BigEndian.Uint64(b[n:]))
	w.Start = int64(binary.BigEndian.Uint64(b[n+8:]))
	if err := checkSession(w.Start, w.End); err != nil {
		return w, fmt.Errorf("decode %s: %w", sessionWindowedType, err)
	}
	k, err := s.inner.Deserialize(b[:n:n])
	if err != nil {
		return w, fmt.Errorf("decode %s: the key: %w", sessionWindowedType, err)
	}
	w.Key = k
	return w, nil
}

func checkSession(start, end int64) error {
	if start < 0 {
		return fmt.Errorf("window start %d is before 0", start)
	}
	if end < start {
		return fmt.Errorf("window end %d is before its start %d", end, start)
	}
	return nil
}

// appendKey appends k as inner encodes it, with room for the window's
// extra bytes after it. An inner serde that can say null is asked through
// Serialize, so a null key is seen (and refused) rather than appended as
// nothing; one that cannot appends in place when it can.
func appendKey[K any](dst []byte, inner Serde[K], k K, extra int, typ string) ([]byte, error) {
	if a, ok := inner.(Appender[K]); ok && !DecodesNull(inner) {
		if dst == nil {
			dst = make([]byte, 0, 16+extra)
		}
		out, err := a.AppendSerialize(dst, k)
		if err != nil {
			return nil, fmt.Errorf("encode %s: the key: %w", typ, err)
		}
		return out, nil
	}
	kb, err := inner.Serialize(k)
	if err != nil {
		return nil, fmt.Errorf("encode %s: the key: %w", typ, err)
	}
	if kb == nil {
		return nil, fmt.Errorf("encode %s: the key is null, which a windowed key cannot be", typ)
	}
	if dst == nil {
		dst = make([]byte, 0, len(kb)+extra)
	}
	return append(dst, kb...), nil
}
