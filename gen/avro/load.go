// Package avro is the Avro path of the kgen generator. Load reads .avsc
// schema files into kgen's intermediate model (parsing and validating them
// with github.com/hamba/avro/v2), and Emit writes Go types for them with
// straight-line Avro binary codecs that depend only on
// github.com/kgen-dev/kgen/runtime/serde/avro, never on an Avro library.
package avro

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	havro "github.com/hamba/avro/v2"

	"github.com/kgen-dev/kgen/gen/model"
)

// Load parses the Avro schema files and returns every named type they
// declare, keyed by Avro full name ("com.example.Order") and, when no other
// type has the same short name, by short name ("Order"). Named types may
// refer to types of other files in any order. All problems found are
// reported together, each as "file.avsc:LINE:COL: message".
//
// Records, enums and fixed types become model Records, Enums and Fixed;
// ["null", T] and [T, "null"] become Optional (NullIndex tells which); any
// other union becomes a Union named after the record field holding it
// ("Interop" field "unionField" -> "InteropUnionField"). Logical types date,
// timestamp-millis, timestamp-micros, uuid and decimal (bytes or fixed) map
// to Date, Timestamp, UUID and Decimal; other logical types keep their
// underlying Avro type, and a known logical type on the wrong Avro type is an
// error. A field of type "null" has a Type with Null set and Kind 0.
func Load(files []string) (*model.Universe, error) {
	datas := make([][]byte, len(files))
	var errs []error
	for i, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			errs = append(errs, &Error{file: i, err: fmt.Errorf("%s: %w", name, err)})
			continue
		}
		datas[i] = data
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return load(files, datas)
}

// load is Load on file contents already read.
func load(names []string, datas [][]byte) (*model.Universe, error) {
	l := &loader{defs: map[string]*def{}, types: map[string]*model.Type{}}
	for i, name := range names {
		data := datas[i]
		f := &file{name: name, data: data, index: i}
		root, err := parseJSON(data)
		if err != nil {
			var je *jsonError
			if errors.As(err, &je) {
				l.errorf(f, je.off, "%s", je.msg)
			} else {
				l.errs = append(l.errs, fmt.Errorf("%s: %w", name, err))
			}
			continue
		}
		f.root = root
		l.files = append(l.files, f)
		l.walk(f, root, "")
	}
	if len(l.files) < len(names) {
		// a file that does not parse declares nothing: unknown names would
		// only repeat its error
		return nil, l.joined()
	}
	for _, r := range l.refs {
		if l.defs[r.full] == nil {
			l.errorf(r.file, r.off, "unknown type %q", r.full)
		}
	}
	if len(l.errs) > 0 {
		return nil, l.joined()
	}
	l.parse()
	if len(l.errs) > 0 {
		return nil, l.joined()
	}
	l.nameTypes()
	if len(l.errs) > 0 {
		return nil, l.joined()
	}
	u := &model.Universe{Types: map[string]*model.Type{}}
	for _, f := range l.files {
		// a file may hold a union of named types: declare each
		if us, ok := f.schema.(*havro.UnionSchema); ok {
			for _, b := range us.Types() {
				l.build(b, "", "")
			}
			continue
		}
		l.build(f.schema, "", "")
	}
	shorts := map[string]int{}
	for full := range l.defs {
		shorts[shortName(full)]++
	}
	for full := range l.defs {
		t := l.types[full]
		if t == nil {
			continue
		}
		u.Types[full] = t
		if s := shortName(full); s != full && shorts[s] == 1 {
			u.Types[s] = t
		}
	}
	if len(l.errs) > 0 {
		return nil, l.joined()
	}
	return u, nil
}

// Types lists the distinct types of u that Emit declares (records, enums,
// fixed), sorted by Go name: what to pass to Emit to generate everything Load
// found.
func Types(u *model.Universe) []*model.Type {
	seen := map[*model.Type]bool{}
	var out []*model.Type
	for _, t := range u.Types {
		if t.IsNamed() && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

type file struct {
	index  int
	name   string
	data   []byte
	root   *node
	schema havro.Schema
}

func (f *file) pos(off int) model.Pos {
	line, col := lineCol(f.data, off)
	return model.Pos{File: f.name, Line: line, Col: col}
}

// def is one named type declared in a file.
type def struct {
	full   string
	file   *file
	off    int // of the name
	obj    *object
	goName string
}

type ref struct {
	full string
	file *file
	off  int
}

type loader struct {
	files []*file
	defs  map[string]*def
	refs  []ref
	errs  []error
	types map[string]*model.Type // by Avro full name
	// goNames holds every Go type name in use, to detect clashes.
	goNames map[string]string
}

func (l *loader) errorf(f *file, off int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.errs = append(l.errs, &Error{Pos: f.pos(off), Msg: msg, file: f.index, off: off})
}

// Error is one problem in a schema file, at its place. Load joins them
// (errors.Join); callers take them apart with errors.As on each, and so
// never parse positions back out of text. An Error with no Pos (an
// unreadable file) wraps its cause.
type Error struct {
	Pos model.Pos // zero when the problem has no place in a file
	Msg string

	file, off int   // for sorting
	err       error // the cause of an Error without a place
}

func (e *Error) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return e.Pos.String() + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.err }

// joined returns all errors in the order of the files and of their place in
// each file.
func (l *loader) joined() error {
	key := func(err error) (int, int) {
		if pe, ok := err.(*Error); ok {
			return pe.file, pe.off
		}
		return math.MaxInt, 0
	}
	sort.SliceStable(l.errs, func(i, j int) bool {
		fi, oi := key(l.errs[i])
		fj, oj := key(l.errs[j])
		return fi < fj || fi == fj && oi < oj
	})
	return errors.Join(l.errs...)
}

var primitives = map[string]bool{
	"null": true, "boolean": true, "int": true, "long": true, "float": true,
	"double": true, "bytes": true, "string": true,
}

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func fullName(ns, name string) string {
	if ns == "" || strings.Contains(name, ".") {
		return name
	}
	return ns + "." + name
}

func validFullName(full string) bool {
	for _, p := range strings.Split(full, ".") {
		if !nameRE.MatchString(p) {
			return false
		}
	}
	return true
}

// walk indexes definitions and references of one schema and checks what
// hamba/avro would accept silently or report without a position.
func (l *loader) walk(f *file, n *node, ns string) {
	switch v := n.val.(type) {
	case string:
		if !primitives[v] {
			l.refs = append(l.refs, ref{fullName(ns, v), f, n.off})
		}
	case []*node:
		seen := map[string]bool{}
		for _, b := range v {
			if _, ok := b.val.([]*node); ok {
				l.errorf(f, b.off, "a union may not directly contain a union")
				continue
			}
			if k := branchKey(b, ns); k != "" {
				if seen[k] {
					l.errorf(f, b.off, "union has two branches of type %s", k)
				}
				seen[k] = true
			}
			l.walk(f, b, ns)
		}
	case *object:
		tn := v.get("type")
		if tn == nil {
			l.errorf(f, n.off, "schema object has no \"type\"")
			return
		}
		ts, ok := tn.str()
		if !ok {
			if _, isUnion := tn.val.([]*node); isUnion {
				l.walk(f, tn, ns)
				return
			}
			l.errorf(f, tn.off, "\"type\" must be a type name")
			return
		}
		switch ts {
		case "record", "error", "enum", "fixed":
			l.named(f, n, v, ts, ns)
		case "array":
			if it := v.get("items"); it != nil {
				l.walk(f, it, ns)
			} else {
				l.errorf(f, n.off, "array has no \"items\"")
			}
		case "map":
			if it := v.get("values"); it != nil {
				l.walk(f, it, ns)
			} else {
				l.errorf(f, n.off, "map has no \"values\"")
			}
		default:
			if !primitives[ts] {
				l.refs = append(l.refs, ref{fullName(ns, ts), f, tn.off})
				return
			}
			l.checkLogical(f, v, ts, 0)
		}
	default:
		l.errorf(f, n.off, "a schema must be a type name, an object or a union")
	}
}

// branchKey is what must be unique among the branches of a union: the type
// name, with the logical type of an unnamed type (as hamba/avro tells them
// apart), or the full name of a named type.
func branchKey(n *node, ns string) string {
	if s, ok := n.str(); ok {
		if primitives[s] {
			return s
		}
		return fullName(ns, s)
	}
	o := n.obj()
	if o == nil || o.get("type") == nil {
		return ""
	}
	ts, _ := o.get("type").str()
	switch ts {
	case "record", "error", "enum", "fixed":
		name, _ := o.get("name").str()
		if nsn := o.get("namespace"); nsn != nil && !strings.Contains(name, ".") {
			ns, _ = nsn.str()
		}
		return fullName(ns, name)
	}
	if primitives[ts] {
		if lt := o.get("logicalType"); lt != nil {
			s, _ := lt.str()
			return ts + "." + s
		}
		return ts
	}
	if ts == "array" || ts == "map" {
		return ts
	}
	return fullName(ns, ts)
}

func (l *loader) named(f *file, n *node, v *object, kind, ns string) {
	nn := v.get("name")
	name, ok := "", false
	if nn != nil {
		name, ok = nn.str()
	}
	if !ok || name == "" {
		l.errorf(f, n.off, "%s has no \"name\"", kind)
		return
	}
	if nsn := v.get("namespace"); nsn != nil {
		if s, ok := nsn.str(); ok && !strings.Contains(name, ".") {
			ns = s
		}
	}
	full := fullName(ns, name)
	if !validFullName(full) {
		l.errorf(f, nn.off, "invalid name %q", full)
		return
	}
	if primitives[full] {
		l.errorf(f, nn.off, "%q is a primitive type name", full)
		return
	}
	if d := l.defs[full]; d != nil {
		l.errorf(f, nn.off, "duplicate name %q (first declared at %s)", full, d.file.pos(d.off))
		return
	}
	l.defs[full] = &def{full: full, file: f, off: nn.off, obj: v}
	ns = namespaceOf(full)
	switch kind {
	case "record", "error":
		fn := v.get("fields")
		fields, ok := []*node(nil), false
		if fn != nil {
			fields, ok = fn.val.([]*node)
		}
		if !ok {
			l.errorf(f, n.off, "record %q has no \"fields\" array", full)
			return
		}
		seen := map[string]bool{}
		for _, fld := range fields {
			o := fld.obj()
			if o == nil {
				l.errorf(f, fld.off, "field of record %q must be an object", full)
				continue
			}
			fname := ""
			if x := o.get("name"); x != nil {
				fname, _ = x.str()
			}
			if !nameRE.MatchString(fname) {
				l.errorf(f, fld.off, "record %q: invalid field name %q", full, fname)
				continue
			}
			if seen[fname] {
				l.errorf(f, o.get("name").off, "record %q: duplicate field %q", full, fname)
				continue
			}
			seen[fname] = true
			t := o.get("type")
			if t == nil {
				l.errorf(f, fld.off, "field %s.%s has no \"type\"", full, fname)
				continue
			}
			l.walk(f, t, ns)
		}
	case "enum":
		sn := v.get("symbols")
		syms, ok := []*node(nil), false
		if sn != nil {
			syms, ok = sn.val.([]*node)
		}
		if !ok || len(syms) == 0 {
			l.errorf(f, n.off, "enum %q needs a non-empty \"symbols\" array", full)
			return
		}
		seen := map[string]bool{}
		for _, s := range syms {
			sym, _ := s.str()
			switch {
			case !nameRE.MatchString(sym):
				l.errorf(f, s.off, "enum %q: invalid symbol %q", full, sym)
			case seen[sym]:
				l.errorf(f, s.off, "enum %q: duplicate symbol %q", full, sym)
			}
			seen[sym] = true
		}
	case "fixed":
		sn := v.get("size")
		size := -1
		if sn != nil {
			if num, ok := sn.val.(json.Number); ok {
				if i, err := num.Int64(); err == nil && i >= 0 && i <= math.MaxInt32 {
					size = int(i)
				}
			}
		}
		if size < 0 {
			l.errorf(f, n.off, "fixed %q needs a non-negative integer \"size\"", full)
			return
		}
		l.checkLogical(f, v, "fixed", size)
	}
}

// checkLogical rejects a logical type of the Avro specification that is set
// on the wrong type or has invalid parameters; unknown logical types are
// ignored, as the specification asks.
func (l *loader) checkLogical(f *file, v *object, base string, size int) {
	ln := v.get("logicalType")
	if ln == nil {
		return
	}
	lt, ok := ln.str()
	if !ok {
		l.errorf(f, ln.off, "logicalType must be a string")
		return
	}
	want := map[string]string{
		"date": "int", "time-millis": "int", "time-micros": "long",
		"timestamp-millis": "long", "timestamp-micros": "long", "timestamp-nanos": "long",
		"local-timestamp-millis": "long", "local-timestamp-micros": "long", "local-timestamp-nanos": "long",
		"uuid": "string", "duration": "fixed",
	}
	if lt == "decimal" {
		if base != "bytes" && base != "fixed" {
			l.errorf(f, ln.off, "logical type decimal needs bytes or fixed, not %s", base)
			return
		}
		prec, pok := intProp(v, "precision")
		scale, sok := intProp(v, "scale")
		if v.get("scale") == nil {
			scale, sok = 0, true
		}
		switch {
		case !pok || prec <= 0:
			l.errorf(f, ln.off, "decimal needs a positive integer precision")
		case !sok || scale < 0 || scale > prec:
			l.errorf(f, ln.off, "decimal scale must be an integer from 0 to the precision %d", prec)
		case base == "fixed" && prec > maxPrecision(size):
			l.errorf(f, ln.off, "decimal precision %d does not fit in fixed of %d bytes (at most %d)", prec, size, maxPrecision(size))
		}
		return
	}
	if w, ok := want[lt]; ok && w != base {
		l.errorf(f, ln.off, "logical type %s needs %s, not %s", lt, w, base)
	}
	if lt == "duration" && base == "fixed" && size != 12 {
		l.errorf(f, ln.off, "logical type duration needs fixed of size 12, not %d", size)
	}
}

func maxPrecision(size int) int {
	return int(math.Floor(math.Log10(math.Pow(2, 8*float64(size)-1) - 1)))
}

func intProp(v *object, k string) (int, bool) {
	n := v.get(k)
	if n == nil {
		return 0, false
	}
	num, ok := n.val.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := num.Int64()
	return int(i), err == nil && i >= math.MinInt32 && i <= math.MaxInt32
}

// parse runs hamba/avro over the files, retrying those that refer to types
// of files not parsed yet, so the order of the files does not matter.
func (l *loader) parse() {
	cache := &havro.SchemaCache{}
	pending := slices.Clone(l.files)
	errs := map[*file]error{}
	for len(pending) > 0 {
		var next []*file
		for _, f := range pending {
			s, err := havro.ParseBytesWithCache(f.data, "", cache)
			if err != nil {
				errs[f] = err
				next = append(next, f)
				continue
			}
			f.schema = s
		}
		if len(next) == len(pending) {
			for _, f := range next {
				msg := strings.TrimPrefix(errs[f].Error(), "avro: ")
				if off, ok := placeOf(f, msg); ok {
					l.errorf(f, off, "%s", msg)
					continue
				}
				l.errs = append(l.errs, &Error{Pos: model.Pos{File: f.name}, Msg: msg, file: f.index})
			}
			return
		}
		pending = next
	}
}

var fieldRE = regexp.MustCompile(`field "?([A-Za-z_][A-Za-z0-9_]*)`)

// placeOf finds where in f a hamba/avro error about a field points: the
// field's default if it has one, else its name.
func placeOf(f *file, msg string) (int, bool) {
	m := fieldRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, false
	}
	var find func(n *node) (int, bool)
	find = func(n *node) (int, bool) {
		switch v := n.val.(type) {
		case []*node:
			for _, e := range v {
				if off, ok := find(e); ok {
					return off, true
				}
			}
		case *object:
			var fields []*node
			if fn := v.get("fields"); fn != nil {
				fields, _ = fn.val.([]*node)
			}
			for _, fn := range fields {
				o := fn.obj()
				if o == nil || o.get("name") == nil {
					continue
				}
				if name, _ := o.get("name").str(); name == m[1] {
					if d := o.get("default"); d != nil {
						return d.off, true
					}
					return o.get("name").off, true
				}
			}
			for _, e := range v.vals {
				if off, ok := find(e); ok {
					return off, true
				}
			}
		}
		return 0, false
	}
	return find(f.root)
}

// nameTypes gives every named type its Go name: the short Avro name, or the
// full name when two namespaces declare the same short name.
func (l *loader) nameTypes() {
	shorts := map[string]int{}
	for full := range l.defs {
		shorts[shortName(full)]++
	}
	fulls := make([]string, 0, len(l.defs))
	for full := range l.defs {
		fulls = append(fulls, full)
	}
	sort.Strings(fulls)
	l.goNames = map[string]string{}
	for _, full := range fulls {
		d := l.defs[full]
		d.goName = GoName(shortName(full))
		if shorts[shortName(full)] > 1 {
			d.goName = GoName(full)
		}
		if other, ok := l.goNames[d.goName]; ok {
			l.errorf(d.file, d.off, "Go name %s of %q is also the Go name of %q", d.goName, full, other)
			continue
		}
		l.goNames[d.goName] = full
	}
}

// build converts a parsed schema into a model type. owner is the Go name a
// union found here is given, path its synthetic full name.
func (l *loader) build(s havro.Schema, owner, path string) *model.Type {
	switch s := s.(type) {
	case *havro.RefSchema:
		return l.build(s.Schema(), owner, path)
	case *havro.NullSchema:
		return &model.Type{Null: true}
	case *havro.PrimitiveSchema:
		return primitive(s)
	case *havro.ArraySchema:
		return &model.Type{Kind: model.Array, Elem: l.build(s.Items(), owner+"Item", path+".items")}
	case *havro.MapSchema:
		return &model.Type{Kind: model.Map, Elem: l.build(s.Values(), owner+"Value", path+".values")}
	case *havro.UnionSchema:
		return l.union(s, owner, path)
	case *havro.RecordSchema:
		return l.record(s)
	case *havro.EnumSchema:
		if t := l.types[s.FullName()]; t != nil {
			return t
		}
		d := l.defs[s.FullName()]
		t := &model.Type{Kind: model.Enum, Name: d.goName, FullName: s.FullName(), Doc: s.Doc(),
			Symbols: slices.Clone(s.Symbols()), Pos: d.file.pos(d.off)}
		l.types[s.FullName()] = t
		t.Schema = schemaJSON(s, l)
		return t
	case *havro.FixedSchema:
		if t := l.types[s.FullName()]; t != nil {
			return t
		}
		d := l.defs[s.FullName()]
		t := &model.Type{Kind: model.Fixed, Name: d.goName, FullName: s.FullName(), Size: s.Size(), Pos: d.file.pos(d.off)}
		if dec, ok := s.Logical().(*havro.DecimalLogicalSchema); ok {
			t.Kind, t.Name = model.Decimal, ""
			t.Precision, t.Scale = dec.Precision(), dec.Scale()
		}
		l.types[s.FullName()] = t
		t.Schema = schemaJSON(s, l)
		return t
	}
	return &model.Type{}
}

func primitive(s *havro.PrimitiveSchema) *model.Type {
	var lt havro.LogicalType
	if s.Logical() != nil {
		lt = s.Logical().Type()
	}
	switch s.Type() {
	case havro.String:
		if lt == havro.UUID {
			return &model.Type{Kind: model.UUID}
		}
		return &model.Type{Kind: model.String}
	case havro.Bytes:
		if dec, ok := s.Logical().(*havro.DecimalLogicalSchema); ok {
			return &model.Type{Kind: model.Decimal, Precision: dec.Precision(), Scale: dec.Scale()}
		}
		return &model.Type{Kind: model.Bytes}
	case havro.Int:
		if lt == havro.Date {
			return &model.Type{Kind: model.Date}
		}
		return &model.Type{Kind: model.Int32}
	case havro.Long:
		switch lt {
		case havro.TimestampMillis:
			return &model.Type{Kind: model.Timestamp, Unit: model.Millis}
		case havro.TimestampMicros:
			return &model.Type{Kind: model.Timestamp, Unit: model.Micros}
		}
		return &model.Type{Kind: model.Int64}
	case havro.Float:
		return &model.Type{Kind: model.Float32}
	case havro.Double:
		return &model.Type{Kind: model.Float64}
	case havro.Boolean:
		return &model.Type{Kind: model.Bool}
	}
	return &model.Type{}
}

func (l *loader) union(s *havro.UnionSchema, owner, path string) *model.Type {
	types := s.Types()
	if s.Nullable() {
		nullIdx, typIdx := s.Indices()
		return &model.Type{Kind: model.Optional, NullIndex: nullIdx, Elem: l.build(types[typIdx], owner, path)}
	}
	t := &model.Type{Kind: model.Union, Name: owner, FullName: path}
	for _, b := range types {
		var v *model.Type
		if b.Type() == havro.Null {
			v = &model.Type{Null: true}
		} else {
			// only array and map branches can hold unions of their own:
			// those are named after the branch's wrapper type
			sub := owner
			switch b.Type() {
			case havro.Array:
				sub += "Array"
			case havro.Map:
				sub += "Map"
			}
			v = l.build(b, sub, path)
		}
		t.Variants = append(t.Variants, v)
	}
	if o, ok := l.goNames[owner]; ok {
		l.errs = append(l.errs, fmt.Errorf("%s: Go name %s of the union of %s is also the Go name of %q", l.posOf(path), owner, path, o))
	}
	l.goNames[owner] = path
	return t
}

func (l *loader) posOf(path string) model.Pos {
	for full := path; full != ""; full = namespaceOf(full) {
		if d := l.defs[full]; d != nil {
			return d.file.pos(d.off)
		}
	}
	return model.Pos{}
}

func (l *loader) record(s *havro.RecordSchema) *model.Type {
	if t := l.types[s.FullName()]; t != nil {
		return t
	}
	d := l.defs[s.FullName()]
	t := &model.Type{Kind: model.Record, Name: d.goName, FullName: s.FullName(), Doc: s.Doc(), Pos: d.file.pos(d.off)}
	l.types[s.FullName()] = t
	fieldNodes := map[string]*object{}
	if fn := d.obj.get("fields"); fn != nil {
		fields, _ := fn.val.([]*node)
		for _, n := range fields {
			if o := n.obj(); o != nil {
				if name, ok := o.get("name").str(); ok {
					fieldNodes[name] = o
				}
			}
		}
	}
	used := map[string]bool{"AppendAvro": true, "DecodeAvro": true}
	for _, hf := range s.Fields() {
		name := GoName(hf.Name())
		for used[name] {
			name += "_"
		}
		used[name] = true
		f := &model.Field{Name: name, WireName: hf.Name(), Doc: hf.Doc()}
		if o := fieldNodes[hf.Name()]; o != nil {
			f.Pos = d.file.pos(o.get("name").off)
			if dn := o.get("default"); dn != nil {
				f.Default, f.HasDefault = dn.plain(), true
			}
		}
		f.Type = l.build(hf.Type(), t.Name+name, s.FullName()+"."+hf.Name())
		t.Fields = append(t.Fields, f)
	}
	t.Schema = schemaJSON(s, l)
	return t
}

// schemaJSON writes the full schema of a named type with every named type it
// uses declared inline at its first use, so it stands alone in a schema
// registry. Names are written in full, without "namespace" attributes.
func schemaJSON(s havro.Schema, l *loader) string {
	var b bytes.Buffer
	writeSchema(&b, s, map[string]bool{}, l)
	return b.String()
}

func writeSchema(b *bytes.Buffer, s havro.Schema, seen map[string]bool, l *loader) {
	str := func(s string) { b.WriteString(strconv.Quote(s)) }
	lit := func(v any) {
		j, _ := json.Marshal(v)
		b.Write(j)
	}
	if r, ok := s.(*havro.RefSchema); ok {
		s = r.Schema()
	}
	if n, ok := s.(havro.NamedSchema); ok {
		if seen[n.FullName()] {
			str(n.FullName())
			return
		}
		seen[n.FullName()] = true
	}
	switch s := s.(type) {
	case *havro.RecordSchema:
		b.WriteString(`{"type":"record","name":`)
		str(s.FullName())
		if s.Doc() != "" {
			b.WriteString(`,"doc":`)
			str(s.Doc())
		}
		if len(s.Aliases()) > 0 {
			b.WriteString(`,"aliases":`)
			lit(s.Aliases())
		}
		b.WriteString(`,"fields":[`)
		var fieldNodes map[string]*object
		if d := l.defs[s.FullName()]; d != nil {
			fieldNodes = map[string]*object{}
			var fields []*node
			if fn := d.obj.get("fields"); fn != nil {
				fields, _ = fn.val.([]*node)
			}
			for _, n := range fields {
				if o := n.obj(); o != nil {
					name, _ := o.get("name").str()
					fieldNodes[name] = o
				}
			}
		}
		for i, f := range s.Fields() {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"name":`)
			str(f.Name())
			if f.Doc() != "" {
				b.WriteString(`,"doc":`)
				str(f.Doc())
			}
			b.WriteString(`,"type":`)
			writeSchema(b, f.Type(), seen, l)
			if o := fieldNodes[f.Name()]; o != nil {
				if dn := o.get("default"); dn != nil {
					b.WriteString(`,"default":`)
					lit(dn.plain())
				}
			}
			b.WriteByte('}')
		}
		b.WriteString("]}")
	case *havro.EnumSchema:
		b.WriteString(`{"type":"enum","name":`)
		str(s.FullName())
		if s.Doc() != "" {
			b.WriteString(`,"doc":`)
			str(s.Doc())
		}
		b.WriteString(`,"symbols":`)
		lit(s.Symbols())
		if s.HasDefault() {
			b.WriteString(`,"default":`)
			str(s.Default())
		}
		b.WriteByte('}')
	case *havro.FixedSchema:
		b.WriteString(`{"type":"fixed","name":`)
		str(s.FullName())
		b.WriteString(`,"size":`)
		b.WriteString(strconv.Itoa(s.Size()))
		if dec, ok := s.Logical().(*havro.DecimalLogicalSchema); ok {
			fmt.Fprintf(b, `,"logicalType":"decimal","precision":%d,"scale":%d`, dec.Precision(), dec.Scale())
		}
		b.WriteByte('}')
	case *havro.ArraySchema:
		b.WriteString(`{"type":"array","items":`)
		writeSchema(b, s.Items(), seen, l)
		b.WriteByte('}')
	case *havro.MapSchema:
		b.WriteString(`{"type":"map","values":`)
		writeSchema(b, s.Values(), seen, l)
		b.WriteByte('}')
	case *havro.UnionSchema:
		b.WriteByte('[')
		for i, t := range s.Types() {
			if i > 0 {
				b.WriteByte(',')
			}
			writeSchema(b, t, seen, l)
		}
		b.WriteByte(']')
	case *havro.PrimitiveSchema:
		if s.Logical() == nil {
			str(string(s.Type()))
			return
		}
		b.WriteString(`{"type":`)
		str(string(s.Type()))
		b.WriteString(`,"logicalType":`)
		str(string(s.Logical().Type()))
		if dec, ok := s.Logical().(*havro.DecimalLogicalSchema); ok {
			fmt.Fprintf(b, `,"precision":%d,"scale":%d`, dec.Precision(), dec.Scale())
		}
		b.WriteByte('}')
	default:
		str(string(s.Type()))
	}
}
