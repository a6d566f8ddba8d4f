package faults

import (
	"encoding/binary"
	"fmt"
)

// An input record's key is the key's name; its value is 16 bytes: the
// record's sequence number within its key (1, 2, ... in produce order) and
// the number to aggregate, both big-endian int64.
const inputSize = 16

// Input is the value of an input record.
type Input struct {
	Seq   int64
	Value int64
}

// AppendInput appends the encoding of in to b.
func AppendInput(b []byte, in Input) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(in.Seq))
	return binary.BigEndian.AppendUint64(b, uint64(in.Value))
}

// DecodeInput decodes an input record's value.
func DecodeInput(b []byte) (Input, error) {
	if len(b) != inputSize {
		return Input{}, fmt.Errorf("decode input: %d bytes, want %d", len(b), inputSize)
	}
	return Input{
		Seq:   int64(binary.BigEndian.Uint64(b)),
		Value: int64(binary.BigEndian.Uint64(b[8:])),
	}, nil
}

// Aggregate is the running aggregate of one key.
type Aggregate struct {
	Count, Sum, Min, Max int64
}

// Add returns a with v counted once more.
func (a Aggregate) Add(v int64) Aggregate {
	if a.Count == 0 {
		return Aggregate{Count: 1, Sum: v, Min: v, Max: v}
	}
	a.Count++
	a.Sum += v
	a.Min = min(a.Min, v)
	a.Max = max(a.Max, v)
	return a
}

const aggregateSize = 32

// aggregateSerde stores an Aggregate as four big-endian int64.
type aggregateSerde struct{}

func (aggregateSerde) Serialize(a Aggregate) ([]byte, error) {
	b := make([]byte, 0, aggregateSize)
	return appendAggregate(b, a), nil
}

func (aggregateSerde) Deserialize(b []byte) (Aggregate, error) {
	if len(b) != aggregateSize {
		return Aggregate{}, fmt.Errorf("decode aggregate: %d bytes, want %d", len(b), aggregateSize)
	}
	return readAggregate(b), nil
}

func appendAggregate(b []byte, a Aggregate) []byte {
	for _, v := range [...]int64{a.Count, a.Sum, a.Min, a.Max} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func readAggregate(b []byte) Aggregate {
	return Aggregate{
		Count: int64(binary.BigEndian.Uint64(b)),
		Sum:   int64(binary.BigEndian.Uint64(b[8:])),
		Min:   int64(binary.BigEndian.Uint64(b[16:])),
		Max:   int64(binary.BigEndian.Uint64(b[24:])),
	}
}

// Output is the value of an output record: the sequence number of the input
// record that produced it, the key's aggregate after counting that input,
// and where the input was read from. It is encoded as 56 bytes: Seq, the
// four aggregate fields, Partition and Offset, each a big-endian int64.
type Output struct {
	Seq int64
	Aggregate
	Partition int32 // of the input record
	Offset    int64 // of the input record
}

const outputSize = 56

// AppendOutput appends the encoding of o to b.
func AppendOutput(b []byte, o Output) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(o.Seq))
	b = appendAggregate(b, o.Aggregate)
	b = binary.BigEndian.AppendUint64(b, uint64(o.Partition))
	return binary.BigEndian.AppendUint64(b, uint64(o.Offset))
}

// DecodeOutput decodes an output record's value.
func DecodeOutput(b []byte) (Output, error) {
	if len(b) != outputSize {
		return Output{}, fmt.Errorf("decode output: %d bytes, want %d", len(b), outputSize)
	}
	return Output{
		Seq:       int64(binary.BigEndian.Uint64(b)),
		Aggregate: readAggregate(b[8:]),
		Partition: int32(binary.BigEndian.Uint64(b[40:])),
		Offset:    int64(binary.BigEndian.Uint64(b[48:])),
	}, nil
}

// outputSerde is the sink's value serde.
type outputSerde struct{}

func (outputSerde) Serialize(o Output) ([]byte, error) {
	return AppendOutput(make([]byte, 0, outputSize), o), nil
}

func (outputSerde) Deserialize(b []byte) (Output, error) { return DecodeOutput(b) }
