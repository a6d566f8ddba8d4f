package testgen

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/serde/avro"
)

// interopSeeds are encodings of random Interop values and of hand-made
// hostile inputs.
func interopSeeds(t testing.TB) [][]byte {
	u := universe(t)
	g := &valueGen{r: rand.New(rand.NewPCG(7, 7))}
	var seeds [][]byte
	for range 8 {
		var v Interop
		g.fill(u.Types["org.apache.avro.Interop"], reflect.ValueOf(&v).Elem(), 0)
		b, err := v.AppendAvro(nil)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b, b[:len(b)/2])
	}
	seeds = append(seeds,
		nil,
		[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},                            // varint too long
		[]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0x0f}, // huge bytes length
	)
	return seeds
}

// FuzzInteropDecode feeds arbitrary bytes to the generated decoder of the
// Interop record: it must return an error or a value that re-encodes and
// decodes to itself, never panic, and never allocate far beyond the input.
func FuzzInteropDecode(f *testing.F) {
	for _, s := range interopSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var v Interop
		rest, err := v.DecodeAvro(data)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20+256*uint64(len(data)) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(data), grew)
		}
		if err != nil {
			var ae *avro.Error
			if !errors.As(err, &ae) || ae.Op != "decode" {
				t.Fatalf("error %v is not an *avro.Error of a decode", err)
			}
			return
		}
		enc, err := v.AppendAvro(nil)
		if err != nil {
			t.Fatalf("re-encode of a decoded value: %v", err)
		}
		if used := data[:len(data)-len(rest)]; len(enc) > len(used) {
			t.Fatalf("re-encoding is longer (%d) than the input it came from (%d)", len(enc), len(used))
		}
		var w Interop
		if _, err := w.DecodeAvro(enc); err != nil {
			t.Fatalf("decode of re-encoded value: %v", err)
		}
		again, _ := w.AppendAvro(nil)
		if !bytes.Equal(enc, again) {
			t.Fatalf("not a fixed point:\n%x\n%x", enc, again)
		}
		// NaN equals NaN here, in both widths: the bytes already matched.
		nan64 := cmp.Comparer(func(a, b float64) bool { return a == b || a != a && b != b })
		nan32 := cmp.Comparer(func(a, b float32) bool { return a == b || a != a && b != b })
		if d := cmp.Diff(v, w, append(equal, nan64, nan32)...); d != "" {
			t.Fatalf("round trip differs (-first +second):\n%s", d)
		}
	})
}

// TestHostileInput checks the hard bounds on lengths, counts and depth.
func TestHostileInput(t *testing.T) {
	long := func(v int64) []byte { return avro.AppendLong(nil, v) }
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	// a Node is label (string) and children (array of Node)
	deep := []byte{}
	for range avro.MaxDepth + 10 {
		deep = append(deep, 0, 2) // label "", one child follows
	}
	tests := []struct {
		name string
		data []byte
		node bool
		want string
	}{
		{"short", []byte{4, 'a'}, true, "label: length 2 exceeds the 1 bytes left"},
		{"negative length", long(-3), true, "label: negative length -3"},
		{"too long", cat(long(int64(avro.MaxBytesLen)+1), []byte("x")), true, "exceeds avro.MaxBytesLen"},
		{"block count beyond input", cat(long(0), long(1000)), true, "children: block of 1000 items exceeds the 0 bytes left"},
		{"too many items", cat(long(0), long(int64(avro.MaxItems)+1)), true, "items exceed avro.MaxItems"},
		{"negative count with size beyond input", cat(long(0), long(-2), long(50)), true, "block size 50 exceeds"},
		{"deep recursion", deep, true, "deeper than avro.MaxDepth"},
		{"varint overflow", cat([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}), true, "varint overflows"},
		{"bad union index", cat(make([]byte, 4), make([]byte, 4), make([]byte, 8), make([]byte, 3), long(7)), false, "unionField: union index 7 out of range [0,3)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.node {
				var n Node
				_, err = n.DecodeAvro(tc.data)
			} else {
				var v Interop
				_, err = v.DecodeAvro(tc.data)
			}
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestEncodeErrors checks that invalid Go values are refused with a path.
func TestEncodeErrors(t *testing.T) {
	v := Interop{EnumField: "D", UnionField: InteropUnionFieldBoolean{true}}
	_, err := v.AppendAvro(nil)
	if want := `encode avro org.apache.avro.Interop: enumField: "D" is not a symbol of org.apache.avro.Kind`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	v = Interop{EnumField: KindA}
	_, err = v.AppendAvro(nil)
	if !errors.Is(err, avro.ErrNilUnion) {
		t.Errorf("nil union without null branch: got %v", err)
	}
	n := Node{Label: "x", Children: []Node{{Label: "y", Children: []Node{{}}}}}
	if _, err := n.AppendAvro(nil); err != nil {
		t.Fatal(err)
	}
	// a pointer cycle cannot be encoded forever
	c := &Customer{}
	o := Order{Customer: *c, MaybeLines: &[]Line{}, Choice: OrderChoiceBoolean{}, Status: StatusPaid}
	o.Payment = &Card{}
	if _, err := o.AppendAvro(nil); err != nil {
		t.Fatal(err)
	}
	o.Total = bigRat("1.005")
	if _, err := o.AppendAvro(nil); err == nil || !bytes.Contains([]byte(err.Error()), []byte("total: decimal 201/200 has more than 2 fractional digits")) {
		t.Errorf("inexact decimal: got %v", err)
	}
}

// TestSerdes checks the generated serde types and the Confluent framing.
func TestSerdes(t *testing.T) {
	v := Simple{ID: 7, Name: "seven", Amount: 7.5, Count: -7, Active: true, Tags: []string{"a", "b"}}
	b, err := SimpleAvroSerde{}.Serialize(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SimpleAvroSerde{}.Deserialize(b)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("plain round trip: %+v, %v", got, err)
	}
	if _, err := (SimpleAvroSerde{}).Deserialize(append(b, 0)); !errors.Is(err, avro.ErrTrailing) {
		t.Errorf("trailing byte: got %v", err)
	}
	cs := SimpleConfluentSerde{SchemaID: 42}
	cb, err := cs.Serialize(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cb[:5], []byte{0, 0, 0, 0, 42}) || !bytes.Equal(cb[5:], b) {
		t.Fatalf("confluent bytes %x", cb)
	}
	if got, err := cs.Deserialize(cb); err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("confluent round trip: %+v, %v", got, err)
	}
	for _, tc := range []struct {
		data []byte
		want string
	}{
		{cb[:3], "3 bytes, shorter than the 5-byte header"},
		{append([]byte{1}, cb[1:]...), "magic byte 0x01, want 0x00"},
		{append([]byte{0, 0, 0, 0, 43}, cb[5:]...), "schema id 43, want 42"},
	} {
		if _, err := cs.Deserialize(tc.data); err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%x: got %v, want %q", tc.data, err, tc.want)
		}
	}
}

// The generated serdes satisfy the runtime's contract.
var (
	_ serde.Serde[Order]   = OrderAvroSerde{}
	_ serde.Serde[Order]   = OrderConfluentSerde{}
	_ serde.Serde[Interop] = InteropAvroSerde{}
	_ serde.Serde[Simple]  = SimpleConfluentSerde{}
)
