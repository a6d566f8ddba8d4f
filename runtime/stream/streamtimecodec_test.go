package stream

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

var timesCmp = cmp.AllowUnexported(committedTimes{}, opTime{}, opKey{})

func TestTimesEncodingRoundTrip(t *testing.T) {
	const now = 1_764_662_400_000 // 2025-12-02, in ms
	cases := []struct {
		name      string
		partition int64
		ops       []opTime
	}{
		{name: "partition time only", partition: now},
		{name: "no partition time, an observed one", partition: -1, ops: []opTime{{opKey{"window", ""}, 5}}},
		{name: "behind and ahead of the partition time", partition: now, ops: []opTime{
			{opKey{"join", "left"}, now - 60_000}, {opKey{"join", "right"}, now + 1}, {opKey{"wïndow ⏱", "x\x00y"}, 0},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			meta, n := encodeTimes(c.partition, c.ops, offsetMetadataMax)
			if n != len(c.ops) {
				t.Errorf("kept %d observed times, want all %d", n, len(c.ops))
			}
			if !strings.HasPrefix(meta, timesPrefix) {
				t.Errorf("metadata %q lacks the prefix %q", meta, timesPrefix)
			}
			got, err := decodeTimes(meta)
			if err != nil {
				t.Fatalf("decode %q: %v", meta, err)
			}
			want := committedTimes{partition: c.partition, ops: c.ops}
			if want.ops == nil {
				want.ops = []opTime{}
			}
			if diff := cmp.Diff(want, got, timesCmp); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
	// Small: a partition time and one observed time near it.
	meta, _ := encodeTimes(now, []opTime{{opKey{"count-window", ""}, now - 3000}}, offsetMetadataMax)
	if len(meta) > 40 {
		t.Errorf("metadata %q is %d bytes, want at most 40", meta, len(meta))
	}
}

// Observed times that would take the metadata past Kafka's default limit
// are left out, from the first that does not fit; the rest still decode.
func TestTimesEncodingLimit(t *testing.T) {
	var ops []opTime
	for i := range 500 {
		ops = append(ops, opTime{opKey{fmt.Sprintf("processor-with-a-long-name-%03d", i), "window"}, int64(1000 + i)})
	}
	meta, n := encodeTimes(2000, ops, offsetMetadataMax)
	if len(meta) > offsetMetadataMax {
		t.Fatalf("metadata is %d bytes, over the limit of %d", len(meta), offsetMetadataMax)
	}
	if n == 0 || n >= len(ops) {
		t.Fatalf("kept %d of %d observed times, want some but not all", n, len(ops))
	}
	if len(meta) < offsetMetadataMax-100 {
		t.Errorf("metadata is %d bytes: the limit of %d is not used", len(meta), offsetMetadataMax)
	}
	got, err := decodeTimes(meta)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(committedTimes{partition: 2000, ops: ops[:n]}, got, timesCmp); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
}

// Metadata kgen did not write, or that is damaged, is an error (the caller
// ignores it), never a panic or a wrong time.
func TestDecodeTimesRejects(t *testing.T) {
	blob := func(parts ...[]byte) string {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return timesPrefix + base64.RawStdEncoding.EncodeToString(b)
	}
	v := func(x int64) []byte { return binary.AppendVarint(nil, x) }
	u := func(x uint64) []byte { return binary.AppendUvarint(nil, x) }
	cases := []struct {
		name, meta, wantErr string
	}{
		{"empty", "", "not kgen's"},
		{"franz-go's member id", "kgo-7d1e5e2a-3c34-4c8e-9d53-0d1b1cf2a1b9", "not kgen's"},
		// Kafka Streams: base64 of a version byte and the partition time.
		{"kafka streams", "AgAAAZrgQ2gAAA==", "not kgen's"},
		{"a later kgen version", "kgen2:AgA", "not kgen's"},
		{"not base64", timesPrefix + "!!!", "illegal base64"},
		{"padded base64", timesPrefix + "AgA=", "illegal base64"},
		{"nothing after the prefix", timesPrefix, "truncated"},
		{"count missing", blob(v(5)), "truncated"},
		{"count larger than the bytes", blob(v(5), u(1000), u(0), u(0), v(0)), "observed times in"},
		{"name longer than the bytes", blob(v(5), u(1), u(50), []byte("abc"), u(0), v(0)), "a name of 50 bytes"},
		{"overlong varint", blob([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}), "overlong"},
		{"bytes after the times", blob(v(5), u(0), []byte{7}), "1 bytes after"},
		{"partition time below -1", blob(v(-7), u(0)), "partition time -7"},
		{"too long", timesPrefix + strings.Repeat("A", offsetMetadataMax+4), "more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeTimes(c.meta)
			checkErr(t, err, c.wantErr)
			if got.partition != -1 || len(got.ops) != 0 {
				t.Errorf("decoded %+v from rejected metadata, want nothing", got)
			}
		})
	}
	// An observed time below zero is none: dropped, the rest kept.
	got, err := decodeTimes(blob(v(10), u(2), u(1), []byte("a"), u(0), v(-20), u(1), []byte("b"), u(0), v(5)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(committedTimes{partition: 10, ops: []opTime{{opKey{"b", ""}, 15}}}, got, timesCmp); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
}

// A task with two inputs resumes each input's partition time, the largest
// of them as its stream time, and the largest of each observed time; its
// commits write what its processors asked for.
func TestTaskRestoresTimes(t *testing.T) {
	topo := NewTopology()
	AddSource(topo, "left", "left", serde.String{}, serde.String{})
	AddSource(topo, "right", "right", serde.String{}, serde.String{})
	var seen *ObservedTime
	AddProcessor(topo, "join", func() Processor[string, string, string, string] {
		return &initFunc{init: func(ctx *Context[string, string]) error { seen = ctx.ObservedTime("w"); return nil }}
	}, "left", "right")
	d, err := NewLocalDriver(topo, LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	task := d.tasks[0]
	left, _ := encodeTimes(100, []opTime{{opKey{"join", "w"}, 50}, {opKey{"gone", ""}, 90}}, offsetMetadataMax)
	right, _ := encodeTimes(200, []opTime{{opKey{"join", "w"}, 70}}, offsetMetadataMax)
	if err := task.restoreTimes(map[string]string{"left": left, "right": right}); err != nil {
		t.Fatal(err)
	}
	if task.streamTime != 200 {
		t.Errorf("stream time %d, want 200", task.streamTime)
	}
	if seen.Millis() != 70 {
		t.Errorf("observed time %d, want 70", seen.Millis())
	}
	for _, in := range task.inputs {
		got, err := decodeTimes(task.commitMetadata(in))
		if err != nil {
			t.Fatal(err)
		}
		// "gone" was restored, but no processor asked for it: not written.
		want := committedTimes{partition: map[string]int64{"left": 100, "right": 200}[in.topic()], ops: []opTime{{opKey{"join", "w"}, 70}}}
		if diff := cmp.Diff(want, got, timesCmp); diff != "" {
			t.Errorf("input %s: committed times (-want +got):\n%s", in.topic(), diff)
		}
	}
}

type initFunc struct {
	init func(ctx *Context[string, string]) error
}

func (f *initFunc) Init(ctx *Context[string, string]) error { return f.init(ctx) }

func (f *initFunc) Process(*Context[string, string], Record[string, string]) error { return nil }

func FuzzDecodeTimes(f *testing.F) {
	for _, s := range []string{
		"", "kgo-7d1e5e2a", "AgAAAZrgQ2gAAA==", timesPrefix, timesPrefix + "AgA",
	} {
		f.Add(s)
	}
	meta, _ := encodeTimes(1_764_662_400_000, []opTime{{opKey{"join", "left"}, 1_764_662_399_000}, {opKey{"w", ""}, 3}}, offsetMetadataMax)
	f.Add(meta)
	f.Fuzz(func(t *testing.T, meta string) {
		ct, err := decodeTimes(meta)
		if err != nil {
			if ct.partition != -1 || len(ct.ops) != 0 {
				t.Fatalf("error %v with times %+v", err, ct)
			}
			return
		}
		if ct.partition < -1 {
			t.Fatalf("partition time %d", ct.partition)
		}
		for _, op := range ct.ops {
			if op.ms < 0 {
				t.Fatalf("observed time %+v", op)
			}
		}
		// What decodes encodes to the same times.
		again, n := encodeTimes(ct.partition, ct.ops, 1<<20)
		if n != len(ct.ops) {
			t.Fatalf("re-encoding kept %d of %d", n, len(ct.ops))
		}
		back, err := decodeTimes(again)
		if err != nil {
			t.Fatalf("re-decoding %q: %v", again, err)
		}
		if diff := cmp.Diff(ct, back, timesCmp); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

// A broker that refuses the times as too large still gets the offsets.
func TestCommitWithoutTimesWhenTooLarge(t *testing.T) {
	offsets := offsetCommits{"in": {0: {kgo.EpochOffset{Offset: 5}, "kgen1:AgA"}, 1: {kgo.EpochOffset{Offset: 7}, "kgen1:BgA"}}}
	var sent [][]string
	err := commitWithTimes(slog.New(slog.NewTextHandler(io.Discard, nil)), offsets, func() error {
		sent = append(sent, []string{offsets["in"][0].meta, offsets["in"][1].meta})
		if len(sent) == 1 {
			return fmt.Errorf("in/1: %w", kerr.OffsetMetadataTooLarge)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{{"kgen1:AgA", "kgen1:BgA"}, {"", ""}}, sent); diff != "" {
		t.Errorf("metadata sent (-want +got):\n%s", diff)
	}
	if offsets["in"][1].Offset != 7 {
		t.Errorf("offset changed to %d", offsets["in"][1].Offset)
	}
}
