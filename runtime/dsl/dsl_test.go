package dsl_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func driver(t *testing.T, topo *stream.Topology, partitions int32) *stream.LocalDriver {
	t.Helper()
	d, err := stream.NewLocalDriver(topo, stream.LocalConfig{AppID: "dsl", Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func pipe(t *testing.T, d *stream.LocalDriver, topic, key, value string, at time.Duration) {
	t.Helper()
	var v []byte
	if value != "\x00" { // "\x00" stands for a tombstone
		v = []byte(value)
	}
	if err := d.Pipe(topic, []byte(key), v, nil, t0.Add(at*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
}

// render writes records as key=value@ms, in partition then offset order,
// with "-" for a tombstone, and decode turns a value into text.
func render(recs []*kgo.Record, decode func([]byte) string) []string {
	slices.SortStableFunc(recs, func(a, b *kgo.Record) int { return int(a.Partition - b.Partition) })
	var out []string
	for _, r := range recs {
		v := "-"
		if r.Value != nil {
			v = decode(r.Value)
		}
		out = append(out, fmt.Sprintf("%s=%s@%d", r.Key, v, r.Timestamp.Sub(t0).Milliseconds()))
	}
	return out
}

func text(b []byte) string { return string(b) }
func long(b []byte) string { n, _ := serde.Int64{}.Deserialize(b); return fmt.Sprint(n) }

func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// Each stateless operator, on one partition: what comes out, with which
// key, value and timestamp, in which order.
func TestStatelessOperators(t *testing.T) {
	s := serde.String{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", s, s)
	long := func(_, v string) bool { return len(v) > 3 }
	dsl.Filter(topo, "filter", long, "in")
	dsl.FilterNot(topo, "filter-not", long, "in")
	dsl.Map(topo, "map", func(k, v string) (string, string) { return v, k }, "in")
	dsl.MapValues(topo, "map-values", func(_, v string) string { return strings.ToUpper(v) }, "in")
	dsl.FlatMap(topo, "flat-map", func(k, v string) []dsl.KeyValue[string, string] {
		var out []dsl.KeyValue[string, string]
		for _, w := range strings.Fields(v) {
			out = append(out, dsl.KeyValue[string, string]{Key: w, Value: k})
		}
		return out
	}, "in")
	dsl.FlatMapValues(topo, "flat-map-values", func(_, v string) []string { return strings.Fields(v) }, "in")
	dsl.SelectKey(topo, "select-key", func(k, v string) string { return k + ":" + v[:1] }, "in")
	var peeked []string
	dsl.Peek(topo, "peek", func(k, v string) { peeked = append(peeked, k+"="+v) }, "in")
	var each int
	dsl.Foreach(topo, "foreach", func(string, string) { each++ }, "in")
	dsl.Branch(topo, "split", []dsl.BranchDef[string, string]{
		{Name: "a", Pred: func(_, v string) bool { return strings.HasPrefix(v, "a") }},
		{Name: "long", Pred: long},
	}, "rest", "in")
	dsl.Merge[string, string](topo, "merge", dsl.BranchNode("split", "a"), dsl.BranchNode("split", "rest"))
	for _, n := range []string{"filter", "filter-not", "map", "map-values", "flat-map", "flat-map-values", "select-key", "peek", "merge"} {
		stream.AddSink(topo, n+"-sink", n, s, s, n)
	}
	stream.AddSink(topo, "long-sink", "long", s, s, dsl.BranchNode("split", "long"))
	d := driver(t, topo, 1)
	pipe(t, d, "in", "k1", "ab cd", 5)
	pipe(t, d, "in", "k2", "abc", 3)
	pipe(t, d, "in", "k3", "hello world", 9)
	pipe(t, d, "in", "k4", "xy", 1)
	for _, c := range []struct {
		topic string
		want  []string
	}{
		{"filter", []string{"k1=ab cd@5", "k3=hello world@9"}},
		{"filter-not", []string{"k2=abc@3", "k4=xy@1"}},
		{"map", []string{"ab cd=k1@5", "abc=k2@3", "hello world=k3@9", "xy=k4@1"}},
		{"map-values", []string{"k1=AB CD@5", "k2=ABC@3", "k3=HELLO WORLD@9", "k4=XY@1"}},
		{"flat-map", []string{"ab=k1@5", "cd=k1@5", "abc=k2@3", "hello=k3@9", "world=k3@9", "xy=k4@1"}},
		{"flat-map-values", []string{"k1=ab@5", "k1=cd@5", "k2=abc@3", "k3=hello@9", "k3=world@9", "k4=xy@1"}},
		{"select-key", []string{"k1:a=ab cd@5", "k2:a=abc@3", "k3:h=hello world@9", "k4:x=xy@1"}},
		{"peek", []string{"k1=ab cd@5", "k2=abc@3", "k3=hello world@9", "k4=xy@1"}},
		{"merge", []string{"k1=ab cd@5", "k2=abc@3", "k4=xy@1"}},
		{"long", []string{"k3=hello world@9"}},
	} {
		same(t, c.topic, render(d.Output(c.topic), text), c.want)
	}
	same(t, "peeked", peeked, []string{"k1=ab cd", "k2=abc", "k3=hello world", "k4=xy"})
	if each != 4 {
		t.Errorf("foreach saw %d records, want 4", each)
	}
}

// A node reading from a Foreach is refused when the topology is validated.
func TestForeachIsTerminal(t *testing.T) {
	s := serde.String{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", s, s)
	dsl.Foreach(topo, "each", func(string, string) {}, "in")
	stream.AddSink(topo, "out", "out", s, s, "each")
	if err := topo.Validate(); err == nil {
		t.Fatal("a sink after a Foreach was accepted")
	}
}

// wordCount splits sentences into words, groups them by word (through a
// repartition step unless direct) and counts them.
func wordCount(direct bool) *stream.Topology {
	s := serde.String{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "sentences", "sentences", s, s)
	dsl.FlatMapValues(topo, "words", func(_, v string) []string { return strings.Fields(v) }, "sentences")
	dsl.SelectKey(topo, "by-word", func(_, w string) string { return w }, "words")
	from := "by-word"
	if !direct {
		stream.AddRepartition(topo, "grouped", s, s, stream.RepartitionOptions{}, "by-word")
		from = "grouped"
	}
	dsl.Count[string, string](topo, "count", "counts", s, stream.StoreOptions{Changelog: true}, from)
	dsl.ToStream[string, int64](topo, "counts-stream", "count")
	stream.AddSink(topo, "out", "counts", s, dsl.Nullable[int64](serde.Int64{}), "counts-stream")
	return topo
}

// groupBy(...).count() on 4 partitions: with the repartition step every
// word's last count is right; without it a word is counted in several tasks,
// which is what the step is for.
func TestCountThroughARepartitionStep(t *testing.T) {
	words := strings.Fields("a b c d e f g h i j k l")
	truth := map[string]int64{}
	var sentences []string
	for i := range 200 {
		var ws []string
		for j := range 3 {
			w := words[(i*7+j*5)%len(words)]
			ws = append(ws, w)
			truth[w]++
		}
		sentences = append(sentences, strings.Join(ws, " "))
	}
	for _, direct := range []bool{false, true} {
		d := driver(t, wordCount(direct), 4)
		for i, s := range sentences {
			pipe(t, d, "sentences", fmt.Sprint("s", i), s, time.Duration(i))
		}
		last := map[string]int64{}
		for _, r := range d.Output("counts") {
			n, _ := serde.Int64{}.Deserialize(r.Value)
			last[string(r.Key)] = n
		}
		wrong := 0
		for w, n := range truth {
			if last[w] != n {
				wrong++
			}
		}
		if direct && wrong == 0 {
			t.Error("without the repartition step every count was still right: the test shows nothing")
		}
		if !direct && wrong > 0 {
			t.Errorf("%d of %d words counted wrong through the repartition step", wrong, len(truth))
		}
	}
}

// Aggregations stamp each update with the latest timestamp seen for the key,
// so an out-of-order record does not move a key's time back; reduce starts
// from the first value, aggregate from its initializer.
func TestAggregationTimestampsAndStarts(t *testing.T) {
	s, l := serde.String{}, serde.Int64{}
	topo := stream.NewTopology()
	stream.AddSource(topo, "in", "in", s, l)
	dsl.Count[string, int64](topo, "count", "count-store", s, stream.StoreOptions{}, "in")
	dsl.Reduce(topo, "sum", "sum-store", s, l, stream.StoreOptions{}, func(a, v int64) int64 { return a + v }, "in")
	dsl.Aggregate(topo, "concat", "concat-store", s, serde.Serde[string](s), stream.StoreOptions{},
		func() string { return "^" }, func(_ string, v int64, agg string) string { return agg + fmt.Sprint(v) }, "in")
	for _, n := range []string{"count", "sum"} {
		dsl.ToStream[string, int64](topo, n+"-stream", n)
		stream.AddSink(topo, n+"-sink", n, s, dsl.Nullable[int64](l), n+"-stream")
	}
	dsl.ToStream[string, string](topo, "concat-stream", "concat")
	stream.AddSink(topo, "concat-sink", "concat", s, dsl.Nullable[string](s), "concat-stream")
	d := driver(t, topo, 1)
	for _, r := range []struct {
		key string
		v   int64
		at  time.Duration
	}{{"a", 1, 10}, {"b", 5, 4}, {"a", 2, 7}, {"a", 3, 12}, {"b", 6, 2}} {
		b, _ := l.Serialize(r.v)
		if err := d.Pipe("in", []byte(r.key), b, nil, t0.Add(r.at*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	same(t, "count", render(d.Output("count"), long), []string{"a=1@10", "b=1@4", "a=2@10", "a=3@12", "b=2@4"})
	same(t, "sum", render(d.Output("sum"), long), []string{"a=1@10", "b=5@4", "a=3@10", "a=6@12", "b=11@4"})
	same(t, "concat", render(d.Output("concat"), text), []string{"a=^1@10", "b=^5@4", "a=^12@10", "a=^123@12", "b=^56@4"})
}

// A table from a topic: updates upsert, tombstones delete (a tombstone for a
// missing row passes through, as Kafka Streams' table source forwards it).
// Grouped by the value's first letter and counted, an update subtracts the
// old row from its group before adding the new one: a row that stays in its
// group yields one update, one that moves yields two (old group first).
func TestTableGroupByCount(t *testing.T) {
	s, l := serde.String{}, serde.Int64{}
	for _, partitions := range []int32{1, 4} {
		topo := stream.NewTopology()
		dsl.Table(topo, "users", "users", s, s, "users-store", stream.StoreOptions{Changelog: true})
		dsl.ToStream[string, string](topo, "users-stream", "users")
		stream.AddSink(topo, "users-sink", "users-out", s, dsl.Nullable[string](s), "users-stream")
		dsl.TableGroupBy(topo, "by-letter", s, func(_, v string) (string, string) { return v[:1], v }, "users")
		stream.AddRepartition(topo, "by-letter-repartition", s, dsl.Changes[string](s), stream.RepartitionOptions{}, "by-letter")
		dsl.TableCount[string, string](topo, "count", "letter-counts", s, stream.StoreOptions{Changelog: true}, "by-letter-repartition")
		dsl.ToStream[string, int64](topo, "count-stream", "count")
		stream.AddSink(topo, "count-sink", "counts", s, dsl.Nullable[int64](l), "count-stream")
		d := driver(t, topo, partitions)
		pipe(t, d, "users", "u1", "alice", 1)
		pipe(t, d, "users", "u2", "anna", 2)
		pipe(t, d, "users", "u1", "alfred", 3) // same group: one update
		pipe(t, d, "users", "u2", "bob", 4)    // moves: a down, then b up
		pipe(t, d, "users", "u1", "\x00", 5)   // deleted: a down
		pipe(t, d, "users", "u9", "\x00", 6)   // never existed
		users := render(d.Output("users-out"), text)
		counts := render(d.Output("counts"), long)
		if partitions == 1 {
			same(t, "users", users, []string{"u1=alice@1", "u2=anna@2", "u1=alfred@3", "u2=bob@4", "u1=-@5", "u9=-@6"})
			same(t, "counts", counts, []string{"a=1@1", "a=2@2", "a=2@3", "a=1@4", "b=1@4", "a=0@5"})
			continue
		}
		byKey := map[string][]string{}
		for _, c := range counts {
			k, _, _ := strings.Cut(c, "=")
			byKey[k] = append(byKey[k], c)
		}
		same(t, "counts of a on 4 partitions", byKey["a"], []string{"a=1@1", "a=2@2", "a=2@3", "a=1@4", "a=0@5"})
		same(t, "counts of b on 4 partitions", byKey["b"], []string{"b=1@4"})
	}
}

// TableReduce and TableAggregate subtract the old value and add the new.
func TestTableReduceAndAggregate(t *testing.T) {
	s, l := serde.String{}, serde.Int64{}
	topo := stream.NewTopology()
	dsl.Table(topo, "scores", "scores", s, l, "scores-store", stream.StoreOptions{})
	dsl.TableGroupBy(topo, "by-team", s, func(k string, v int64) (string, int64) { return k[:1], v }, "scores")
	stream.AddRepartition(topo, "teams", s, dsl.Changes[int64](l), stream.RepartitionOptions{}, "by-team")
	dsl.TableReduce(topo, "sum", "sums", s, l, stream.StoreOptions{}, func(a, v int64) int64 { return a + v }, func(a, v int64) int64 { return a - v }, "teams")
	dsl.TableAggregate(topo, "n", "ns", s, serde.Serde[int64](l), stream.StoreOptions{}, func() int64 { return 100 },
		func(_ string, _ int64, a int64) int64 { return a + 1 }, func(_ string, _ int64, a int64) int64 { return a - 1 }, "teams")
	for _, n := range []string{"sum", "n"} {
		dsl.ToStream[string, int64](topo, n+"-stream", n)
		stream.AddSink(topo, n+"-sink", n, s, dsl.Nullable[int64](l), n+"-stream")
	}
	d := driver(t, topo, 1)
	for _, r := range []struct {
		key string
		v   int64
		at  time.Duration
	}{{"x1", 10, 1}, {"x2", 5, 2}, {"x1", 7, 3}} {
		b, _ := l.Serialize(r.v)
		if err := d.Pipe("scores", []byte(r.key), b, nil, t0.Add(r.at*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Pipe("scores", []byte("x2"), nil, nil, t0.Add(4*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	same(t, "sum", render(d.Output("sum"), long), []string{"x=10@1", "x=15@2", "x=12@3", "x=7@4"})
	same(t, "n", render(d.Output("n"), long), []string{"x=101@1", "x=102@2", "x=102@3", "x=101@4"})
}

func TestSerdesRoundTrip(t *testing.T) {
	ts := dsl.Timestamped[string](serde.String{})
	b, err := ts.Serialize(dsl.ValueAndTimestamp[string]{Value: "v", Timestamp: t0})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ts.Deserialize(b); err != nil || got.Value != "v" || !got.Timestamp.Equal(t0) {
		t.Errorf("timestamped round trip: %+v, %v", got, err)
	}
	if _, err := ts.Deserialize([]byte{1, 2}); err == nil {
		t.Error("a 2-byte timestamped value decoded")
	}
	n := dsl.Nullable[string](serde.String{})
	if b, _ := n.Serialize(nil); b != nil {
		t.Errorf("nil serialized to %q, want a null", b)
	}
	empty := ""
	if b, _ := n.Serialize(&empty); b == nil {
		t.Error("an empty string serialized to a null")
	}
	if v, _ := n.Deserialize(nil); v != nil {
		t.Errorf("a null decoded to %q, want nil", *v)
	}
	c := dsl.Changes[string](serde.String{})
	old, nw := "old", "new"
	for _, ch := range []dsl.Change[string]{{}, {Old: &old}, {New: &nw}, {Old: &old, New: &nw}, {Old: &empty, New: &empty}} {
		b, err := c.Serialize(ch)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Deserialize(b)
		if err != nil || (got.Old == nil) != (ch.Old == nil) || (got.New == nil) != (ch.New == nil) ||
			(ch.Old != nil && *got.Old != *ch.Old) || (ch.New != nil && *got.New != *ch.New) {
			t.Errorf("change %v round trip: %v, %v", ch, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {1}, {4, 0, 0, 0, 0}, {1, 0, 0, 0, 9, 'x'}} {
		if _, err := c.Deserialize(bad); err == nil {
			t.Errorf("malformed change %v decoded", bad)
		}
	}
}

// Malformed bytes from a repartition topic are an error, never a panic.
func FuzzChanges(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 1, 'a', 'b'})
	f.Add([]byte{1, 255, 255, 255, 255})
	c := dsl.Changes[string](serde.String{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ch, err := c.Deserialize(b)
		if err != nil {
			return
		}
		again, err := c.Serialize(ch)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(b) {
			t.Fatalf("re-encoding changed the bytes")
		}
	})
}
