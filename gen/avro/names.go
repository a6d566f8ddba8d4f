package avro

import (
	"strings"
	"unicode"

	"github.com/kgen-dev/kgen/gen/model"
)

var initialisms = map[string]bool{
	"id": true, "url": true, "uri": true, "uuid": true, "http": true, "https": true,
	"json": true, "api": true, "ip": true, "sql": true, "xml": true, "html": true,
}

// words splits an Avro name at underscores, dots, dashes and lower-to-upper
// case changes: "order_lineId" -> order, line, Id.
func words(s string) []string {
	var out []string
	cur := []rune{}
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range s {
		switch {
		case r == '_' || r == '.' || r == '-':
			flush()
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) && len(cur) > 0:
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return out
}

// GoName turns an Avro name into an exported Go identifier: "intField" ->
// "IntField", "order_line" -> "OrderLine", "userId" -> "UserID".
func GoName(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		if initialisms[strings.ToLower(w)] {
			b.WriteString(strings.ToUpper(w))
			continue
		}
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	if b.Len() == 0 {
		return "X"
	}
	return b.String()
}

// symbolName is the Go name of an enum symbol: SPADES and spades are Spades.
func symbolName(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		if initialisms[strings.ToLower(w)] {
			b.WriteString(strings.ToUpper(w))
			continue
		}
		r := []rune(w)
		upper := true
		for _, c := range r {
			if unicode.IsLower(c) {
				upper = false
			}
		}
		if upper {
			r = []rune(strings.ToLower(w))
		}
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	if b.Len() == 0 {
		return "X"
	}
	return b.String()
}

// EnumConstName is the Go constant generated for one symbol of an enum.
func EnumConstName(enum *model.Type, symbol string) string {
	return enum.Name + symbolName(symbol)
}

// VariantSuffix names a union branch inside its wrapper type; named branches
// (records, enums, fixed) have no wrapper and return "".
func VariantSuffix(v *model.Type) string {
	switch v.Kind {
	case model.Record, model.Enum, model.Fixed:
		return ""
	case model.Int32:
		return "Int"
	case model.Int64:
		return "Long"
	case model.Float32:
		return "Float"
	case model.Float64:
		return "Double"
	case model.Bool:
		return "Boolean"
	case model.String:
		return "String"
	case model.Bytes:
		return "Bytes"
	case model.UUID:
		return "UUID"
	case model.Date:
		return "Date"
	case model.Timestamp:
		if v.Unit == model.Micros {
			return "TimestampMicros"
		}
		return "TimestampMillis"
	case model.Decimal:
		if v.Size > 0 && v.FullName != "" {
			return GoName(shortName(v.FullName))
		}
		return "Decimal"
	case model.Array:
		return "Array"
	case model.Map:
		return "Map"
	}
	return ""
}

// VariantGoType is the Go type name a non-null union branch is carried in:
// the wrapper struct "<Union><Suffix>" with a Value field, or the named
// type itself ("*Foo" for records, "Kind" for enums and fixed).
func VariantGoType(u, v *model.Type) string {
	switch v.Kind {
	case model.Record:
		return "*" + v.Name
	case model.Enum, model.Fixed:
		return v.Name
	}
	return u.Name + VariantSuffix(v)
}

func shortName(full string) string {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[i+1:]
	}
	return full
}

func namespaceOf(full string) string {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[:i]
	}
	return ""
}

// Decl is one package-level identifier the emitter declares.
type Decl struct {
	Name string
	Type *model.Type // the named type it belongs to
	Role string      // what it is, for messages: "Go type", "serde"
}

// Declared lists every package-level identifier Emit declares for types
// (and the named types they use), so the generator can check them against
// the names it emits itself. It is the one list: Emit's own clash check
// reads it too.
func Declared(types []*model.Type) []Decl {
	e := &emitter{seen: map[*model.Type]bool{}}
	for _, t := range types {
		if err := e.collect(t); err != nil {
			return nil // Emit reports it
		}
	}
	return declared(e.named)
}

func declared(named []*model.Type) []Decl {
	var out []Decl
	add := func(id string, t *model.Type, role string) { out = append(out, Decl{id, t, role}) }
	for _, t := range named {
		add(t.Name, t, "Go type")
		switch t.Kind {
		case model.Record:
			add(SchemaConstName(t), t, "schema constant")
			add(SerdeName(t), t, "Avro serde")
			add(ConfluentSerdeName(t), t, "Confluent serde")
		case model.Enum:
			add(SchemaConstName(t), t, "schema constant")
			for _, s := range t.Symbols {
				add(EnumConstName(t, s), t, "constant of symbol "+s)
			}
		case model.Fixed:
			add(SchemaConstName(t), t, "schema constant")
		case model.Union:
			for _, v := range t.Variants {
				if s := VariantSuffix(v); s != "" {
					add(t.Name+s, t, "branch type "+s)
				}
			}
			add("append"+t.Name, t, "encoder")
			add("decode"+t.Name, t, "decoder")
		}
	}
	return out
}

// SchemaConstName is the constant holding the schema JSON of named type t.
func SchemaConstName(t *model.Type) string { return t.Name + "AvroSchema" }

// SerdeName is the plain Avro binary serde type of record t.
func SerdeName(t *model.Type) string { return t.Name + "AvroSerde" }

// ConfluentSerdeName is the Confluent wire format serde type of record t.
func ConfluentSerdeName(t *model.Type) string { return t.Name + "ConfluentSerde" }
