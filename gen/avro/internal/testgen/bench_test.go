package testgen

import (
	"github.com/google/go-cmp/cmp"
	"testing"

	hamba "github.com/hamba/avro/v2"
)

// hambaFoo, hambaNode and hambaInterop are Interop as hamba/avro/v2 wants
// it for its fastest path: typed structs, the union as map[string]any.
type hambaFoo struct {
	Label string `avro:"label"`
}

type hambaNode struct {
	Label    string      `avro:"label"`
	Children []hambaNode `avro:"children"`
}

type hambaInterop struct {
	IntField                  int32               `avro:"intField"`
	LongField                 int64               `avro:"longField"`
	StringField               string              `avro:"stringField"`
	BoolField                 bool                `avro:"boolField"`
	FloatField                float32             `avro:"floatField"`
	DoubleField               float64             `avro:"doubleField"`
	BytesField                []byte              `avro:"bytesField"`
	NullField                 struct{}            `avro:"nullField"`
	ArrayField                []float64           `avro:"arrayField"`
	MapField                  map[string]hambaFoo `avro:"mapField"`
	UnionField                map[string]any      `avro:"unionField"`
	EnumField                 string              `avro:"enumField"`
	FixedField                [16]byte            `avro:"fixedField"`
	RecordField               hambaNode           `avro:"recordField"`
	TimeMillisField           int32               `avro:"timeMillisField"`
	TimeMicrosField           int64               `avro:"timeMicrosField"`
	TimestampMillisField      int64               `avro:"timestampMillisField"`
	TimestampMicrosField      int64               `avro:"timestampMicrosField"`
	LocalTimestampMillisField int64               `avro:"localTimestampMillisField"`
	LocalTimestampMicrosField int64               `avro:"localTimestampMicrosField"`
}

func toHambaNode(n Node) hambaNode {
	h := hambaNode{Label: n.Label}
	for _, c := range n.Children {
		h.Children = append(h.Children, toHambaNode(c))
	}
	return h
}

func toHamba(v *Interop) *hambaInterop {
	h := &hambaInterop{
		IntField: v.IntField, LongField: v.LongField, StringField: v.StringField, BoolField: v.BoolField,
		FloatField: v.FloatField, DoubleField: v.DoubleField, BytesField: v.BytesField, ArrayField: v.ArrayField,
		MapField: map[string]hambaFoo{}, EnumField: string(v.EnumField), FixedField: v.FixedField,
		RecordField: toHambaNode(v.RecordField), TimeMillisField: v.TimeMillisField, TimeMicrosField: v.TimeMicrosField,
		TimestampMillisField: v.TimestampMillisField, TimestampMicrosField: v.TimestampMicrosField,
		LocalTimestampMillisField: v.LocalTimestampMillisField, LocalTimestampMicrosField: v.LocalTimestampMicrosField,
	}
	for k, f := range v.MapField {
		h.MapField[k] = hambaFoo{f.Label}
	}
	switch u := v.UnionField.(type) {
	case InteropUnionFieldBoolean:
		h.UnionField = map[string]any{"boolean": u.Value}
	case InteropUnionFieldDouble:
		h.UnionField = map[string]any{"double": u.Value}
	case InteropUnionFieldArray:
		h.UnionField = map[string]any{"array": u.Value}
	}
	return h
}

// benchInterop is a fixed, moderately filled Interop value.
func benchInterop() *Interop {
	return &Interop{
		IntField: 12345, LongField: -9876543210, StringField: "the quick brown fox", BoolField: true,
		FloatField: 1.25, DoubleField: 3.14159, BytesField: []byte("some bytes here"),
		ArrayField: []float64{1, 2, 3, 4, 5},
		MapField:   map[string]Foo{"one": {"first"}, "two": {"second"}},
		UnionField: InteropUnionFieldArray{[][]byte{[]byte("ab"), []byte("cd")}},
		EnumField:  KindB, FixedField: MD5{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		RecordField:     Node{Label: "root", Children: []Node{{Label: "a"}, {Label: "b", Children: []Node{{Label: "c"}}}}},
		TimeMillisField: 1000, TimeMicrosField: 2000, TimestampMillisField: 3000, TimestampMicrosField: 4000,
		LocalTimestampMillisField: 5000, LocalTimestampMicrosField: 6000,
	}
}

// Benchmark results go to these, so that nothing is optimized away.
var (
	sinkBytes   []byte
	sinkSimple  Simple
	sinkInterop Interop
	sinkHamba   hambaInterop
)

func benchSimple() *Simple {
	return &Simple{ID: 1234567, Name: "simple record", Amount: 99.5, Count: 42, Active: true, Tags: []string{"kafka", "avro"}}
}

func mustSchema(b *testing.B, s string) hamba.Schema {
	sc, err := hamba.ParseWithCache(s, "", &hamba.SchemaCache{})
	if err != nil {
		b.Fatal(err)
	}
	return sc
}

func BenchmarkSimple(b *testing.B) {
	v := benchSimple()
	schema := mustSchema(b, SimpleAvroSchema)
	data, _ := v.AppendAvro(nil)
	b.Run("encode/kgen", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if sinkBytes, err = (SimpleAvroSerde{}).Serialize(*v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/hamba", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if sinkBytes, err = hamba.Marshal(schema, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/kgen", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if sinkSimple, err = (SimpleAvroSerde{}).Deserialize(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/hamba", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out Simple // a deserializer returns a new value each time
			if err := hamba.Unmarshal(schema, data, &out); err != nil {
				b.Fatal(err)
			}
			sinkSimple = out
		}
	})
}

func BenchmarkInterop(b *testing.B) {
	v := benchInterop()
	h := toHamba(v)
	schema := mustSchema(b, InteropAvroSchema)
	data, _ := v.AppendAvro(nil)
	b.Run("encode/kgen", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if sinkBytes, err = (InteropAvroSerde{}).Serialize(*v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/hamba", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if sinkBytes, err = hamba.Marshal(schema, h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/kgen", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if sinkInterop, err = (InteropAvroSerde{}).Deserialize(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/hamba", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out hambaInterop
			if err := hamba.Unmarshal(schema, data, &out); err != nil {
				b.Fatal(err)
			}
			sinkHamba = out
		}
	})
}

// TestBenchValues makes sure the benchmarks compare like with like: hamba
// reads the benchmark bytes back to the same value.
func TestBenchValues(t *testing.T) {
	v := benchInterop()
	data, err := v.AppendAvro(nil)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := hamba.Parse(InteropAvroSchema)
	if err != nil {
		t.Fatal(err)
	}
	var out hambaInterop
	if err := hamba.Unmarshal(schema, data, &out); err != nil {
		t.Fatal(err)
	}
	want := toHamba(v)
	want.UnionField = map[string]any{"array": []any{[]byte("ab"), []byte("cd")}}
	if d := cmp.Diff(want, &out, equal...); d != "" {
		t.Errorf("hamba reads a different value (-want +got):\n%s", d)
	}
}
