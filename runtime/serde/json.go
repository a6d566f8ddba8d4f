package serde

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
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
// A tombstone (a record with no value: nil bytes) is not JSON at all: it
// decodes, with no error, to the zero value of T: a nil pointer, slice or
// map, or an empty struct. Use a pointer type to tell tombstones apart
// from values. Serialize turns a nil pointer, slice, map or interface into
// a tombstone in turn.
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
		if err := checkStrict(b, t, "$"); err != nil {
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

// checkStrict walks the JSON document b against t and reports the first
// member that names no field exactly, and the first null where t cannot
// hold nil. Type mismatches and syntax errors are left to encoding/json,
// which reports them after. Members are visited in sorted order, so the
// error is the same on every run.
func checkStrict(b []byte, t reflect.Type, path string) *JSONError {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil // encoding/json reports the missing value
	}
	if selfDecoding(t) {
		return nil
	}
	if string(b) == "null" {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			return nil
		}
		return &JSONError{Path: path, Msg: fmt.Sprintf("null, but %s cannot be null (use a pointer type for an optional value)", t)}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkStrict(b, t.Elem(), path)
	case reflect.Struct:
		if b[0] != '{' {
			return nil
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(b, &members) != nil {
			return nil
		}
		fields := fieldsOf(t)
		for _, name := range sortedKeys(members) {
			ft, ok := fields.byName[name]
			if !ok {
				msg := fmt.Sprintf("member %q is no field of %s", name, t)
				if exact, ok := fields.folded[strings.ToLower(name)]; ok {
					msg += fmt.Sprintf(" (names match exactly: did you mean %q?)", exact)
				}
				return &JSONError{Path: path, Msg: msg}
			}
			if err := checkStrict(members[name], ft, path+"."+name); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 || b[0] != '[' {
			return nil // []byte is a base64 string
		}
		var elems []json.RawMessage
		if json.Unmarshal(b, &elems) != nil {
			return nil
		}
		for i, e := range elems {
			if err := checkStrict(e, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case reflect.Map:
		if b[0] != '{' {
			return nil
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(b, &members) != nil {
			return nil
		}
		for _, name := range sortedKeys(members) {
			if err := checkStrict(members[name], t.Elem(), path+"["+strconv.Quote(name)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

func selfDecoding(t reflect.Type) bool {
	if t.Kind() == reflect.Interface {
		return true
	}
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler)
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
