package stream

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A dead letter fits its limit whenever kgen's own headers do, keeps a
// prefix of the input's key and value and a prefix of its headers, and
// says in kgen.truncated exactly what it kept; one that fits whole is the
// input unchanged. Over random inputs and limits.
func TestDeadLetterTruncation(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	blob := func(n int) []byte {
		if n < 0 {
			return nil
		}
		return bytes.Repeat([]byte{'x'}, n)
	}
	for i := range 5000 {
		in := &kgo.Record{Topic: "in", Partition: rng.Int32N(8), Offset: rng.Int64N(1 << 40),
			Key: blob(rng.IntN(3000) - 10), Value: blob(rng.IntN(20000) - 10)}
		for range rng.IntN(4) {
			in.Headers = append(in.Headers, kgo.RecordHeader{Key: fmt.Sprint("h", rng.IntN(100)), Value: blob(rng.IntN(2000))})
		}
		cause := errors.New(strings.Repeat("e", rng.IntN(3000)))
		limit := 1500 + rng.IntN(25000)
		d := deadLetter("dlq", 4, limit, in, "node", cause)
		ctx := fmt.Sprintf("case %d: key %d, value %d, %d headers, error %d, limit %d", i, len(in.Key), len(in.Value), len(in.Headers), len(cause.Error()), limit)
		if size := recordSize(d); size > limit {
			t.Fatalf("%s: dead letter of %d bytes", ctx, size)
		}
		if in.Key != nil && d.Partition != KafkaPartition(in.Key, 4) {
			t.Fatalf("%s: partition %d, want the key's", ctx, d.Partition)
		}
		tr := ""
		var own []kgo.RecordHeader
		for _, h := range d.Headers {
			if h.Key == hdrTruncated {
				tr = string(h.Value)
			} else if !strings.HasPrefix(h.Key, "kgen.") {
				own = append(own, h)
			}
		}
		whole := recordSize(&kgo.Record{Key: in.Key, Value: in.Value, Headers: append(append([]kgo.RecordHeader(nil), in.Headers...), kgenHeaders(in, "node", cause.Error())...)}) <= limit
		if whole {
			if tr != "" || !bytes.Equal(d.Key, in.Key) || !bytes.Equal(d.Value, in.Value) || len(own) != len(in.Headers) {
				t.Fatalf("%s: fits whole, but was cut (%s)", ctx, tr)
			}
			continue
		}
		if !bytes.HasPrefix(in.Key, d.Key) || !bytes.HasPrefix(in.Value, d.Value) || (d.Key == nil) != (in.Key == nil || len(d.Key) == 0 && len(in.Key) > 0) {
			t.Fatalf("%s: key %d, value %d bytes: not prefixes of the input's", ctx, len(d.Key), len(d.Value))
		}
		want := fmt.Sprintf("key=%d/%d value=%d/%d headers=%d/%d", len(d.Key), len(in.Key), len(d.Value), len(in.Value), len(own), len(in.Headers))
		if tr != want {
			t.Fatalf("%s: kgen.truncated %q, want %q", ctx, tr, want)
		}
		for j, h := range own {
			if h.Key != in.Headers[j].Key {
				t.Fatalf("%s: header %d is %q, want the input's %q", ctx, j, h.Key, in.Headers[j].Key)
			}
		}
	}
}
