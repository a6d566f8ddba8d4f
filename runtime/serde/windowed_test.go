package serde_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The layouts of Kafka Streams' windowed serializers, written out by hand
// (the oracle's _serdes.json checks the same against Kafka's own classes).
func TestWindowedBytes(t *testing.T) {
	tw := serde.TimeWindowed[string](serde.String{}, 10*time.Millisecond)
	sw := serde.SessionWindowed[string](serde.String{})
	twl := serde.TimeWindowed[int64](serde.Int64{}, 100*time.Millisecond)
	for _, tc := range []struct {
		name string
		s    serde.Serde[serde.Windowed[string]]
		w    serde.Windowed[string]
		want string
	}{
		// key ‖ start
		{"time a@0", tw, serde.Windowed[string]{Key: "a", Start: 0, End: 10}, "61" + "0000000000000000"},
		{"time empty key", tw, serde.Windowed[string]{Key: "", Start: 5, End: 15}, "0000000000000005"},
		// key ‖ end ‖ start
		{"session a@5/7", sw, serde.Windowed[string]{Key: "a", Start: 5, End: 7}, "61" + "0000000000000007" + "0000000000000005"},
		{"session one record", sw, serde.Windowed[string]{Key: "ab", Start: 3, End: 3}, "6162" + "0000000000000003" + "0000000000000003"},
	} {
		got, err := tc.s.Serialize(tc.w)
		if err != nil || hex.EncodeToString(got) != tc.want {
			t.Errorf("%s: serialize gave %x, %v; want %s", tc.name, got, err, tc.want)
			continue
		}
		back, err := tc.s.Deserialize(got)
		if err != nil || back != tc.w {
			t.Errorf("%s: deserialize gave %v, %v; want %v", tc.name, back, err, tc.w)
		}
	}
	got, err := twl.Serialize(serde.Windowed[int64]{Key: 7, Start: 100, End: 200})
	if want := "0000000000000007" + "0000000000000064"; err != nil || hex.EncodeToString(got) != want {
		t.Errorf("long key: got %x, %v; want %s", got, err, want)
	}
}

// A time window's end is not on the wire: it is start+size, capped at the
// largest int64 (Kafka Streams caps it too), and the size is cut to whole
// milliseconds.
func TestTimeWindowedEnd(t *testing.T) {
	b := unhex(t, "61"+"7ffffffffffffffe")
	w, err := serde.TimeWindowed[string](serde.String{}, 10*time.Millisecond).Deserialize(b)
	if err != nil || w.Start != math.MaxInt64-1 || w.End != math.MaxInt64 {
		t.Errorf("start near the largest int64: got %v, %v; want the end capped at %d", w, err, int64(math.MaxInt64))
	}
	w, err = serde.TimeWindowed[string](serde.String{}, 1500*time.Microsecond).Deserialize(unhex(t, "61"+"0000000000000064"))
	if err != nil || w.End != 101 {
		t.Errorf("size 1.5ms: got %v, %v; want end 101", w, err)
	}
	// The end a caller sets is not written: reading gives start+size.
	s := serde.TimeWindowed[string](serde.String{}, time.Minute)
	b, err = s.Serialize(serde.Windowed[string]{Key: "k", Start: 60000, End: 1})
	if err != nil {
		t.Fatal(err)
	}
	if w, err := s.Deserialize(b); err != nil || w.End != 120000 {
		t.Errorf("end from the size: got %v, %v; want end 120000", w, err)
	}
}

func TestWindowedErrors(t *testing.T) {
	tw := serde.TimeWindowed[string](serde.String{}, time.Second)
	sw := serde.SessionWindowed[string](serde.String{})
	var short *serde.ShortError
	for _, tc := range []struct {
		name string
		s    serde.Serde[serde.Windowed[string]]
		b    []byte
		min  int
	}{
		{"time, nil", tw, nil, 8},
		{"time, empty", tw, []byte{}, 8},
		{"time, 3 bytes", tw, []byte{1, 2, 3}, 8},
		{"time, 7 bytes", tw, make([]byte, 7), 8},
		{"session, nil", sw, nil, 16},
		{"session, 10 bytes", sw, make([]byte, 10), 16},
		{"session, 15 bytes", sw, make([]byte, 15), 16},
	} {
		_, err := tc.s.Deserialize(tc.b)
		if !errors.As(err, &short) || short.Min != tc.min || short.Got != len(tc.b) {
			t.Errorf("%s: got %v; want a ShortError %d/%d", tc.name, err, tc.min, len(tc.b))
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("want at least %d bytes", tc.min)) || !strings.Contains(msg, "windowed key") {
			t.Errorf("%s: message %q does not say what is wrong", tc.name, msg)
		}
	}

	for _, tc := range []struct {
		name, want string
		err        func() error
	}{
		{"time, negative start", "window start -1 is before 0", func() error {
			_, err := tw.Deserialize(unhex(t, "61"+"ffffffffffffffff"))
			return err
		}},
		{"time, no size", "window size 0ms is not positive", func() error {
			_, err := serde.TimeWindowed[string](serde.String{}, 0).Deserialize(unhex(t, "61"+"0000000000000001"))
			return err
		}},
		{"time, sub-millisecond size", "window size 0ms is not positive", func() error {
			_, err := serde.TimeWindowed[string](serde.String{}, time.Microsecond).Deserialize(unhex(t, "61"+"0000000000000001"))
			return err
		}},
		{"time, serialize negative start", "window start -5 is before 0", func() error {
			_, err := tw.Serialize(serde.Windowed[string]{Key: "a", Start: -5, End: 995})
			return err
		}},
		{"session, end before start", "window end 5 is before its start 7", func() error {
			_, err := sw.Deserialize(unhex(t, "61"+"0000000000000005"+"0000000000000007"))
			return err
		}},
		{"session, negative start", "window start -1 is before 0", func() error {
			_, err := sw.Deserialize(unhex(t, "61"+"ffffffffffffffff"+"ffffffffffffffff"))
			return err
		}},
		{"session, serialize end before start", "window end 1 is before its start 2", func() error {
			_, err := sw.Serialize(serde.Windowed[string]{Key: "a", Start: 2, End: 1})
			return err
		}},
		{"time, bad inner key", "decode time-windowed key: the key: decode int64: want 8 bytes, got 3", func() error {
			_, err := serde.TimeWindowed[int64](serde.Int64{}, time.Second).Deserialize(unhex(t, "010203"+"0000000000000001"))
			return err
		}},
		{"session, bad inner key", "decode session-windowed key: the key: decode int64: want 8 bytes, got 1", func() error {
			_, err := serde.SessionWindowed[int64](serde.Int64{}).Deserialize(unhex(t, "01"+"0000000000000001"+"0000000000000001"))
			return err
		}},
		{"time, null key", "the key is null", func() error {
			_, err := serde.TimeWindowed[[]byte](serde.Bytes{}, time.Second).Serialize(serde.Windowed[[]byte]{Key: nil, Start: 1})
			return err
		}},
		{"session, null key", "the key is null", func() error {
			_, err := serde.SessionWindowed[[]byte](serde.Bytes{}).Serialize(serde.Windowed[[]byte]{Key: nil, Start: 1, End: 1})
			return err
		}},
	} {
		err := tc.err()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v; want an error saying %q", tc.name, err, tc.want)
		}
	}
	// An inner deserializer's error stays reachable.
	_, err := serde.TimeWindowed[int64](serde.Int64{}, time.Second).Deserialize(unhex(t, "01"+"0000000000000001"))
	var size *serde.SizeError
	if !errors.As(err, &size) {
		t.Errorf("inner error: got %v; want it to wrap a SizeError", err)
	}
	// An empty, non-null key is a key.
	b, err := serde.SessionWindowed[[]byte](serde.Bytes{}).Serialize(serde.Windowed[[]byte]{Key: []byte{}, Start: 1, End: 2})
	if err != nil || len(b) != 16 {
		t.Errorf("empty key: got %x, %v; want 16 bytes", b, err)
	}
}

// The windowed serdes append after a prefix, as the primitives do, whether
// the inner serde appends or not.
func TestWindowedAppendSerialize(t *testing.T) {
	w := serde.Windowed[string]{Key: "héllo", Start: 1 << 40, End: 1<<40 + 5}
	for name, s := range map[string]serde.Serde[serde.Windowed[string]]{
		"time":    serde.TimeWindowed[string](serde.String{}, 5*time.Millisecond),
		"session": serde.SessionWindowed[string](serde.String{}),
	} {
		want, err := s.Serialize(w)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.(serde.Appender[serde.Windowed[string]]).AppendSerialize([]byte("pre"), w)
		if err != nil || string(got) != "pre"+string(want) {
			t.Errorf("%s: got %x, %v; want %x after the prefix", name, got, err, want)
		}
	}
	wb := serde.Windowed[[]byte]{Key: []byte{1, 2}, Start: 3, End: 4}
	s := serde.SessionWindowed[[]byte](serde.Bytes{})
	got, err := s.(serde.Appender[serde.Windowed[[]byte]]).AppendSerialize([]byte{9}, wb)
	if want := "09" + "0102" + "0000000000000004" + "0000000000000003"; err != nil || hex.EncodeToString(got) != want {
		t.Errorf("bytes key: got %x, %v; want %s", got, err, want)
	}
}

// Decoding untrusted bytes never panics, and a success re-encodes to the
// same bytes.
func FuzzWindowedDecoders(f *testing.F) {
	for _, seed := range [][]byte{nil, {}, make([]byte, 8), make([]byte, 16), []byte("a\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x05")} {
		f.Add(seed)
	}
	tw := serde.TimeWindowed[string](serde.String{}, time.Hour)
	sw := serde.SessionWindowed[string](serde.String{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if w, err := tw.Deserialize(b); err == nil {
			if w.End <= w.Start && w.Start != math.MaxInt64 {
				t.Fatalf("time window %v ends before it starts", w)
			}
			if out, err := tw.Serialize(w); err != nil || !bytes.Equal(out, b) {
				t.Fatalf("time-windowed %x -> %v -> %x, %v", b, w, out, err)
			}
		}
		if w, err := sw.Deserialize(b); err == nil {
			if out, err := sw.Serialize(w); err != nil || !bytes.Equal(out, b) {
				t.Fatalf("session-windowed %x -> %v -> %x, %v", b, w, out, err)
			}
		}
	})
}

func ExampleTimeWindowed() {
	// The key of a count over one-minute tumbling windows, as Kafka Streams
	// writes it: the key, then the window's start; the end is start+size.
	s := serde.TimeWindowed[string](serde.String{}, time.Minute)
	b, _ := s.Serialize(serde.Windowed[string]{Key: "alice", Start: 120000, End: 180000})
	fmt.Printf("%x\n", b)
	w, _ := s.Deserialize(b)
	fmt.Println(w, w.StartTime().UTC().Format(time.TimeOnly))
	// Output:
	// 616c696365000000000001d4c0
	// [alice@120000/180000] 00:02:00
}

func ExampleSessionWindowed() {
	// A session's key carries both ends: the key, the end, then the start.
	s := serde.SessionWindowed[string](serde.String{})
	b, _ := s.Serialize(serde.Windowed[string]{Key: "bob", Start: 1000, End: 4000})
	fmt.Printf("%x\n", b)
	w, _ := s.Deserialize(b)
	fmt.Println(w)
	// Output:
	// 626f620000000000000fa000000000000003e8
	// [bob@1000/4000]
}
