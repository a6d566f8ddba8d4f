// Package model is kgen's intermediate description of record types. Both
// loaders (Go structs and Avro schemas) produce it and every emitter reads only
// it, so no emitter ever needs to know where a type came from.
package model

import (
	"fmt"

	"github.com/kgen-dev/kgen/schema"
)

// Kind says which shape a Type has.
type Kind int

const (
	String Kind = iota + 1
	Bytes
	Bool
	Int32
	Int64
	Float32
	Float64
	Timestamp // time.Time; Avro timestamp-millis or timestamp-micros (see Type.Unit)
	Date      // time.Time holding a calendar date; Avro date
	UUID      // string in canonical form; Avro uuid
	Decimal   // *big.Rat in Go; Avro bytes or fixed with decimal logical type
	Fixed     // [Size]byte
	Enum      // named string-backed type with a closed set of symbols
	Record    // struct with fields
	Array     // []Elem
	Map       // map[string]Elem
	Optional  // *Elem; Avro ["null", T]; Go pointer
	Union     // generated sum type over Variants; Avro union of several non-null branches
)

var kindNames = [...]string{
	String: "string", Bytes: "bytes", Bool: "bool", Int32: "int32", Int64: "int64",
	Float32: "float32", Float64: "float64", Timestamp: "timestamp", Date: "date",
	UUID: "uuid", Decimal: "decimal", Fixed: "fixed", Enum: "enum", Record: "record",
	Array: "array", Map: "map", Optional: "optional", Union: "union",
}

func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// TimeUnit is the resolution a Timestamp is carried with on the wire.
type TimeUnit int

const (
	Millis TimeUnit = iota
	Micros
)

// Pos is where a type or field was declared, for error messages: the same
// position type as the spec's, so errors from every loader read alike.
type Pos = schema.Pos

// Type describes one type. Named types (Record, Enum, Fixed, Union) are shared
// by pointer, so recursive records form cycles: walk them with a visited set.
type Type struct {
	Kind Kind

	// Name is the Go identifier of a named type ("Order"). Empty for unnamed
	// types (primitives, arrays, maps, optionals).
	Name string
	// GoPackage is the import path of the package that declares the Go type;
	// empty when the generator declares it (types from Avro schemas).
	GoPackage string
	// FullName is the source name: "pkg.Order" for Go, the Avro full name
	// ("com.example.Order") for Avro.
	FullName string
	Doc      string

	Fields   []*Field // Record
	Elem     *Type    // Array, Map, Optional
	Symbols  []string // Enum
	Size     int      // Fixed, and Decimal carried as fixed (0 = carried as bytes)
	Variants []*Type  // Union: the branches in wire order; a null branch has Kind 0 and Null set
	Null     bool     // this Type is the null branch of a Union

	Precision, Scale int      // Decimal
	Unit             TimeUnit // Timestamp

	// NullIndex is the union index of the null branch of an Optional read
	// from Avro: 0 for ["null", T], 1 for [T, "null"].
	NullIndex int

	// Schema is the Avro schema JSON of a named type from an .avsc file (or
	// one generated for a Go struct), used for schema registry registration.
	Schema string

	Pos Pos
}

// Field is one field of a Record.
type Field struct {
	Name     string // Go field name
	WireName string // name in JSON and Avro
	Type     *Type
	Doc      string
	// Default is the field's Avro default as decoded JSON (nil when absent).
	Default    any
	HasDefault bool
	Pos        Pos
}

// IsNamed reports whether the type is declared under its own name.
func (t *Type) IsNamed() bool { return t.Name != "" }

// IsTime reports whether values of the type are points in time, the only
// kind a timestamp field may have.
func (t *Type) IsTime() bool { return t.Kind == Timestamp || t.Kind == Int64 }

// Universe is every type known to one spec, by the name the spec uses for it
// ("model.Sentence" for a Go struct, "Order" or "com.example.Order" for Avro).
type Universe struct {
	Types map[string]*Type
	// Unmarked are the structs a loader saw that are not record types (no
	// //kgen:record comment), by the name the spec would use, with where
	// they are declared: for telling a user why a name is unknown.
	Unmarked map[string]Pos
	// Incomplete is set when a loader failed, so qualified names it would
	// have declared are unknown for a reason already reported.
	Incomplete bool
}

// Lookup finds a type by spec name; builtin names (string, bytes, int32,
// int64, float64, bool) resolve to primitive types.
func (u *Universe) Lookup(name string) (*Type, bool) {
	if k, ok := builtins[name]; ok {
		return &Type{Kind: k}, true
	}
	if u == nil {
		return nil, false
	}
	t, ok := u.Types[name]
	return t, ok
}

var builtins = map[string]Kind{
	"string": String, "bytes": Bytes, "bool": Bool,
	"int32": Int32, "int64": Int64, "float32": Float32, "float64": Float64,
}
