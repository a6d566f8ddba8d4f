package oracle_test

import (
	"time"

	"github.com/kgen-dev/kgen/runtime/dsl"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// The Go twins of Topologies.java's stream–stream joins (join-ss-*): the
// topics "left" and "right" joined in the same windows, "l|r" to "out",
// "null" for a missing side as Java's string concatenation writes it.
var (
	joinSS     = dsl.JoinWindowsOf(10 * time.Second).Grace(5 * time.Second)
	joinSSAsym = dsl.JoinWindowsOf(0).Before(5 * time.Second).After(10 * time.Second).Grace(2 * time.Second)
	joinSSOpts = dsl.StreamJoinOptions{Store: opts}
)

func ssOrNull[T any](p *T, show func(T) string) string {
	if p == nil {
		return "null"
	}
	return show(*p)
}

func joinSSTwin(kind string, w dsl.JoinWindows) func(*env) *stream.Topology {
	return func(*env) *stream.Topology {
		t := stream.NewTopology()
		stream.AddSource(t, "left", "left", S, S)
		stream.AddSource(t, "right", "right", S, S)
		id := func(s string) string { return s }
		switch kind {
		case "inner":
			dsl.JoinStreams(t, "join", w, S, S, S, joinSSOpts, func(_ string, l, r string) string { return l + "|" + r }, "left", "right")
		case "left":
			dsl.LeftJoinStreams(t, "join", w, S, S, S, joinSSOpts, func(_ string, l string, r *string) string { return l + "|" + ssOrNull(r, id) }, "left", "right")
		case "outer":
			dsl.OuterJoinStreams(t, "join", w, S, S, S, joinSSOpts, func(_ string, l, r *string) string { return ssOrNull(l, id) + "|" + ssOrNull(r, id) }, "left", "right")
		}
		stream.AddSink(t, "out", "out", S, S, "join")
		return t
	}
}

// joinSSNullable reads keys and values that may be null, so that the join
// itself sees (and drops, or passes on) the nulls, as Kafka Streams' does.
func joinSSNullable(kind string) func(*env) *stream.Topology {
	return func(*env) *stream.Topology {
		t := stream.NewTopology()
		stream.AddSource(t, "left", "left", NS, NS)
		stream.AddSource(t, "right", "right", NS, NS)
		str := func(s *string) string { return ssOrNull(s, func(s string) string { return s }) }
		switch kind {
		case "left":
			dsl.LeftJoinStreams(t, "join", joinSS, NS, NS, NS, joinSSOpts, func(_ *string, l *string, r **string) string { return str(l) + "|" + ssOrNull(r, str) }, "left", "right")
		case "outer":
			dsl.OuterJoinStreams(t, "join", joinSS, NS, NS, NS, joinSSOpts, func(_ *string, l, r **string) string { return ssOrNull(l, str) + "|" + ssOrNull(r, str) }, "left", "right")
		}
		stream.AddSink(t, "out", "out", NS, serde.Serde[string](S), "join")
		return t
	}
}

func init() {
	for name, build := range map[string]func(*env) *stream.Topology{
		"join-ss-inner":          joinSSTwin("inner", joinSS),
		"join-ss-left":           joinSSTwin("left", joinSS),
		"join-ss-outer":          joinSSTwin("outer", joinSS),
		"join-ss-outer-asym":     joinSSTwin("outer", joinSSAsym),
		"join-ss-inner-zero":     joinSSTwin("inner", dsl.JoinWindowsOf(0)),
		"join-ss-left-nullable":  joinSSNullable("left"),
		"join-ss-outer-nullable": joinSSNullable("outer"),
	} {
		topologies[name] = build
	}
	// The spec's join windows are not empty (before plus after positive),
	// and its joins take no nullable side yet.
	notGenerated = append(notGenerated, "join-ss-inner-zero", "join-ss-left-nullable", "join-ss-outer-nullable")
}
