package dsl_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// counter is the hand-written processor form of dsl.Count.
type counter struct {
	store state.KeyValueStore[string, int64]
}

func (c *counter) Init(ctx *stream.Context[string, int64]) (err error) {
	c.store, err = stream.GetKeyValueStore[string, int64](ctx, "counts")
	return err
}

func (c *counter) Process(ctx *stream.Context[string, int64], r stream.Record[string, string]) error {
	n, _, err := c.store.Get(r.Key)
	if err != nil {
		return err
	}
	n++
	if err := c.store.Put(r.Key, n); err != nil {
		return err
	}
	ctx.Forward(stream.Record[string, int64]{Key: r.Key, Value: n, Timestamp: r.Timestamp, Headers: r.Headers})
	return nil
}

// The cost of the operator form of a count over the processor form, on one
// task's hot path (the LocalDriver, an in-memory store): the difference is
// what the operators add, the rest is shared.
func BenchmarkCount(b *testing.B) {
	s := serde.String{}
	forms := map[string]func() *stream.Topology{
		"processor": func() *stream.Topology {
			t := stream.NewTopology()
			stream.AddSource(t, "in", "in", s, s)
			stream.AddProcessor(t, "count", func() stream.Processor[string, string, string, int64] { return &counter{} }, "in")
			stream.AddKeyValueStore(t, "counts", s, serde.Int64{}, stream.StoreOptions{Changelog: true}, "count")
			stream.AddSink(t, "out", "out", s, serde.Int64{}, "count")
			return t
		},
		"operators": func() *stream.Topology {
			t := stream.NewTopology()
			stream.AddSource(t, "in", "in", s, s)
			dsl.Count[string, string](t, "count", "counts", s, stream.StoreOptions{Changelog: true}, "in")
			dsl.ToStream[string, int64](t, "updates", "count")
			stream.AddSink(t, "out", "out", s, dsl.Nullable[int64](serde.Int64{}), "updates")
			return t
		},
	}
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", i)
	}
	for _, form := range []string{"processor", "operators"} {
		b.Run(form, func(b *testing.B) {
			d, err := stream.NewLocalDriver(forms[form](), stream.LocalConfig{})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			value := []byte("v")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := d.Pipe("in", keys[i%len(keys)], value, nil, t0); err != nil {
					b.Fatal(err)
				}
				if i%1024 == 0 {
					d.Output("out")
					d.Changelog("counts")
				}
			}
		})
	}
}

// A windowed count per record, beside the plain count above: 1,000 keys, a
// record a millisecond, one-minute tumbling or sliding windows, every
// update or final results only (emitted as windows close).
func BenchmarkWindowedCount(b *testing.B) {
	s := serde.String{}
	for _, c := range []struct {
		name string
		w    dsl.Windows
		emit dsl.Emit
	}{
		{"tumbling/updates", dsl.TumblingWindows(time.Minute), dsl.EmitUpdates},
		{"tumbling/final", dsl.TumblingWindows(time.Minute), dsl.EmitFinal},
		{"sliding/updates", dsl.SlidingWindows(time.Minute, 0), dsl.EmitUpdates},
		{"sliding/final", dsl.SlidingWindows(time.Minute, 0), dsl.EmitFinal},
	} {
		w, emit := c.w, c.emit
		b.Run(c.name, func(b *testing.B) {
			t := stream.NewTopology()
			stream.AddSource(t, "in", "in", s, s)
			dsl.WindowedCount[string, string](t, "count", "counts", w, s, dsl.WindowOptions{Store: stream.StoreOptions{Changelog: true}, Emit: emit}, "in")
			dsl.ToStream[dsl.Windowed[string], int64](t, "updates", "count")
			stream.AddSink(t, "out", "out", dsl.WindowedKey(s, w), dsl.Nullable[int64](serde.Int64{}), "updates")
			d, err := stream.NewLocalDriver(t, stream.LocalConfig{})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			keys := make([][]byte, 1000)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "key-%d", i)
			}
			value := []byte("v")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := d.Pipe("in", keys[i%len(keys)], value, nil, t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
					b.Fatal(err)
				}
				if i%1024 == 0 {
					d.Output("out")
					d.Changelog("counts")
				}
			}
		})
	}
}

// A session count per record: 1,000 keys, a record a millisecond, a gap
// of 10 s (so each key's session grows), every update or final results.
func BenchmarkSessionCount(b *testing.B) {
	s := serde.String{}
	w := dsl.SessionWindows(10 * time.Second)
	for _, emit := range []dsl.Emit{dsl.EmitUpdates, dsl.EmitFinal} {
		b.Run(emit.String(), func(b *testing.B) {
			t := stream.NewTopology()
			stream.AddSource(t, "in", "in", s, s)
			dsl.SessionCount[string, string](t, "count", "sessions", w, s, dsl.WindowOptions{Store: stream.StoreOptions{Changelog: true}, Emit: emit}, "in")
			dsl.ToStream[dsl.Windowed[string], int64](t, "updates", "count")
			stream.AddSink(t, "out", "out", dsl.SessionKey(s), dsl.Nullable[int64](serde.Int64{}), "updates")
			d, err := stream.NewLocalDriver(t, stream.LocalConfig{})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			keys := make([][]byte, 1000)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "key-%d", i)
			}
			value := []byte("v")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := d.Pipe("in", keys[i%len(keys)], value, nil, t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
					b.Fatal(err)
				}
				if i%1024 == 0 {
					d.Output("out")
					d.Changelog("sessions")
				}
			}
		})
	}
}

// A stream–table join per record over 1,000 keys, a record a millisecond:
// the latest row of a plain table, the row as of the record's time in a
// versioned table, and that with a 1 s grace buffer (each record is put in
// the buffer, and leaves it 1,000 records later).
func BenchmarkStreamTableJoin(b *testing.B) {
	s := serde.String{}
	logged := stream.StoreOptions{Changelog: true}
	joiner := func(_, v, row string) string { return v + row }
	forms := map[string]func() *stream.Topology{
		"latest": func() *stream.Topology {
			t := stream.NewTopology()
			stream.AddSource(t, "in", "in", s, s)
			dsl.Table(t, "table", "table", s, s, "rows", logged)
			dsl.StreamTableJoinWithKey[string](t, "join", "rows", joiner, "in")
			stream.AddSink(t, "out", "out", s, s, "join")
			return t
		},
		"versioned": func() *stream.Topology {
			t := stream.NewTopology()
			stream.AddSource(t, "in", "in", s, s)
			dsl.VersionedTable(t, "table", "table", s, s, "rows", time.Hour, logged)
			dsl.StreamTableJoinWithKey[string](t, "join", "rows", joiner, "in")
			stream.AddSink(t, "out", "out", s, s, "join")
			return t
		},
		"versioned-grace": func() *stream.Topology {
			t := stream.NewTopology()
			stream.AddSource(t, "in", "in", s, s)
			dsl.VersionedTable(t, "table", "table", s, s, "rows", time.Hour, logged)
			dsl.StreamTableJoinWith(t, "join", "rows", s, s, dsl.StreamTableJoinOptions{Grace: time.Second, Store: logged}, joiner, "in")
			stream.AddSink(t, "out", "out", s, s, "join")
			return t
		},
	}
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", i)
	}
	for _, form := range []string{"latest", "versioned", "versioned-grace"} {
		b.Run(form, func(b *testing.B) {
			d, err := stream.NewLocalDriver(forms[form](), stream.LocalConfig{})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			for _, k := range keys {
				if err := d.Pipe("table", k, []byte("row"), nil, t0); err != nil {
					b.Fatal(err)
				}
			}
			value := []byte("v")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := d.Pipe("in", keys[i%len(keys)], value, nil, t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
					b.Fatal(err)
				}
				if i%1024 == 0 {
					d.Output("out")
					d.Changelog("rows")
					if form == "versioned-grace" {
						d.Changelog("join-Buffer")
					}
				}
			}
		})
	}
}
