package serde_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/kgen-dev/kgen/runtime/serde"
)

// The byte layouts Apache Kafka's Java serializers produce.
func TestJavaCompatibleBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  func() ([]byte, error)
		want []byte
	}{
		{"int32 -2", func() ([]byte, error) { return serde.Int32{}.Serialize(-2) }, []byte{0xff, 0xff, 0xff, 0xfe}},
		{"int32 258", func() ([]byte, error) { return serde.Int32{}.Serialize(258) }, []byte{0, 0, 1, 2}},
		{"int64 1", func() ([]byte, error) { return serde.Int64{}.Serialize(1) }, []byte{0, 0, 0, 0, 0, 0, 0, 1}},
		{"int64 min", func() ([]byte, error) { return serde.Int64{}.Serialize(math.MinInt64) }, []byte{0x80, 0, 0, 0, 0, 0, 0, 0}},
		{"float64 1.5", func() ([]byte, error) { return serde.Float64{}.Serialize(1.5) }, []byte{0x3f, 0xf8, 0, 0, 0, 0, 0, 0}},
		{"string", func() ([]byte, error) { return serde.String{}.Serialize("héllo") }, []byte("héllo")},
	} {
		got, err := tc.got()
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: got %x, %v; want %x", tc.name, got, err, tc.want)
		}
	}
}

func roundTrip[T comparable](t *testing.T, s serde.Serde[T], v T) {
	t.Helper()
	b, err := s.Serialize(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Deserialize(b)
	if err != nil || got != v {
		t.Fatalf("round trip of %v: got %v, %v", v, got, err)
	}
}

func TestRoundTrips(t *testing.T) {
	roundTrip[int32](t, serde.Int32{}, math.MinInt32)
	roundTrip[int32](t, serde.Int32{}, 7)
	roundTrip[int64](t, serde.Int64{}, math.MaxInt64)
	roundTrip[float64](t, serde.Float64{}, -0.25)
	roundTrip(t, serde.String{}, "")
	roundTrip(t, serde.String{}, "日本")
	type rec struct {
		A string
		B int
	}
	roundTrip[rec](t, serde.JSON[rec]{}, rec{"x", 3})
}

func TestWrongSizesAreErrors(t *testing.T) {
	var se *serde.SizeError
	if _, err := (serde.Int64{}).Deserialize([]byte{1, 2, 3}); !errors.As(err, &se) || se.Want != 8 || se.Got != 3 {
		t.Errorf("Int64 of 3 bytes: %v, want a SizeError 8/3", err)
	}
	if _, err := (serde.Int32{}).Deserialize(nil); !errors.As(err, &se) {
		t.Errorf("Int32 of null: %v, want a SizeError", err)
	}
	if _, err := (serde.Float64{}).Deserialize(make([]byte, 9)); err == nil {
		t.Error("Float64 of 9 bytes: no error")
	}
	if _, err := (serde.JSON[map[string]int]{}).Deserialize([]byte(`{"a":`)); err == nil {
		t.Error("JSON of truncated input: no error")
	}
}

// Decoders of untrusted bytes must never panic, and a success must
// re-encode to the same bytes.
func FuzzDecoders(f *testing.F) {
	for _, seed := range [][]byte{nil, {}, {1, 2, 3, 4}, make([]byte, 8), []byte(`{"A":"x"}`), []byte("\xff\xfe")} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := (serde.Int32{}).Deserialize(b); err == nil {
			if out, _ := (serde.Int32{}).Serialize(v); !bytes.Equal(out, b) {
				t.Fatalf("int32 %x -> %d -> %x", b, v, out)
			}
		}
		if v, err := (serde.Int64{}).Deserialize(b); err == nil {
			if out, _ := (serde.Int64{}).Serialize(v); !bytes.Equal(out, b) {
				t.Fatalf("int64 %x -> %d -> %x", b, v, out)
			}
		}
		if v, err := (serde.Float64{}).Deserialize(b); err == nil {
			if out, _ := (serde.Float64{}).Serialize(v); !bytes.Equal(out, b) {
				t.Fatalf("float64 %x -> %v -> %x", b, v, out)
			}
		}
		type rec struct {
			A string
			B []int
		}
		(serde.JSON[rec]{}).Deserialize(b)
		(serde.String{}).Deserialize(b)
	})
}

// Each primitive's AppendSerialize appends exactly what Serialize returns.
func TestAppendSerializeIsSerialize(t *testing.T) {
	prefix := []byte("pre")
	check := func(name string, ser func() ([]byte, error), app func([]byte) ([]byte, error)) {
		t.Helper()
		want, err := ser()
		if err != nil {
			t.Fatal(err)
		}
		got, err := app(append([]byte(nil), prefix...))
		if err != nil || string(got) != string(prefix)+string(want) {
			t.Errorf("%s: AppendSerialize gave %x (%v), want %x after the prefix", name, got, err, want)
		}
	}
	check("string", func() ([]byte, error) { return serde.String{}.Serialize("héllo") }, func(d []byte) ([]byte, error) { return serde.String{}.AppendSerialize(d, "héllo") })
	check("bytes", func() ([]byte, error) { return serde.Bytes{}.Serialize([]byte{1, 2}) }, func(d []byte) ([]byte, error) { return serde.Bytes{}.AppendSerialize(d, []byte{1, 2}) })
	check("int32", func() ([]byte, error) { return serde.Int32{}.Serialize(-7) }, func(d []byte) ([]byte, error) { return serde.Int32{}.AppendSerialize(d, -7) })
	check("int64", func() ([]byte, error) { return serde.Int64{}.Serialize(-1 << 40) }, func(d []byte) ([]byte, error) { return serde.Int64{}.AppendSerialize(d, -1<<40) })
	check("float64", func() ([]byte, error) { return serde.Float64{}.Serialize(2.5) }, func(d []byte) ([]byte, error) { return serde.Float64{}.AppendSerialize(d, 2.5) })
}
