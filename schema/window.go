package schema

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Window kinds of a windowed aggregation (window: on count, reduce or
// aggregate), as Kafka Streams names its windows.
const (
	WindowTumbling = "tumbling"
	WindowHopping  = "hopping"
	WindowSliding  = "sliding"
	WindowSession  = "session"
	// WindowJoin is a stream-stream join's window ({within: D} or
	// {before: B, after: A}), not one of the aggregation windows.
	WindowJoin = "join"
)

// WindowKinds lists the window kinds, as the spec spells them.
var WindowKinds = []string{WindowTumbling, WindowHopping, WindowSliding, WindowSession}

// Emission strategies of a windowed aggregation (emit:).
const (
	EmitUpdates = "updates"
	EmitFinal   = "final"
)

// Suppression kinds (until: of a suppress operator).
const (
	UntilWindowCloses = "window-closes"
	UntilTimeLimit    = "time-limit"
)

// Buffer policies of a suppress operator (buffer: {when-full: ...}).
const (
	WhenFullShutDown  = "shut-down"
	WhenFullEmitEarly = "emit-early"
)

// Dur is a duration written in the spec (a Go duration string: 30s, 5m,
// 1h30m), with where it was written; Pos.Line 0 means not written.
type Dur struct {
	Value time.Duration
	Pos   Pos
}

// Set says the duration was written.
func (d Dur) Set() bool { return d.Pos.Line > 0 }

// Window is the window: of a windowed aggregation:
//
//	{tumbling: 5m, grace: 30s}
//	{hopping: {size: 10m, advance: 5m}, grace: 30s}
//	{sliding: 1m, grace: 10s}             # the time difference
//	{session: 5m, grace: 1m}              # the inactivity gap; also {session: {gap: 5m}}
//
// Exactly one kind is given. Size is a tumbling or hopping window's size
// and a sliding window's time difference; Gap a session's inactivity gap.
type Window struct {
	// Kind is the kind's key, positioned where it was written.
	Kind    Str
	Size    Dur
	Advance Dur
	Gap     Dur
	Grace   Dur
	// Before and After are a join window's reach from a left record
	// (within: sets both), Kind then being WindowJoin.
	Before, After Dur
	Pos           Pos
}

// Suppress is a suppress operator's until: (what it waits for) and
// buffer: (how much it may hold).
type Suppress struct {
	// Until is window-closes or time-limit, positioned; Limit the time
	// limit of time-limit.
	Until Str
	Limit Dur
	// MaxRecords and MaxBytes bound the buffer, 0 for no bound;
	// WhenFull is shut-down (the default) or emit-early.
	MaxRecords    int64
	MaxBytes      int64
	WhenFull      Str
	BufferPos     Pos
	MaxRecordsPos Pos
	MaxBytesPos   Pos
}

// duration reads a Go duration string of whole milliseconds (the unit of
// record timestamps, which the windows are measured in): positive, or at
// least 0 when zero is allowed.
func (d *decoder) duration(n *yaml.Node, what string, zero bool) Dur {
	s := d.str(n, what)
	if s.Value == "" {
		return Dur{}
	}
	v, err := time.ParseDuration(s.Value)
	want := "a positive duration such as 30s or 5m"
	if zero {
		want = "a duration such as 0s, 30s or 5m"
	}
	switch {
	case err != nil:
		d.errs.add(s.Pos, "%s: want %s, got %q", what, want, s.Value)
		return Dur{}
	case v < 0 || v == 0 && !zero:
		d.errs.add(s.Pos, "%s: want %s, got %s, which is %s", what, want, s.Value, map[bool]string{true: "negative", false: "zero"}[v < 0])
		return Dur{}
	case v%time.Millisecond != 0:
		d.errs.add(s.Pos, "%s: %s is not a whole number of milliseconds, the unit of record timestamps", what, s.Value)
		return Dur{}
	}
	return Dur{Value: v, Pos: s.Pos}
}

// validDuration says s parses as a Go duration.
func validDuration(s string) bool {
	_, err := time.ParseDuration(s)
	return err == nil
}

// window reads an operator's window:.
func (d *decoder) window(n *yaml.Node, what string) *Window {
	what += ": window"
	w := &Window{Pos: d.pos(n)}
	kind := func(k *yaml.Node) bool {
		if w.Kind.Value != "" {
			d.errs.add(d.pos(k), "%s: both %s and %s: a window is of one kind (%s)", what, w.Kind.Value, k.Value, strings.Join(WindowKinds, ", "))
			return false
		}
		w.Kind = Str{Value: k.Value, Pos: d.pos(k)}
		return true
	}
	joinKind := func(k *yaml.Node) bool {
		if w.Kind.Value != "" {
			d.errs.add(d.pos(k), "%s: both %s and %s: a window is of one kind (%s, or a join's within or before/after)", what, w.Kind.Value, k.Value, strings.Join(WindowKinds, ", "))
			return false
		}
		w.Kind = Str{Value: WindowJoin, Pos: d.pos(k)}
		return true
	}
	if !d.mapping(n, what, []field{
		{WindowTumbling, func(k, v *yaml.Node) {
			if kind(k) {
				w.Size = d.duration(v, what+": tumbling (the windows' size)", false)
			}
		}},
		{WindowHopping, func(k, v *yaml.Node) {
			if !kind(k) {
				return
			}
			hw := what + ": hopping"
			if d.mapping(v, hw, []field{
				{"size", func(_, v *yaml.Node) { w.Size = d.duration(v, hw+": size", false) }},
				{"advance", func(_, v *yaml.Node) { w.Advance = d.duration(v, hw+": advance", false) }},
			}) {
				if w.Size.Set() && w.Advance.Set() && w.Advance.Value > w.Size.Value {
					d.errs.add(w.Advance.Pos, "%s: advance %s is longer than the size %s: hopping windows start every advance and must overlap or touch (for gaps between windows, filter)", hw, DurationText(w.Advance.Value), DurationText(w.Size.Value))
				}
				if d.present(v, "size") && d.present(v, "advance") {
					return
				}
				d.errs.add(d.pos(v), "%s: want {size: DURATION, advance: DURATION}", hw)
			}
		}},
		{WindowSliding, func(k, v *yaml.Node) {
			if kind(k) {
				w.Size = d.duration(v, what+": sliding (the time difference)", false)
			}
		}},
		{WindowSession, func(k, v *yaml.Node) {
			if !kind(k) {
				return
			}
			sw := what + ": session"
			if v.Kind == yaml.MappingNode {
				if d.mapping(v, sw, []field{
					{"gap", func(_, v *yaml.Node) { w.Gap = d.duration(v, sw+": gap", false) }},
				}) && !d.present(v, "gap") {
					d.errs.add(d.pos(v), "%s: want {gap: DURATION} (the inactivity gap)", sw)
				}
				return
			}
			w.Gap = d.duration(v, sw+" (the inactivity gap)", false)
		}},
		{"grace", func(_, v *yaml.Node) { w.Grace = d.duration(v, what+": grace", true) }},
		// A stream-stream join's window: within, or before and after.
		{"within", func(k, v *yaml.Node) {
			if joinKind(k) {
				w.Before = d.duration(v, what+": within (the time difference)", false)
				w.After = w.Before
			}
		}},
		{"before", func(k, v *yaml.Node) {
			if w.Kind.Value == WindowJoin && w.Before.Set() && w.After.Value == w.Before.Value && w.After.Pos == w.Before.Pos {
				d.errs.add(d.pos(k), "%s: both within and before: within sets before and after", what)
				return
			}
			if w.Kind.Value == "" || w.Kind.Value == WindowJoin {
				w.Kind = cmpStr(w.Kind, Str{Value: WindowJoin, Pos: d.pos(k)})
				w.Before = d.duration(v, what+": before", true)
				return
			}
			joinKind(k)
		}},
		{"after", func(k, v *yaml.Node) {
			if w.Kind.Value == WindowJoin && w.After.Set() && w.After.Pos == w.Before.Pos {
				d.errs.add(d.pos(k), "%s: both within and after: within sets before and after", what)
				return
			}
			if w.Kind.Value == "" || w.Kind.Value == WindowJoin {
				w.Kind = cmpStr(w.Kind, Str{Value: WindowJoin, Pos: d.pos(k)})
				w.After = d.duration(v, what+": after", true)
				return
			}
			joinKind(k)
		}},
	}) {
		return w
	}
	if w.Kind.Value == WindowJoin && w.Before.Value+w.After.Value <= 0 {
		d.errs.add(w.Kind.Pos, "%s: a join window needs a positive before plus after (within: D, or before: B and after: A)", what)
	}
	if w.Kind.Value == "" {
		d.errs.add(w.Pos, "%s: say its kind: {tumbling: SIZE}, {hopping: {size: SIZE, advance: ADVANCE}}, {sliding: DIFFERENCE} or {session: GAP}, with grace: DURATION", what)
	}
	return w
}

// present says mapping n has key k.
func (d *decoder) present(n *yaml.Node, k string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			return true
		}
	}
	return false
}

// until reads a suppress operator's until: window-closes, or
// {time-limit: DURATION}.
func (d *decoder) until(n *yaml.Node, what string, s *Suppress) {
	what += ": until"
	if n.Kind == yaml.MappingNode {
		if d.mapping(n, what, []field{
			{UntilTimeLimit, func(k, v *yaml.Node) {
				s.Until = Str{Value: UntilTimeLimit, Pos: d.pos(k)}
				s.Limit = d.duration(v, what+": time-limit", true)
			}},
		}) && s.Until.Value == "" {
			d.errs.add(d.pos(n), "%s: want window-closes or {time-limit: DURATION}", what)
		}
		return
	}
	s.Until = d.str(n, what)
	switch s.Until.Value {
	case "", UntilWindowCloses:
	case UntilTimeLimit:
		d.errs.add(s.Until.Pos, "%s: say the limit: {time-limit: DURATION}", what)
		s.Until.Value = ""
	default:
		d.errs.add(s.Until.Pos, "%s: want window-closes or {time-limit: DURATION}, got %q%s", what, s.Until.Value, Suggest(s.Until.Value, []string{UntilWindowCloses}))
		s.Until.Value = ""
	}
}

// buffer reads a suppress operator's buffer:.
func (d *decoder) buffer(n *yaml.Node, what string, s *Suppress) {
	what += ": buffer"
	s.BufferPos = d.pos(n)
	count := func(v *yaml.Node, key string) (int64, Pos) {
		if !d.kind(v, yaml.ScalarNode, what+": "+key, "a number") {
			return 0, d.pos(v)
		}
		x, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil || x < 1 {
			d.errs.add(d.pos(v), "%s: %s: want a positive whole number, got %s", what, key, describe(v))
			return 0, d.pos(v)
		}
		return x, d.pos(v)
	}
	d.mapping(n, what, []field{
		{"max-records", func(_, v *yaml.Node) { s.MaxRecords, s.MaxRecordsPos = count(v, "max-records") }},
		{"max-bytes", func(_, v *yaml.Node) { s.MaxBytes, s.MaxBytesPos = count(v, "max-bytes") }},
		{"when-full", func(_, v *yaml.Node) {
			s.WhenFull = d.str(v, what+": when-full")
			switch s.WhenFull.Value {
			case "", WhenFullShutDown, WhenFullEmitEarly:
			default:
				d.errs.add(s.WhenFull.Pos, "%s: when-full: want shut-down or emit-early, got %q%s", what, s.WhenFull.Value, Suggest(s.WhenFull.Value, []string{WhenFullShutDown, WhenFullEmitEarly}))
			}
		}},
	})
}

// DurationText writes d as a spec would: 5m rather than 5m0s, 1h rather
// than 1h0m0s.
func DurationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// String writes w as the spec would, for messages.
func (w *Window) String() string {
	if w == nil {
		return "no window"
	}
	var s string
	switch w.Kind.Value {
	case WindowHopping:
		s = fmt.Sprintf("hopping: {size: %s, advance: %s}", DurationText(w.Size.Value), DurationText(w.Advance.Value))
	case WindowSession:
		s = "session: " + DurationText(w.Gap.Value)
	case WindowJoin:
		s = fmt.Sprintf("before: %s, after: %s", DurationText(w.Before.Value), DurationText(w.After.Value))
	default:
		s = w.Kind.Value + ": " + DurationText(w.Size.Value)
	}
	return "{" + s + ", grace: " + DurationText(w.Grace.Value) + "}"
}

// cmpStr keeps a kind already set (where it was first written), else takes s.
func cmpStr(old, s Str) Str {
	if old.Value != "" {
		return old
	}
	return s
}
