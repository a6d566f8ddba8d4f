package oracle_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// ---- case and expected files (see README.md) ----

type caseFile struct {
	Name     string `json:"name"`
	Topology string `json:"topology"`
	What     string `json:"what"`
	Differs  string `json:"differs"`
	// OnePartition says why the case runs with one partition only: its
	// outcome depends on stream time, which other keys' records advance on
	// their partition only.
	OnePartition string                `json:"onePartition"`
	Topics       map[string]topicTypes `json:"topics"`
	Inputs       []inputRecord         `json:"inputs"`
	Outputs      []string              `json:"outputs"`
	// Kgen is what kgen produces instead, when Differs says why.
	Kgen *result `json:"kgen"`
}

type topicTypes struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Window, on an output topic of windowed keys, says how Kafka Streams
	// wrote them (windowed_test.go).
	Window *windowType `json:"window"`
}

type inputRecord struct {
	Topic     string `json:"topic"`
	Key       any    `json:"key"`
	Value     any    `json:"value"`
	Timestamp int64  `json:"timestamp"`
}

// result is an expected file: what each output topic received, in order, and
// what a peek saw.
type result struct {
	Case    string                `json:"case"`
	Outputs map[string][]outputJS `json:"outputs"`
	Peeked  []string              `json:"peeked"`
}

type outputJS struct {
	Key any `json:"key"`
	// Start and End are a windowed key's window (on a topic with a Window).
	Start     *int64   `json:"start"`
	End       *int64   `json:"end"`
	Value     any      `json:"value"`
	Timestamp int64    `json:"timestamp"`
	Headers   []string `json:"headers"` // "key=value", in order
}

// rec is one output record in a comparable form: key and value as
// canonical text ("s:abc", "n:42", "null"), headers as "k=v" joined by
// spaces.
type rec struct {
	Key, Value string
	// Window is a windowed key's window, "start/end" (else empty).
	Window    string
	Timestamp int64
	Headers   string
	partition int32
}

func (r rec) String() string {
	if r.Window != "" {
		return fmt.Sprintf("{key %s@%s, value %s, ts %d, headers [%s]}", show(r.Key), r.Window, show(r.Value), r.Timestamp, r.Headers)
	}
	return fmt.Sprintf("{key %s, value %s, ts %d, headers [%s]}", show(r.Key), show(r.Value), r.Timestamp, r.Headers)
}

func show(c string) string {
	switch {
	case c == "null":
		return "null"
	case strings.HasPrefix(c, "s:"):
		return strconv.Quote(c[2:])
	default:
		return c[2:]
	}
}

// canonical turns a JSON scalar (decoded with UseNumber) into rec's form.
func canonical(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "null", nil
	case string:
		return "s:" + v, nil
	case json.Number:
		n, err := v.Int64()
		if err != nil {
			return "", err
		}
		return "n:" + strconv.FormatInt(n, 10), nil
	}
	return "", fmt.Errorf("%v (%T) is no string, integer or null", v, v)
}

func readJSON(path string, into any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func records(out []outputJS) ([]rec, error) {
	rs := make([]rec, len(out))
	for i, o := range out {
		k, err := canonical(o.Key)
		if err != nil {
			return nil, err
		}
		v, err := canonical(o.Value)
		if err != nil {
			return nil, err
		}
		rs[i] = rec{Key: k, Value: v, Timestamp: o.Timestamp, Headers: strings.Join(o.Headers, " ")}
		if o.Start != nil || o.End != nil {
			if o.Start == nil || o.End == nil {
				return nil, fmt.Errorf("record %d has half a window", i)
			}
			rs[i].Window = window(*o.Start, *o.End)
		}
	}
	return rs, nil
}

// ---- bytes for the declared types (Kafka's StringSerializer and LongSerializer) ----

func encode(typ string, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	switch typ {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%v is no string", v)
		}
		return serde.String{}.Serialize(s)
	case "long":
		n, ok := v.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%v is no integer", v)
		}
		i, err := n.Int64()
		if err != nil {
			return nil, err
		}
		return serde.Int64{}.Serialize(i)
	}
	return nil, fmt.Errorf("unknown type %q", typ)
}

func decode(typ string, b []byte) (string, error) {
	if b == nil {
		return "null", nil
	}
	switch typ {
	case "string":
		s, err := serde.String{}.Deserialize(b)
		return "s:" + s, err
	case "long":
		i, err := serde.Int64{}.Deserialize(b)
		return "n:" + strconv.FormatInt(i, 10), err
	}
	return "", fmt.Errorf("unknown type %q", typ)
}

// ---- the functions, identical to Topologies.java's ----

func words(v string) []string {
	var out []string
	for _, w := range strings.Split(v, " ") {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

func first(v string) string {
	if v == "" {
		return ""
	}
	return v[:1]
}

func parity(v int64) string {
	if v%2 == 0 {
		return "even"
	}
	return "odd"
}

func longerThan3(v string) bool { return len(v) > 3 }

// The null-safe functions of the -nullable topologies.

// javaString is what Java's string concatenation makes of a String.
func javaString(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

func longerThan3N(v *string) bool { return v != nil && longerThan3(*v) }

func upperN(v *string) *string {
	if v == nil {
		return nil
	}
	u := strings.ToUpper(*v)
	return &u
}

func ptr[T any](v T) *T { return &v }

// ---- the topologies: twins of Topologies.java, operator by operator ----

var (
	S    = serde.String{}
	L    = serde.Int64{}
	opts = stream.StoreOptions{Changelog: true}
)

// env is what a topology's side effects go to.
type env struct{ peeked []string }

// NS reads and writes a string that may be null.
var NS = dsl.Nullable[string](S)

// inNullable reads "in" with keys and values that may be null.
func inNullable(t *stream.Topology) { stream.AddSource(t, "in", "in", NS, NS) }

// toLongsNullable ends an aggregation whose keys may be null.
func toLongsNullable(t *stream.Topology, parent string) {
	dsl.ToStream[*string, int64](t, "to-stream", parent)
	stream.AddSink(t, "out", "out", NS, dsl.Nullable[int64](L), "to-stream")
}

func in(t *stream.Topology) { stream.AddSource(t, "in", "in", S, S) }

func inLong(t *stream.Topology) { stream.AddSource(t, "in", "in", S, L) }

// toLongs ends an aggregation: toStream().to("out", Produced.with(String, Long)).
func toLongs(t *stream.Topology, parent string) {
	dsl.ToStream[string, int64](t, "to-stream", parent)
	stream.AddSink(t, "out", "out", S, dsl.Nullable[int64](L), "to-stream")
}

// tableGroupByNullable reads "in" as a table and groups it by value, with
// key as value: "-" groups under a null key and "?" gives a null value.
func tableGroupByNullable(t *stream.Topology) {
	dsl.Table(t, "table", "in", S, S, "table-store", opts)
	dsl.TableGroupBy(t, "group-by", NS, func(k, v string) (*string, *string) {
		var key, val *string = ptr(v), ptr(k)
		if v == "-" {
			key = nil
		}
		if v == "?" {
			val = nil
		}
		return key, val
	}, "table")
	stream.AddRepartition(t, "group-by-repartition", NS, dsl.Changes(NS), stream.RepartitionOptions{}, "group-by")
}

var topologies = map[string]func(*env) *stream.Topology{
	"filter": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.Filter(t, "filter", func(k, v string) bool { return longerThan3(v) }, "in")
		stream.AddSink(t, "out", "out", S, S, "filter")
		return t
	},
	"filterNot": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.FilterNot(t, "filter-not", func(k, v string) bool { return longerThan3(v) }, "in")
		stream.AddSink(t, "out", "out", S, S, "filter-not")
		return t
	},
	"map": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.Map(t, "map", func(k, v string) (string, int64) { return strings.ToUpper(k), int64(len(v)) }, "in")
		stream.AddSink(t, "out", "out", S, L, "map")
		return t
	},
	"mapValues": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.MapValues(t, "map-values", func(k, v string) string { return k + "=" + strings.ToUpper(v) }, "in")
		stream.AddSink(t, "out", "out", S, S, "map-values")
		return t
	},
	"flatMap": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.FlatMap(t, "flat-map", func(k, v string) []dsl.KeyValue[string, int64] {
			var out []dsl.KeyValue[string, int64]
			for _, w := range words(v) {
				out = append(out, dsl.KeyValue[string, int64]{Key: w, Value: int64(len(w))})
			}
			return out
		}, "in")
		stream.AddSink(t, "out", "out", S, L, "flat-map")
		return t
	},
	"flatMapValues": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.FlatMapValues(t, "flat-map-values", func(k, v string) []string { return words(v) }, "in")
		stream.AddSink(t, "out", "out", S, S, "flat-map-values")
		return t
	},
	"selectKey": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.SelectKey(t, "select-key", func(k, v string) string { return first(v) }, "in")
		stream.AddSink(t, "out", "out", S, S, "select-key")
		return t
	},
	"peek": func(e *env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.Peek(t, "peek", func(k, v string) { e.peeked = append(e.peeked, k+"="+v) }, "in")
		stream.AddSink(t, "out", "out", S, S, "peek")
		return t
	},
	"foreach": func(e *env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.Foreach(t, "foreach", func(k, v string) { e.peeked = append(e.peeked, k+"="+v) }, "in")
		return t
	},
	"branch": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.Branch(t, "split", []dsl.BranchDef[string, string]{
			{Name: "long", Pred: func(k, v string) bool { return len(v) > 5 }},
			{Name: "a", Pred: func(k, v string) bool { return strings.HasPrefix(v, "a") }},
		}, "default", "in")
		for _, b := range []string{"long", "a", "default"} {
			stream.AddSink(t, "out-"+b, "out-"+b, S, S, dsl.BranchNode("split", b))
		}
		return t
	},
	"branch-no-default": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.Branch(t, "split", []dsl.BranchDef[string, string]{
			{Name: "long", Pred: func(k, v string) bool { return len(v) > 5 }},
			{Name: "a", Pred: func(k, v string) bool { return strings.HasPrefix(v, "a") }},
		}, "", "in")
		for _, b := range []string{"long", "a"} {
			stream.AddSink(t, "out-"+b, "out-"+b, S, S, dsl.BranchNode("split", b))
		}
		return t
	},
	"merge": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.MapValues(t, "upper", func(k, v string) string { return strings.ToUpper(v) }, "in")
		stream.AddSource(t, "in2", "in2", S, S)
		dsl.Merge[string, string](t, "merge", "upper", "in2")
		stream.AddSink(t, "out", "out", S, S, "merge")
		return t
	},
	"count-groupByKey": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.Count[string, string](t, "count", "count-store", S, opts, "in")
		toLongs(t, "count")
		return t
	},
	"reduce-groupByKey": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inLong(t)
		dsl.Reduce(t, "reduce", "reduce-store", S, L, opts, func(agg, v int64) int64 { return agg + v }, "in")
		toLongs(t, "reduce")
		return t
	},
	"aggregate-groupByKey": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.Aggregate(t, "aggregate", "aggregate-store", S, L, opts,
			func() int64 { return 100 }, func(k, v string, agg int64) int64 { return agg + int64(len(v)) }, "in")
		toLongs(t, "aggregate")
		return t
	},
	// groupBy is selectKey then a repartition, as in Kafka Streams.
	"count-groupBy": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.SelectKey(t, "group-by", func(k, v string) string { return v }, "in")
		stream.AddRepartition(t, "group-by-repartition", S, S, stream.RepartitionOptions{}, "group-by")
		dsl.Count[string, string](t, "count", "count-store", S, opts, "group-by-repartition")
		toLongs(t, "count")
		return t
	},
	"reduce-groupBy": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inLong(t)
		dsl.SelectKey(t, "group-by", func(k string, v int64) string { return first(k) }, "in")
		stream.AddRepartition(t, "group-by-repartition", S, L, stream.RepartitionOptions{}, "group-by")
		dsl.Reduce(t, "reduce", "reduce-store", S, L, opts, func(agg, v int64) int64 { return agg + v }, "group-by-repartition")
		toLongs(t, "reduce")
		return t
	},
	"aggregate-groupBy": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.SelectKey(t, "group-by", func(k, v string) string { return first(k) }, "in")
		stream.AddRepartition(t, "group-by-repartition", S, S, stream.RepartitionOptions{}, "group-by")
		dsl.Aggregate(t, "aggregate", "aggregate-store", S, L, opts,
			func() int64 { return 100 }, func(k, v string, agg int64) int64 { return agg + int64(len(v)) }, "group-by-repartition")
		toLongs(t, "aggregate")
		return t
	},
	// The -nullable twins read keys and values with dsl.Nullable: a null is
	// nil, which the aggregations drop as Kafka Streams drops a null key or
	// value.
	"count-groupByKey-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.Count[*string, *string](t, "count", "count-store", NS, opts, "in")
		toLongsNullable(t, "count")
		return t
	},
	"reduce-groupByKey-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		stream.AddSource(t, "in", "in", NS, dsl.Nullable[int64](L))
		dsl.Reduce(t, "reduce", "reduce-store", NS, dsl.Nullable[int64](L), opts,
			func(agg, v *int64) *int64 { s := *agg + *v; return &s }, "in")
		dsl.ToStream[*string, *int64](t, "to-stream", "reduce")
		stream.AddSink(t, "out", "out", NS, dsl.Nullable(dsl.Nullable[int64](L)), "to-stream")
		return t
	},
	"aggregate-groupByKey-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.Aggregate(t, "aggregate", "aggregate-store", NS, L, opts,
			func() int64 { return 100 }, func(k, v *string, agg int64) int64 { return agg + int64(len(*v)) }, "in")
		toLongsNullable(t, "aggregate")
		return t
	},
	"count-groupBy-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.SelectKey(t, "group-by", func(k, v *string) *string { return v }, "in")
		stream.AddRepartition(t, "group-by-repartition", NS, NS, stream.RepartitionOptions{}, "group-by")
		dsl.Count[*string, *string](t, "count", "count-store", NS, opts, "group-by-repartition")
		toLongsNullable(t, "count")
		return t
	},
	"aggregate-groupBy-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.SelectKey(t, "group-by", func(k, v *string) *string {
			if k == nil {
				return nil
			}
			return ptr(first(*k))
		}, "in")
		stream.AddRepartition(t, "group-by-repartition", NS, NS, stream.RepartitionOptions{}, "group-by")
		dsl.Aggregate(t, "aggregate", "aggregate-store", NS, L, opts,
			func() int64 { return 100 }, func(k, v *string, agg int64) int64 { return agg + int64(len(*v)) }, "group-by-repartition")
		toLongsNullable(t, "aggregate")
		return t
	},
	// The stateless -nullable twins: nulls reach the functions as nil.
	"filter-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.Filter(t, "filter", func(k, v *string) bool { return longerThan3N(v) }, "in")
		stream.AddSink(t, "out", "out", NS, NS, "filter")
		return t
	},
	"filterNot-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.FilterNot(t, "filter-not", func(k, v *string) bool { return longerThan3N(v) }, "in")
		stream.AddSink(t, "out", "out", NS, NS, "filter-not")
		return t
	},
	"map-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.Map(t, "map", func(k, v *string) (string, *int64) {
			key := "none"
			if k != nil {
				key = strings.ToUpper(*k)
			}
			if v == nil {
				return key, nil
			}
			return key, ptr(int64(len(*v)))
		}, "in")
		stream.AddSink(t, "out", "out", S, dsl.Nullable[int64](L), "map")
		return t
	},
	"mapValues-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.MapValues(t, "map-values", func(k, v *string) string { return javaString(k) + "=" + javaString(upperN(v)) }, "in")
		stream.AddSink(t, "out", "out", NS, S, "map-values")
		return t
	},
	"flatMap-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.FlatMap(t, "flat-map", func(k, v *string) []dsl.KeyValue[*string, *int64] {
			if v == nil {
				return []dsl.KeyValue[*string, *int64]{{Key: k}}
			}
			var out []dsl.KeyValue[*string, *int64]
			for _, w := range words(*v) {
				out = append(out, dsl.KeyValue[*string, *int64]{Key: ptr(w), Value: ptr(int64(len(w)))})
			}
			return out
		}, "in")
		stream.AddSink(t, "out", "out", NS, dsl.Nullable[int64](L), "flat-map")
		return t
	},
	"flatMapValues-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.FlatMapValues(t, "flat-map-values", func(k, v *string) []string {
			if v == nil {
				return nil
			}
			return words(*v)
		}, "in")
		stream.AddSink(t, "out", "out", NS, S, "flat-map-values")
		return t
	},
	"selectKey-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.SelectKey(t, "select-key", func(k, v *string) *string {
			if v == nil {
				return nil
			}
			return ptr(first(*v))
		}, "in")
		stream.AddSink(t, "out", "out", NS, NS, "select-key")
		return t
	},
	"peek-nullable": func(e *env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.Peek(t, "peek", func(k, v *string) { e.peeked = append(e.peeked, javaString(k)+"="+javaString(v)) }, "in")
		stream.AddSink(t, "out", "out", NS, NS, "peek")
		return t
	},
	"foreach-nullable": func(e *env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.Foreach(t, "foreach", func(k, v *string) { e.peeked = append(e.peeked, javaString(k)+"="+javaString(v)) }, "in")
		return t
	},
	"branch-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.Branch(t, "split", []dsl.BranchDef[*string, *string]{
			{Name: "novalue", Pred: func(k, v *string) bool { return v == nil }},
			{Name: "nokey", Pred: func(k, v *string) bool { return k == nil }},
		}, "default", "in")
		for _, b := range []string{"novalue", "nokey", "default"} {
			stream.AddSink(t, "out-"+b, "out-"+b, NS, NS, dsl.BranchNode("split", b))
		}
		return t
	},
	"merge-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		inNullable(t)
		dsl.MapValues(t, "upper", func(k, v *string) *string { return upperN(v) }, "in")
		stream.AddSource(t, "in2", "in2", NS, NS)
		dsl.Merge[*string, *string](t, "merge", "upper", "in2")
		stream.AddSink(t, "out", "out", NS, NS, "merge")
		return t
	},
	// A table whose keys may be null: the table drops a null key.
	"table-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		dsl.Table(t, "table", "in", NS, S, "table-store", opts)
		dsl.ToStream[*string, string](t, "to-stream", "table")
		stream.AddSink(t, "out", "out", NS, NS, "to-stream")
		return t
	},
	"table-groupBy-nullable": func(*env) *stream.Topology {
		t := stream.NewTopology()
		tableGroupByNullable(t)
		dsl.TableCount[*string, *string](t, "count", "count-store", NS, opts, "group-by-repartition")
		toLongsNullable(t, "count")
		return t
	},
	"table-groupBy-nullable-reduce": func(*env) *stream.Topology {
		t := stream.NewTopology()
		NL := dsl.Nullable[int64](L)
		dsl.Table(t, "table", "in", S, L, "table-store", opts)
		dsl.TableGroupBy(t, "group-by", NS, func(k string, v int64) (*string, *int64) {
			group, value := ptr(parity(v)), ptr(v)
			if v < 0 {
				group = nil
			}
			if v == 0 {
				value = nil
			}
			return group, value
		}, "table")
		stream.AddRepartition(t, "group-by-repartition", NS, dsl.Changes(NL), stream.RepartitionOptions{}, "group-by")
		dsl.TableReduce(t, "reduce", "reduce-store", NS, NL, opts,
			func(agg, v *int64) *int64 { return ptr(*agg + *v) }, func(agg, v *int64) *int64 { return ptr(*agg - *v) }, "group-by-repartition")
		dsl.ToStream[*string, *int64](t, "to-stream", "reduce")
		stream.AddSink(t, "out", "out", NS, dsl.Nullable(NL), "to-stream")
		return t
	},
	"table-groupBy-nullable-aggregate": func(*env) *stream.Topology {
		t := stream.NewTopology()
		tableGroupByNullable(t)
		dsl.TableAggregate(t, "aggregate", "aggregate-store", NS, L, opts, func() int64 { return 100 },
			func(k, v *string, agg int64) int64 { return agg + int64(len(*v)) },
			func(k, v *string, agg int64) int64 { return agg - int64(len(*v)) }, "group-by-repartition")
		toLongsNullable(t, "aggregate")
		return t
	},
	"wordcount": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.FlatMapValues(t, "words", func(k, v string) []string { return words(v) }, "in")
		dsl.SelectKey(t, "group-by", func(k, w string) string { return w }, "words")
		stream.AddRepartition(t, "group-by-repartition", S, S, stream.RepartitionOptions{}, "group-by")
		dsl.Count[string, string](t, "count", "count-store", S, opts, "group-by-repartition")
		toLongs(t, "count")
		return t
	},
	"repartition-chain": func(*env) *stream.Topology {
		t := stream.NewTopology()
		in(t)
		dsl.SelectKey(t, "group-by", func(k, v string) string { return v }, "in")
		stream.AddRepartition(t, "group-by-repartition", S, S, stream.RepartitionOptions{}, "group-by")
		dsl.Count[string, string](t, "count", "count-store", S, opts, "group-by-repartition")
		dsl.ToStream[string, int64](t, "count-stream", "count")
		dsl.SelectKey(t, "group-by-2", func(w string, n *int64) string { return first(w) }, "count-stream")
		stream.AddRepartition(t, "group-by-2-repartition", S, dsl.Nullable[int64](L), stream.RepartitionOptions{}, "group-by-2")
		dsl.Reduce(t, "reduce", "reduce-store", S, dsl.Nullable[int64](L), opts,
			func(agg, v *int64) *int64 { s := *agg + *v; return &s }, "group-by-2-repartition")
		dsl.ToStream[string, *int64](t, "to-stream", "reduce")
		stream.AddSink(t, "out", "out", S, dsl.Nullable(dsl.Nullable[int64](L)), "to-stream")
		return t
	},
	// A nil from a reducer deletes the aggregate, as Kafka Streams' null does.
	"reduce-delete": func(*env) *stream.Topology {
		t := stream.NewTopology()
		stream.AddSource(t, "in", "in", S, dsl.Nullable[int64](L))
		dsl.Reduce(t, "reduce", "reduce-store", S, dsl.Nullable[int64](L), opts, func(agg, v *int64) *int64 {
			if *agg+*v == 0 {
				return nil
			}
			s := *agg + *v
			return &s
		}, "in")
		dsl.ToStream[string, *int64](t, "to-stream", "reduce")
		stream.AddSink(t, "out", "out", S, dsl.Nullable(dsl.Nullable[int64](L)), "to-stream")
		return t
	},
	"table-reduce-delete": func(*env) *stream.Topology {
		t := stream.NewTopology()
		dsl.Table(t, "table", "in", S, dsl.Nullable[int64](L), "table-store", opts)
		dsl.TableGroupBy(t, "group-by", S, func(k string, v *int64) (string, *int64) { return parity(*v), v }, "table")
		stream.AddRepartition(t, "group-by-repartition", S, dsl.Changes(dsl.Nullable[int64](L)), stream.RepartitionOptions{}, "group-by")
		dsl.TableReduce(t, "reduce", "reduce-store", S, dsl.Nullable[int64](L), opts,
			func(agg, v *int64) *int64 { s := *agg + *v; return &s },
			func(agg, v *int64) *int64 {
				if *agg-*v == 0 {
					return nil
				}
				s := *agg - *v
				return &s
			}, "group-by-repartition")
		dsl.ToStream[string, *int64](t, "to-stream", "reduce")
		stream.AddSink(t, "out", "out", S, dsl.Nullable(dsl.Nullable[int64](L)), "to-stream")
		return t
	},
	"table": func(*env) *stream.Topology {
		t := stream.NewTopology()
		dsl.Table(t, "table", "in", S, S, "table-store", opts)
		dsl.ToStream[string, string](t, "to-stream", "table")
		stream.AddSink(t, "out", "out", S, dsl.Nullable[string](S), "to-stream")
		return t
	},
	"table-count": func(*env) *stream.Topology {
		t := stream.NewTopology()
		dsl.Table(t, "table", "in", S, S, "table-store", opts)
		dsl.TableGroupBy(t, "group-by", S, func(k, v string) (string, string) { return v, k }, "table")
		stream.AddRepartition(t, "group-by-repartition", S, dsl.Changes[string](S), stream.RepartitionOptions{}, "group-by")
		dsl.TableCount[string, string](t, "count", "count-store", S, opts, "group-by-repartition")
		toLongs(t, "count")
		return t
	},
	"table-reduce": func(*env) *stream.Topology {
		t := stream.NewTopology()
		dsl.Table(t, "table", "in", S, L, "table-store", opts)
		dsl.TableGroupBy(t, "group-by", S, func(k string, v int64) (string, int64) { return parity(v), v }, "table")
		stream.AddRepartition(t, "group-by-repartition", S, dsl.Changes[int64](L), stream.RepartitionOptions{}, "group-by")
		dsl.TableReduce(t, "reduce", "reduce-store", S, L, opts,
			func(agg, v int64) int64 { return agg + v }, func(agg, v int64) int64 { return agg - v }, "group-by-repartition")
		toLongs(t, "reduce")
		return t
	},
	"table-aggregate": func(*env) *stream.Topology {
		t := stream.NewTopology()
		dsl.Table(t, "table", "in", S, S, "table-store", opts)
		dsl.TableGroupBy(t, "group-by", S, func(k, v string) (string, string) { return v, k }, "table")
		stream.AddRepartition(t, "group-by-repartition", S, dsl.Changes[string](S), stream.RepartitionOptions{}, "group-by")
		dsl.TableAggregate(t, "aggregate", "aggregate-store", S, L, opts, func() int64 { return 100 },
			func(k, v string, agg int64) int64 { return agg + int64(len(v)) },
			func(k, v string, agg int64) int64 { return agg - int64(len(v)) }, "group-by-repartition")
		toLongs(t, "aggregate")
		return t
	},
}

// ---- the test ----

// TestSerdesMatchKafka checks serde.Int64 and serde.String against the bytes
// Kafka's LongSerializer and StringSerializer wrote (expected/_serdes.json),
// which the cases rely on: the Go side encodes inputs and decodes outputs
// with kgen's serdes, the Java side with Kafka's.
func TestSerdesMatchKafka(t *testing.T) {
	var f struct {
		Long []struct {
			Value int64  `json:"value"`
			Bytes string `json:"bytes"`
		} `json:"long"`
		String []struct {
			Value string `json:"value"`
			Bytes string `json:"bytes"`
		} `json:"string"`
		// The windowed serdes' samples: TestWindowedSerdesMatchKafka.
		TimeWindowed, SessionWindowed, WindowedRejected json.RawMessage
	}
	if err := readJSON("expected/_serdes.json", &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Long) == 0 || len(f.String) == 0 {
		t.Fatal("expected/_serdes.json has no samples")
	}
	for _, c := range f.Long {
		b, err := serde.Int64{}.Serialize(c.Value)
		if err != nil || hex.EncodeToString(b) != c.Bytes {
			t.Errorf("serde.Int64 writes %d as %x (%v), Kafka's LongSerializer as %s", c.Value, b, err, c.Bytes)
		}
		raw, _ := hex.DecodeString(c.Bytes)
		if v, err := (serde.Int64{}).Deserialize(raw); err != nil || v != c.Value {
			t.Errorf("serde.Int64 reads %s as %d (%v), want %d", c.Bytes, v, err, c.Value)
		}
	}
	for _, c := range f.String {
		b, err := serde.String{}.Serialize(c.Value)
		if err != nil || hex.EncodeToString(b) != c.Bytes {
			t.Errorf("serde.String writes %q as %x (%v), Kafka's StringSerializer as %s", c.Value, b, err, c.Bytes)
		}
		raw, _ := hex.DecodeString(c.Bytes)
		if v, err := (serde.String{}).Deserialize(raw); err != nil || v != c.Value {
			t.Errorf("serde.String reads %s as %q (%v), want %q", c.Bytes, v, err, c.Value)
		}
	}
}

// TestTwins checks that every topology of Topologies.java has its Go twin
// here, and the other way round.
func TestTwins(t *testing.T) {
	src, err := os.ReadFile("kstreams/src/main/java/dev/kgen/oracle/Topologies.java")
	if err != nil {
		t.Fatal(err)
	}
	java := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*case "([^"]+)":`).FindAllSubmatch(src, -1) {
		java[string(m[1])] = true
	}
	if len(java) == 0 {
		t.Fatal("found no topology in Topologies.java")
	}
	for name := range java {
		if topologies[name] == nil {
			t.Errorf("topology %q of Topologies.java has no Go twin in oracle_test.go", name)
		}
	}
	for name := range topologies {
		if !java[name] {
			t.Errorf("topology %q of oracle_test.go has no Java twin in Topologies.java", name)
		}
	}
}

// TestKafkaStreamsOracle runs every case of cases/ through kgen and compares
// what each output topic received with what Kafka Streams 4.4 produced
// (expected/, written by kstreams/ and checked by check.sh): with one
// partition the whole sequence of every topic, key, value and timestamp;
// with four the sequence of every key (its records share a partition) and
// so the multiset of records.
func TestKafkaStreamsOracle(t *testing.T) {
	files, err := filepath.Glob("cases/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files: %v", err)
	}
	exp, _ := filepath.Glob("expected/[^_]*.json")
	if len(exp) != len(files) {
		t.Errorf("%d case files but %d expected files: run bash oracle/check.sh --update", len(files), len(exp))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			var c caseFile
			if err := readJSON(f, &c); err != nil {
				t.Fatal(err)
			}
			if c.Name != name {
				t.Fatalf("case file %s names itself %q", f, c.Name)
			}
			var ks result
			if err := readJSON(filepath.Join("expected", name+".json"), &ks); err != nil {
				t.Fatalf("%v (run bash oracle/check.sh --update)", err)
			}
			want := ks
			if c.Differs != "" {
				if c.Kgen == nil {
					t.Fatalf("case %s differs from Kafka Streams (%s) but gives no \"kgen\" outputs", name, c.Differs)
				}
				want = *c.Kgen
				if equalResults(t, c, ks, want) {
					t.Errorf("case %s is marked as differing from Kafka Streams (%s), but its \"kgen\" outputs are Kafka Streams': drop the mark", name, c.Differs)
				}
			} else if c.Kgen != nil {
				t.Fatalf("case %s gives \"kgen\" outputs but no \"differs\" reason", name)
			}
			build, ok := topologies[c.Topology]
			if !ok {
				t.Fatalf("case %s: no Go topology %q", name, c.Topology)
			}
			for _, n := range partitionCounts(c) {
				runCase(t, c, want, n, build, func(topic string) string { return topic })
			}
		})
	}
}

// equalResults says whether two results have the same records on every topic.
func equalResults(t *testing.T, c caseFile, a, b result) bool {
	for _, topic := range c.Outputs {
		ra, err := records(a.Outputs[topic])
		if err != nil {
			t.Fatal(err)
		}
		rb, err := records(b.Outputs[topic])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ra, rb) {
			return false
		}
	}
	return slices.Equal(a.Peeked, b.Peeked)
}

// runCase runs case c through the topology build makes, whose topics are
// the case's topics as named by topic, and compares with want.
// It returns the records the topology dropped, by reason.
func runCase(t *testing.T, c caseFile, want result, partitions int32, build func(*env) *stream.Topology, topicOf func(string) string) map[stream.DropReason]uint64 {
	t.Helper()
	where := fmt.Sprintf("case %s, %d partition(s)", c.Name, partitions)
	e := &env{}
	d, err := stream.NewLocalDriver(build(e), stream.LocalConfig{
		AppID: "oracle", Partitions: partitions, StartTime: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	})
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	defer d.Close()
	for i, r := range c.Inputs {
		types, ok := c.Topics[r.Topic]
		if !ok {
			t.Fatalf("%s: input %d: topic %q has no types", where, i, r.Topic)
		}
		if types.Window != nil {
			t.Fatalf("%s: input %d: topic %q of windowed keys: inputs are never windowed", where, i, r.Topic)
		}
		k, err := encode(types.Key, r.Key)
		if err != nil {
			t.Fatalf("%s: input %d: key: %v", where, i, err)
		}
		v, err := encode(types.Value, r.Value)
		if err != nil {
			t.Fatalf("%s: input %d: value: %v", where, i, err)
		}
		// Every input carries one header, in=<its index>, as the Java runner
		// gives it.
		hs := []stream.Header{{Key: "in", Value: []byte(strconv.Itoa(i))}}
		if err := d.Pipe(topicOf(r.Topic), k, v, hs, time.UnixMilli(r.Timestamp)); err != nil {
			t.Fatalf("%s: input %d (%v): %v", where, i, r, err)
		}
	}
	for _, out := range c.Outputs {
		types, topic := c.Topics[out], out
		var got []rec
		for i, o := range d.Output(topicOf(out)) {
			k, win, err := decodeKey(types, o.Key)
			if err != nil {
				t.Fatalf("%s: topic %s: record %d: key: %v", where, topic, i, err)
			}
			v, err := decode(types.Value, o.Value)
			if err != nil {
				t.Fatalf("%s: topic %s: record %d: value: %v", where, topic, i, err)
			}
			var hs []string
			for _, h := range o.Headers {
				hs = append(hs, h.Key+"="+string(h.Value))
			}
			got = append(got, rec{Key: k, Value: v, Window: win, Timestamp: o.Timestamp.UnixMilli(), Headers: strings.Join(hs, " "), partition: o.Partition})
		}
		exp, err := records(want.Outputs[topic])
		if err != nil {
			t.Fatalf("%s: expected outputs of %s: %v", where, topic, err)
		}
		if partitions == 1 {
			compare(t, where+", topic "+topic, exp, got)
			continue
		}
		// Several partitions: order holds within a partition, so per key.
		// Records with a null key go to any partition (round-robin), so
		// they have no order: compared as a multiset.
		part := map[string]int32{}
		for _, r := range got {
			if r.Key == "null" {
				continue
			}
			if p, ok := part[r.Key]; ok && p != r.partition {
				t.Errorf("%s, topic %s: key %s on partitions %d and %d", where, topic, show(r.Key), p, r.partition)
			}
			part[r.Key] = r.partition
		}
		byKey := func(rs []rec) map[string][]rec {
			m := map[string][]rec{}
			for _, r := range rs {
				r.partition = 0
				m[r.Key] = append(m[r.Key], r)
			}
			return m
		}
		wk, gk := byKey(exp), byKey(got)
		keys := map[string]bool{}
		for k := range wk {
			keys[k] = true
		}
		for k := range gk {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			w, g := wk[k], gk[k]
			if k == "null" {
				byText := func(a, b rec) int { return strings.Compare(a.String(), b.String()) }
				w, g = slices.SortedFunc(slices.Values(w), byText), slices.SortedFunc(slices.Values(g), byText)
			}
			compare(t, where+", topic "+topic+", key "+show(k), w, g)
		}
	}
	if !slices.Equal(e.peeked, want.Peeked) {
		t.Errorf("%s: peek saw %q, want %q", where, e.peeked, want.Peeked)
	}
	return d.Dropped()
}

// compare reports the first difference of two record sequences, and the
// whole of both while they are short.
func compare(t *testing.T, where string, want, got []rec) {
	t.Helper()
	for i := range want {
		if i >= len(got) {
			t.Errorf("%s: record %d: want %v, got nothing (%d records, want %d)%s", where, i, want[i], len(got), len(want), both(want, got))
			return
		}
		g := got[i]
		g.partition = 0
		if g != want[i] {
			t.Errorf("%s: record %d: want %v, got %v%s", where, i, want[i], g, both(want, got))
			return
		}
	}
	if len(got) > len(want) {
		t.Errorf("%s: record %d: want nothing (%d records), got %v%s", where, len(want), len(want), got[len(want)], both(want, got))
	}
}

func both(want, got []rec) string {
	if len(want)+len(got) > 24 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n  want:")
	for _, r := range want {
		b.WriteString(" " + r.String())
	}
	b.WriteString("\n  got: ")
	for _, r := range got {
		r.partition = 0
		b.WriteString(" " + r.String())
	}
	return b.String()
}
