package dsl_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// A grace period is refused where Kafka Streams refuses it (a table that
// is not versioned, a grace longer than the table's history) and so is a
// negative one or one without serdes: the task fails to start, naming the
// join and the mistake.
func TestStreamTableJoinGraceChecked(t *testing.T) {
	s := serde.String{}
	for _, tc := range []struct {
		name      string
		versioned bool
		grace     time.Duration
		serdes    bool
		want      string
	}{
		{"not versioned", false, time.Second, true, "needs a versioned table"},
		{"longer than the history", true, 2 * time.Minute, true, "longer than table store"},
		{"negative", true, -time.Second, true, "want 0 or more"},
		{"no serdes", true, time.Second, false, "needs the stream's key and value serdes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := stream.NewTopology()
			stream.AddSource(topo, "in", "in", s, s)
			if tc.versioned {
				dsl.VersionedTable(topo, "table", "table", s, s, "ts", time.Minute, stream.StoreOptions{})
			} else {
				dsl.Table(topo, "table", "table", s, s, "ts", stream.StoreOptions{})
			}
			var ks, vs serde.Serde[string]
			if tc.serdes {
				ks, vs = s, s
			}
			dsl.StreamTableJoinWith(topo, "join", "ts", ks, vs, dsl.StreamTableJoinOptions{Grace: tc.grace},
				func(_, v, row string) string { return v + "/" + row }, "in")
			stream.AddSink(topo, "out", "out", s, s, "join")
			d, err := stream.NewLocalDriver(topo, stream.LocalConfig{})
			if err == nil {
				defer d.Close()
				err = d.Pipe("in", []byte("k"), []byte("v"), nil, t0)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"join"`) {
				t.Fatalf("error %v, want one naming join and saying %q", err, tc.want)
			}
		})
	}
}

// With a grace period, a record with a nil key joins no row at once in a
// left join (Kafka Streams 4.4 fails on it: its buffer takes no null key)
// and is dropped by an inner join; a nil value is dropped by both and
// does not move the buffer's stream time. Headers, a nil header value
// among them, come out of the buffer as they went in.
func TestVersionedJoinGraceNullsAndHeaders(t *testing.T) {
	s := serde.String{}
	ns := dsl.Nullable[string](s)
	for _, left := range []bool{false, true} {
		topo := stream.NewTopology()
		stream.AddSource(topo, "in", "in", ns, ns)
		dsl.VersionedTable(topo, "table", "table", ns, s, "vt", time.Minute, stream.StoreOptions{})
		opts := dsl.StreamTableJoinOptions{Grace: 10 * time.Second}
		if left {
			dsl.StreamTableLeftJoinWith(topo, "join", "vt", ns, ns, opts,
				func(_ *string, v *string, row *string) string { return *v + "/" + orNull(row) }, "in")
		} else {
			dsl.StreamTableJoinWith(topo, "join", "vt", ns, ns, opts,
				func(_ *string, v *string, row string) string { return *v + "/" + row }, "in")
		}
		stream.AddSink(topo, "out", "out", ns, s, "join")
		d, _ := nullDriver(t, topo, 1)
		pipe := func(topic string, k, v []byte, at time.Duration, hs ...stream.Header) {
			t.Helper()
			if err := d.Pipe(topic, k, v, hs, t0.Add(at)); err != nil {
				t.Fatal(err)
			}
		}
		hs := []stream.Header{{Key: "a", Value: nil}, {Key: "b", Value: []byte{}}, {Key: "c", Value: []byte("x")}}
		pipe("table", []byte("k"), []byte("row"), 0)
		pipe("in", []byte("k"), []byte("v1"), time.Second, hs...)
		pipe("in", nil, []byte("v2"), 2*time.Second)
		pipe("in", []byte("k"), nil, time.Hour)
		pipe("in", []byte("k"), []byte("v3"), 11*time.Second)
		want := []string{"k=v1/row@1000"}
		dropped := map[stream.DropReason]uint64{stream.DropNullValue: 1}
		if left {
			want = []string{"=v2/null@2000", "k=v1/row@1000"}
		} else {
			dropped[stream.DropNullKey] = 1
		}
		out := d.Output("out")
		same(t, "join output", render(out, text), want)
		if diff := cmp.Diff(dropped, d.Dropped()); diff != "" {
			t.Errorf("left %v: dropped (-want +got):\n%s", left, diff)
		}
		for _, r := range out {
			if string(r.Key) != "k" {
				continue
			}
			got := slices.Clone(r.Headers)
			if len(got) != 3 || got[0].Value != nil || got[1].Value == nil || len(got[1].Value) != 0 || string(got[2].Value) != "x" ||
				got[0].Key != "a" || got[1].Key != "b" || got[2].Key != "c" {
				t.Errorf("left %v: headers %q, want a=nil b=empty c=x", left, got)
			}
		}
	}
}
