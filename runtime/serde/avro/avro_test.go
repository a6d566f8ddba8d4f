package avro

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestLong(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		wire []byte
	}{
		{0, []byte{0x00}}, {-1, []byte{0x01}}, {1, []byte{0x02}}, {-64, []byte{0x7f}}, {64, []byte{0x80, 0x01}},
		{math.MaxInt64, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{math.MinInt64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
	} {
		if got := AppendLong(nil, tc.v); !bytes.Equal(got, tc.wire) {
			t.Errorf("AppendLong(%d) = %x, want %x", tc.v, got, tc.wire)
		}
		got, rest, err := ReadLong(append(tc.wire, 9))
		if err != nil || got != tc.v || !bytes.Equal(rest, []byte{9}) {
			t.Errorf("ReadLong(%x) = %d, %x, %v", tc.wire, got, rest, err)
		}
	}
	for _, bad := range [][]byte{
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, // bit 64
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
	} {
		if _, _, err := ReadLong(bad); !errors.Is(err, ErrOverflow) {
			t.Errorf("ReadLong(%x): %v, want overflow", bad, err)
		}
	}
	if _, _, err := ReadLong([]byte{0x80}); !errors.Is(err, ErrShort) {
		t.Errorf("ReadLong(80): %v", err)
	}
}

func TestInt(t *testing.T) {
	for _, v := range []int32{0, 1, -1, math.MaxInt32, math.MinInt32} {
		got, _, err := ReadInt(AppendInt(nil, v))
		if err != nil || got != v {
			t.Errorf("int %d: %d, %v", v, got, err)
		}
	}
	if _, _, err := ReadInt(AppendLong(nil, math.MaxInt32+1)); !errors.Is(err, ErrOverflow) {
		t.Errorf("int beyond int32: %v", err)
	}
}

func TestDecimal(t *testing.T) {
	for _, tc := range []struct {
		unscaled int64
		wire     []byte
	}{
		{0, []byte{0}}, {1, []byte{1}}, {-1, []byte{0xff}}, {127, []byte{0x7f}}, {128, []byte{0, 0x80}},
		{-128, []byte{0x80}}, {-129, []byte{0xff, 0x7f}}, {256, []byte{1, 0}},
	} {
		r := new(big.Rat).SetFrac64(tc.unscaled, 100)
		b, err := AppendDecimal(nil, r, 10, 2)
		if want := append(AppendLong(nil, int64(len(tc.wire))), tc.wire...); err != nil || !bytes.Equal(b, want) {
			t.Errorf("AppendDecimal(%s) = %x, %v, want %x", r.FloatString(2), b, err, want)
		}
		got, _, err := ReadDecimal(b, 2)
		if err != nil || got.Cmp(r) != 0 {
			t.Errorf("ReadDecimal(%x) = %v, %v", b, got, err)
		}
		f, err := AppendFixedDecimal(nil, r, 10, 2, 4)
		if err != nil || len(f) != 4 {
			t.Fatalf("AppendFixedDecimal: %x, %v", f, err)
		}
		if got, _, err := ReadFixedDecimal(f, 2, 4); err != nil || got.Cmp(r) != 0 {
			t.Errorf("fixed %s: %x read as %v, %v", r.FloatString(2), f, got, err)
		}
	}
	if _, err := AppendDecimal(nil, big.NewRat(1, 3), 10, 2); err == nil {
		t.Error("1/3 encoded with scale 2")
	}
	if _, err := AppendDecimal(nil, big.NewRat(123456, 1), 5, 0); err == nil || !strings.Contains(err.Error(), "precision 5") {
		t.Errorf("precision: %v", err)
	}
	if _, err := AppendFixedDecimal(nil, big.NewRat(70000, 1), 9, 0, 2); err == nil {
		t.Error("70000 fits in 2 bytes?")
	}
}

func TestDate(t *testing.T) {
	for _, tc := range []struct {
		t    time.Time
		days int32
	}{
		{time.Date(1970, 1, 1, 23, 0, 0, 0, time.UTC), 0},
		{time.Date(1969, 12, 31, 12, 0, 0, 0, time.UTC), -1},
		{time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), 19782},
	} {
		b, err := AppendDate(nil, tc.t)
		if err != nil || !bytes.Equal(b, AppendInt(nil, tc.days)) {
			t.Errorf("AppendDate(%v) = %x, %v, want day %d", tc.t, b, err, tc.days)
		}
	}
	got, _, _ := ReadDate(AppendInt(nil, 19782))
	if !got.Equal(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)) || got.Location() != time.UTC {
		t.Errorf("ReadDate = %v", got)
	}
}

func TestBlockCount(t *testing.T) {
	in := append(AppendLong(AppendLong(nil, -2), 3), 1, 2, 3)
	n, rest, err := ReadBlockCount(in, 0, 1)
	if err != nil || n != 2 || len(rest) != 3 {
		t.Errorf("negative count: %d, %x, %v", n, rest, err)
	}
	if _, _, err := ReadBlockCount(AppendLong(nil, math.MinInt64), 0, 0); err == nil {
		t.Error("MinInt64 count accepted")
	}
	if _, _, err := ReadBlockCount(AppendLong(nil, 10), MaxItems-5, 0); err == nil {
		t.Error("MaxItems not enforced over blocks")
	}
	if _, _, err := ReadBlockCount(append(AppendLong(nil, 3), 0, 0), 0, 1); !errors.Is(err, ErrShort) {
		t.Errorf("count beyond input: %v", err)
	}
}

func TestReadBool(t *testing.T) {
	if _, _, err := ReadBool([]byte{2}); err == nil {
		t.Error("boolean byte 2 accepted")
	}
}

func TestErrorPath(t *testing.T) {
	err := Decoding(Field(Index(Field(Key(ErrShort, "k"), "label"), 3), "children"), "x.Node")
	if want := `decode avro x.Node: children[3].label["k"]: unexpected end of input`; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	if !errors.Is(err, ErrShort) {
		t.Error("cause lost")
	}
}

func TestConfluent(t *testing.T) {
	b := AppendConfluentHeader([]byte{}, 0x01020304)
	if !bytes.Equal(b, []byte{0, 1, 2, 3, 4}) {
		t.Fatalf("header %x", b)
	}
	id, payload, err := ParseConfluentHeader(append(b, 9))
	if err != nil || id != 0x01020304 || !bytes.Equal(payload, []byte{9}) {
		t.Errorf("parse: %d %x %v", id, payload, err)
	}
	if _, _, err := ParseConfluentHeader([]byte{0, 1}); err == nil || !strings.Contains(err.Error(), "2 bytes, shorter than the 5-byte header") {
		t.Errorf("short: %v", err)
	}
	if _, _, err := ParseConfluentHeader([]byte{7, 0, 0, 0, 1}); err == nil || !strings.Contains(err.Error(), "magic byte 0x07") {
		t.Errorf("magic: %v", err)
	}
}

// FuzzLong checks that whatever ReadLong accepts re-encodes to the bytes it read.
func FuzzLong(f *testing.F) {
	f.Add([]byte{0x80, 0x01})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, rest, err := ReadLong(b)
		if err != nil {
			return
		}
		used := b[:len(b)-len(rest)]
		if enc := AppendLong(nil, v); !bytes.Equal(enc, used) && used[len(used)-1] != 0 {
			t.Fatalf("%x read as %d encodes as %x", used, v, enc)
		}
	})
}
