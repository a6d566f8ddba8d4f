package serde

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// JSON encodes values with encoding/json. It is the one serde that
// reflects; generated code uses it only for topics whose format is json.
//
// Decoding is strict unless Lenient is set, because a producer's typo
// should be a deserialization error (handled by the app's policy), not a
// record that silently became an empty value:
//   - a member that is no field of the type is an error, and field names
//     match exactly (encoding/json alone matches them in any case);
//   - a JSON null is an error where the Go type cannot hold nil (a struct,
//     a number, a string); pointers, slices, maps and interfaces take it;
//   - invalid UTF-8 is an error (encoding/json alone replaces it).
//
// Types that decode themselves (json.Unmarshaler, encoding.TextUnmarshaler,
// such as time.Time) are checked by their own code.
//
// A tombstone (a record with no value: nil bytes) is not JSON at all. For
// a T that can be nil (a pointer, slice, map or interface) it decodes to
// nil, and JSON says so (NullDecoder), so a topology hands tombstones to
// its nodes; for any other T (a struct) a topology's source drops them
// (counted as null values) rather than make them an empty struct: use a
// pointer type to receive them. Called directly, Deserialize(nil) gives
// the zero value of T with no error. Serialize turns a nil pointer, slice,
// map or interface into a tombstone in turn.
type JSON[T any] struct {
	// Lenient decodes as encoding/json does: unknown members are ignored,
	// names match in any case, null leaves the zero value, invalid UTF-8
	// becomes U+FFFD.
	Lenient bool
}

// Serialize encodes v with encoding/json; a nil pointer, slice, map or
// interface becomes nil bytes (a tombstone).
func (JSON[T]) Serialize(v T) ([]byte, error) {
	if isNil(&v) {
		return nil, nil
	}
	return json.Marshal(v)
}

// DecodesNull is true when T can be nil (a pointer, slice, map or
// interface): a null decodes to nil.
func (JSON[T]) DecodesNull() bool {
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	}
	return false
}

func isNil[T any](v *T) bool {
	rv := reflect.ValueOf(v).Elem()
	switch rv.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// Deserialize decodes b into a T, strictly unless s.Lenient; nil b (a
// tombstone) is the zero value of T.
func (s JSON[T]) Deserialize(b []byte) (T, error) {
	var v T
	if b == nil {
		return v, nil
	}
	t := reflect.TypeFor[T]()
	if !s.Lenient {
		if !utf8.Valid(b) {
			return v, &JSONError{Type: t.String(), Path: "$", Msg: fmt.Sprintf("invalid UTF-8 at byte %d", invalidUTF8At(b))}
		}
		if err := checkStrict(b, t); err != nil {
			err.Type = t.String()
			return v, err
		}
	}
	if err := json.Unmarshal(b, &v); err != nil {
		var zero T
		return zero, &JSONError{Type: t.String(), Path: "$", Msg: err.Error(), Err: err}
	}
	return v, nil
}

// JSONError is a value the JSON serde could not decode: where in the
// document ("$.items[2].name") and why.
type JSONError struct {
	Type string // the Go type decoded into
	Path string
	Msg  string
	Err  error // encoding/json's error, when it found the problem
}

func (e *JSONError) Error() string {
	return fmt.Sprintf("decode json %s: %s: %s", e.Type, e.Path, e.Msg)
}

func (e *JSONError) Unwrap() error { return e.Err }

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkStrict walks the JSON document b against t in one pass and reports
// the first member that names no field exactly, and the first null where t
// cannot hold nil. Type mismatches and syntax errors are left to
// encoding/json, which runs after: at anything unexpected the walk stops
// without an error.
func checkStrict(b []byte, t reflect.Type) *JSONError {
	w := walker{b: b, path: make([]segment, 0, 8)}
	w.value(t)
	return w.err
}

// walker scans a JSON document; pos is the next byte to read. It never
// reads past b: each step checks its bounds, and a document it cannot
// follow ends the walk (ok false).
type walker struct {
	b    []byte
	pos  int
	err  *JSONError
	path []segment // to the value being walked: made a string only for an error
}

// segment is one step of a path: a member (of a struct, or a map key) or an
// array index. name aliases the document until an error needs it.
type segment struct {
	name  []byte // raw JSON string of the member, quotes included
	field bool   // a struct member: .name, else a map key: ["name"]
	index int
}

func (w *walker) fail(msg string) {
	var b strings.Builder
	b.WriteByte('$')
	for _, s := range w.path {
		switch {
		case s.name == nil:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		default:
			var name string
			if json.Unmarshal(s.name, &name) != nil {
				name = string(s.name)
			}
			if s.field {
				b.WriteString("." + name)
			} else {
				b.WriteString("[" + strconv.Quote(name) + "]")
			}
		}
	}
	w.err = &JSONError{Path: b.String(), Msg: msg}
}

func (w *walker) ws() {
	for w.pos < len(w.b) {
		switch w.b[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// value walks one value of type t (nil: any, not checked) and reports
// whether the walk can go on.
func (w *walker) value(t reflect.Type) bool {
	w.ws()
	if w.pos >= len(w.b) {
		return false
	}
	if t != nil && selfDecoding(t) {
		t = nil
	}
	for t != nil && t.Kind() == reflect.Pointer {
		if w.b[w.pos] == 'n' {
			return w.literal("null")
		}
		t = t.Elem()
		if selfDecoding(t) {
			t = nil
		}
	}
	switch c := w.b[w.pos]; c {
	case '{':
		return w.object(t)
	case '[':
		return w.array(t)
	case '"':
		_, _, ok := w.str()
		return ok
	case 'n':
		if !w.null() {
			return false // not null, though it starts like it: encoding/json says what it is
		}
		if t != nil {
			switch t.Kind() {
			case reflect.Slice, reflect.Map, reflect.Interface:
			default:
				w.fail(fmt.Sprintf("null, but %s cannot be null (use a pointer type for an optional value)", t))
				return false
			}
		}
		return w.literal("null")
	case 't':
		return w.literal("true")
	case 'f':
		return w.literal("false")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			for w.pos < len(w.b) && strings.IndexByte("+-.eE0123456789", w.b[w.pos]) >= 0 {
				w.pos++
			}
			return true
		}
		return false
	}
}

// null reports whether the next value is the literal null, ended by the
// document's end or a byte that cannot continue it.
func (w *walker) null() bool {
	if !bytes.HasPrefix(w.b[w.pos:], []byte("null")) {
		return false
	}
	if end := w.pos + 4; end < len(w.b) {
		switch c := w.b[end]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
			return false
		}
	}
	return true
}

func (w *walker) literal(lit string) bool {
	if !bytes.HasPrefix(w.b[w.pos:], []byte(lit)) {
		return false
	}
	w.pos += len(lit)
	return true
}

// str reads a string and returns its raw JSON (quotes included) and its
// contents, unquoted only when it has escapes; neither is a copy then.
func (w *walker) str() (raw, contents []byte, ok bool) {
	start := w.pos
	w.pos++ // the opening quote
	escaped := false
	for w.pos < len(w.b) {
		switch w.b[w.pos] {
		case '\\':
			escaped = true
			w.pos += 2
			continue
		case '"':
			w.pos++
			raw := w.b[start:w.pos]
			if !escaped {
				return raw, raw[1 : len(raw)-1], true
			}
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return nil, nil, false
			}
			return raw, []byte(s), true
		}
		w.pos++
	}
	return nil, nil, false
}

func (w *walker) object(t reflect.Type) bool {
	w.pos++ // {
	var fields *jsonFields
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = fieldsOf(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	w.ws()
	if w.pos < len(w.b) && w.b[w.pos] == '}' {
		w.pos++
		return true
	}
	for {
		w.ws()
		if w.pos >= len(w.b) || w.b[w.pos] != '"' {
			return false
		}
		raw, name, ok := w.str()
		if !ok {
			return false
		}
		w.ws()
		if w.pos >= len(w.b) || w.b[w.pos] != ':' {
			return false
		}
		w.pos++
		var vt reflect.Type
		switch {
		case fields != nil:
			ft, ok := fields.byName[string(name)]
			if !ok {
				msg := fmt.Sprintf("member %q is no field of %s", name, t)
				if exact, ok := fields.folded[strings.ToLower(string(name))]; ok {
					msg += fmt.Sprintf(" (names match exactly: did you mean %q?)", exact)
				}
				w.fail(msg)
				return false
			}
			vt = ft
			w.path = append(w.path, segment{name: raw, field: true})
		case elem != nil:
			vt = elem
			w.path = append(w.path, segment{name: raw})
		}
		if !w.value(vt) {
			return false
		}
		if vt != nil {
			w.path = w.path[:len(w.path)-1]
		}
		w.ws()
		if w.pos >= len(w.b) {
			return false
		}
		switch w.b[w.pos] {
		case ',':
			w.pos++
		case '}':
			w.pos++
			return true
		default:
			return false
		}
	}
}

func (w *walker) array(t reflect.Type) bool {
	w.pos++ // [
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Uint8 {
		elem = t.Elem()
	}
	w.ws()
	if w.pos < len(w.b) && w.b[w.pos] == ']' {
		w.pos++
		return true
	}
	if elem != nil {
		w.path = append(w.path, segment{})
	}
	for i := 0; ; i++ {
		if elem != nil {
			w.path[len(w.path)-1].index = i
		}
		if !w.value(elem) {
			return false
		}
		w.ws()
		if w.pos >= len(w.b) {
			return false
		}
		switch w.b[w.pos] {
		case ',':
			w.pos++
		case ']':
			w.pos++
			if elem != nil {
				w.path = w.path[:len(w.path)-1]
			}
			return true
		default:
			return false
		}
	}
}

var selfCache sync.Map // reflect.Type -> bool

// selfDecoding reports whether t decodes itself (or is an interface,
// which takes any value): its members are not checked.
func selfDecoding(t reflect.Type) bool {
	if v, ok := selfCache.Load(t); ok {
		return v.(bool)
	}
	self := t.Kind() == reflect.Interface
	if !self {
		pt := reflect.PointerTo(t)
		self = t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) ||
			t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler)
	}
	selfCache.Store(t, self)
	return self
}

// jsonFields are the JSON names of a struct's fields, as encoding/json
// derives them (tags, promoted fields of embedded structs).
type jsonFields struct {
	byName map[string]reflect.Type
	folded map[string]string // lower case to exact name, for suggestions
}

var fieldCache sync.Map // reflect.Type -> *jsonFields

func fieldsOf(t reflect.Type) *jsonFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*jsonFields)
	}
	f := &jsonFields{byName: map[string]reflect.Type{}, folded: map[string]string{}}
	collectFields(t, f, map[reflect.Type]bool{})
	for name := range f.byName {
		f.folded[strings.ToLower(name)] = name
	}
	fieldCache.Store(t, f)
	return f
}

// collectFields adds t's fields; the fields of t itself win over promoted
// ones, as in encoding/json (which also drops ambiguous promoted names; a
// document naming one then fails there).
func collectFields(t reflect.Type, f *jsonFields, seen map[reflect.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	var embedded []reflect.Type
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, hasTag := sf.Tag.Lookup("json")
		name, _, _ := strings.Cut(tag, ",")
		if tag == "-" {
			continue
		}
		if sf.Anonymous && name == "" {
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				embedded = append(embedded, et)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if !hasTag || name == "" {
			name = sf.Name
		}
		f.byName[name] = sf.Type
	}
	for _, et := range embedded {
		inner := &jsonFields{byName: map[string]reflect.Type{}}
		collectFields(et, inner, seen)
		for name, ft := range inner.byName {
			if _, ok := f.byName[name]; !ok {
				f.byName[name] = ft
			}
		}
	}
}
