// Package serde turns typed keys and values into Kafka record bytes and back.
//
// A Serde is a pair of plain functions on a value type: no reflection, no
// registry lookups per record. The primitives here encode exactly as Apache
// Kafka's Java serializers do, so kgen applications interoperate with any
// other Kafka client; so do the serdes of windowed keys (TimeWindowed,
// SessionWindowed), which write Kafka Streams' bytes. Generated code supplies
// serdes for record types (JSON, Avro, Confluent wire format) that satisfy
// the same interfaces.
//
// # Nulls
//
// A record's key or value may be null (no bytes at all: a tombstone, or a
// producer that sent no key). A type that can say null is nilable: its
// deserializer implements NullDecoder and decodes nil bytes into the null of
// its type (Bytes to a nil slice, JSON of a pointer to a nil pointer,
// dsl.Nullable to a nil *V). The primitives (String, Int32, Int64, Float64)
// cannot say null, so a topology's source never calls them with nil bytes:
// it drops such a record and counts it (runtime/stream, "null-key" and
// "null-value" in the dropped-records counter), and a null never becomes ""
// or 0 nor a size error. Called directly with nil, String still returns ""
// and the fixed-width ones a *SizeError.
package serde

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Serializer encodes a value into the bytes of a Kafka record key or value.
type Serializer[T any] interface {
	Serialize(v T) ([]byte, error)
}

// Deserializer decodes the bytes of a Kafka record key or value. A nil slice
// is a null key or value (a tombstone); each deserializer says how it maps it.
type Deserializer[T any] interface {
	Deserialize(data []byte) (T, error)
}

// NullDecoder is implemented by a Deserializer that decodes a null (nil
// bytes) into the null of its type, so that a topology hands null keys and
// tombstones to its nodes instead of dropping them. A wrapper around another
// deserializer says what the wrapped one would.
type NullDecoder interface {
	// DecodesNull reports whether Deserialize(nil) gives the type's null.
	DecodesNull() bool
}

// DecodesNull reports whether d declares, by NullDecoder, that it decodes
// a null into the null of its type.
func DecodesNull(d any) bool {
	n, ok := d.(NullDecoder)
	return ok && n.DecodesNull()
}

// Serde is both halves for one type.
type Serde[T any] interface {
	Serializer[T]
	Deserializer[T]
}

// Appender is implemented by serializers that can write a value after bytes
// a caller already has, so a wrapper that prefixes the value (a timestamp,
// a length) makes one allocation instead of two. The primitives have it.
type Appender[T any] interface {
	// AppendSerialize appends the bytes Serialize would return to dst.
	AppendSerialize(dst []byte, v T) ([]byte, error)
}

// String encodes strings as their UTF-8 bytes, as Kafka's StringSerializer.
// A string cannot say null: a source drops a null it would be given (read
// with dsl.Nullable(String{}) to receive it as nil); called directly, it
// decodes a null to "".
type String struct{}

func (String) Serialize(v string) ([]byte, error)   { return []byte(v), nil }
func (String) Deserialize(b []byte) (string, error) { return string(b), nil }

func (String) AppendSerialize(dst []byte, v string) ([]byte, error) { return append(dst, v...), nil }

// Bytes passes byte slices through unchanged; a null stays nil, and an
// empty value is an empty, non-nil slice.
type Bytes struct{}

// DecodesNull is true: a null is a nil slice.
func (Bytes) DecodesNull() bool { return true }

func (Bytes) Serialize(v []byte) ([]byte, error)   { return v, nil }
func (Bytes) Deserialize(b []byte) ([]byte, error) { return b, nil }

func (Bytes) AppendSerialize(dst []byte, v []byte) ([]byte, error) { return append(dst, v...), nil }

// SizeError reports a fixed-width value whose bytes have the wrong length.
type SizeError struct {
	Type string
	Want int
	Got  int
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("decode %s: want %d bytes, got %d", e.Type, e.Want, e.Got)
}

// Int32 is a 4-byte big-endian two's complement integer (Kafka's IntegerSerializer).
type Int32 struct{}

func (Int32) Serialize(v int32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(make([]byte, 0, 4), uint32(v)), nil
}

func (Int32) AppendSerialize(dst []byte, v int32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(dst, uint32(v)), nil
}

func (Int32) Deserialize(b []byte) (int32, error) {
	if len(b) != 4 {
		return 0, &SizeError{"int32", 4, len(b)}
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// Int64 is an 8-byte big-endian two's complement integer (Kafka's LongSerializer).
type Int64 struct{}

func (Int64) Serialize(v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(v)), nil
}

func (Int64) AppendSerialize(dst []byte, v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(dst, uint64(v)), nil
}

func (Int64) Deserialize(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, &SizeError{"int64", 8, len(b)}
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// Float64 is an 8-byte big-endian IEEE 754 double (Kafka's DoubleSerializer).
type Float64 struct{}

func (Float64) Serialize(v float64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), math.Float64bits(v)), nil
}

func (Float64) AppendSerialize(dst []byte, v float64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(v)), nil
}

func (Float64) Deserialize(b []byte) (float64, error) {
	if len(b) != 8 {
		return 0, &SizeError{"float64", 8, len(b)}
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
}
