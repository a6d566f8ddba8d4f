package avro

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/gen/internal/gotype"
	"github.com/kgen-dev/kgen/gen/model"
)

const rt = "github.com/kgen-dev/kgen/runtime/serde/avro"

// Emit writes into f the Go declarations and Avro binary codecs of the given
// types and of every named type they reach, each once, sorted by Go name. For
// each record R (Avro full name F) it writes:
//
//	type R struct{ ... }                      // fields with `json:"wire" avro:"wire"` tags
//	const RAvroSchema = "..."                 // standalone schema JSON for a schema registry
//	func (v *R) AppendAvro(dst []byte) ([]byte, error)
//	func (v *R) DecodeAvro(src []byte) (rest []byte, err error)
//	type RAvroSerde struct{}                  // serde.Serde[R], plain Avro binary
//	type RConfluentSerde struct{ SchemaID uint32 } // serde.Serde[R], Confluent wire format
//
// An enum E becomes `type E string` with one constant per symbol (E +
// symbol: StatusPaid) and a Valid method; a fixed becomes `type X [N]byte`. A
// union U becomes a sealed interface: nil is the null branch (if there is
// one); records are carried as *R, enums and fixed as themselves, any other
// branch in a wrapper struct U<Branch>{Value T} (UBoolean, UArray, ...).
//
// Types must come from Load (GoPackage empty). Go name clashes among the
// generated identifiers are reported as errors.
func Emit(f *jen.File, types []*model.Type) error {
	e := &emitter{f: f, seen: map[*model.Type]bool{}}
	for _, t := range types {
		if err := e.collect(t); err != nil {
			return err
		}
	}
	sort.Slice(e.named, func(i, j int) bool { return e.named[i].Name < e.named[j].Name })
	if err := e.checkNames(); err != nil {
		return err
	}
	for _, t := range e.named {
		switch t.Kind {
		case model.Record:
			e.record(t)
		case model.Enum:
			e.enum(t)
		case model.Fixed:
			e.fixed(t)
		case model.Union:
			e.union(t)
		}
	}
	return nil
}

type emitter struct {
	f     *jen.File
	seen  map[*model.Type]bool
	named []*model.Type
	n     int  // counter for fresh variable names
	err   bool // the function being written uses err
}

func (e *emitter) collect(t *model.Type) error {
	if t == nil || e.seen[t] {
		return nil
	}
	e.seen[t] = true
	if t.GoPackage != "" {
		return fmt.Errorf("%s: type %s is declared in Go package %s; Emit writes only types loaded from Avro schemas", t.Pos, t.FullName, t.GoPackage)
	}
	switch t.Kind {
	case model.Record, model.Enum, model.Fixed, model.Union:
		if t.Name == "" {
			return fmt.Errorf("%s: %s %s has no Go name", t.Pos, t.Kind, t.FullName)
		}
		e.named = append(e.named, t)
	}
	for _, f := range t.Fields {
		if err := e.collect(f.Type); err != nil {
			return err
		}
	}
	for _, v := range t.Variants {
		if err := e.collect(v); err != nil {
			return err
		}
	}
	return e.collect(t.Elem)
}

// checkNames reports generated identifiers declared twice.
func (e *emitter) checkNames() error {
	owner := map[string]string{}
	var errs []string
	for _, d := range declared(e.named) {
		if o, ok := owner[d.Name]; ok {
			errs = append(errs, fmt.Sprintf("%s: Go identifier %s of %s clashes with one of %s", d.Type.Pos, d.Name, d.Type.FullName, o))
			continue
		}
		owner[d.Name] = d.Type.FullName
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

func (e *emitter) fresh(base string) string {
	e.n++
	return base + strconv.Itoa(e.n)
}

func zero(t *model.Type) jen.Code {
	switch t.Kind {
	case model.String, model.UUID, model.Enum:
		return jen.Lit("")
	case model.Bool:
		return jen.False()
	case model.Int32, model.Int64, model.Float32, model.Float64:
		return jen.Lit(0)
	case model.Timestamp, model.Date:
		return jen.Qual("time", "Time").Values()
	case model.Fixed, model.Record:
		return jen.Id(t.Name).Values()
	case model.Bytes, model.Decimal, model.Union, model.Array, model.Map, model.Optional:
		return jen.Nil()
	}
	return jen.Struct().Values()
}

// minSize is the fewest bytes a value of t takes on the wire.
func minSize(t *model.Type, visiting map[*model.Type]bool) int {
	switch t.Kind {
	case model.Float32:
		return 4
	case model.Float64:
		return 8
	case model.Fixed:
		return t.Size
	case model.Decimal:
		if t.Size > 0 {
			return t.Size
		}
		return 1
	case model.Record:
		if visiting[t] {
			return 0
		}
		visiting[t] = true
		n := 0
		for _, f := range t.Fields {
			n += minSize(f.Type, visiting)
		}
		delete(visiting, t)
		return n
	case model.Kind(0):
		return 0
	}
	return 1
}

// sizeHint is the capacity a serde allocates for one encoded value.
func sizeHint(t *model.Type) int {
	n := minSize(t, map[*model.Type]bool{})
	for _, f := range t.Fields {
		switch f.Type.Kind {
		case model.String, model.Bytes, model.UUID, model.Array, model.Map, model.Union, model.Optional, model.Record, model.Decimal:
			n += 32
		}
	}
	return min(max(n, 16), 1024)
}

type failFn func(err jen.Code) jen.Code

// wrapWith returns a fail function that wraps the error with a path segment
// before handing it to outer.
func wrapWith(outer failFn, fn string, arg jen.Code) failFn {
	return func(err jen.Code) jen.Code {
		return outer(jen.Qual(rt, fn).Call(err, arg))
	}
}

// appendValue writes statements appending the value x of type t to dst.
func (e *emitter) appendValue(x jen.Code, t *model.Type, fail failFn) []jen.Code {
	simple := func(fn string, args ...jen.Code) []jen.Code {
		return []jen.Code{jen.Id("dst").Op("=").Qual(rt, fn).Call(append([]jen.Code{jen.Id("dst"), x}, args...)...)}
	}
	checked := func(call jen.Code) []jen.Code {
		e.err = true
		return []jen.Code{jen.If(jen.List(jen.Id("dst"), jen.Err()).Op("=").Add(call), jen.Err().Op("!=").Nil()).Block(fail(jen.Err()))}
	}
	switch t.Kind {
	case model.String, model.UUID:
		return simple("AppendString")
	case model.Bytes:
		return simple("AppendBytes")
	case model.Bool:
		return simple("AppendBool")
	case model.Int32:
		return simple("AppendInt")
	case model.Int64:
		return simple("AppendLong")
	case model.Float32:
		return simple("AppendFloat")
	case model.Float64:
		return simple("AppendDouble")
	case model.Timestamp:
		if t.Unit == model.Micros {
			return simple("AppendTimestampMicros")
		}
		return simple("AppendTimestampMillis")
	case model.Date:
		return checked(jen.Qual(rt, "AppendDate").Call(jen.Id("dst"), x))
	case model.Decimal:
		if t.Size > 0 {
			return checked(jen.Qual(rt, "AppendFixedDecimal").Call(jen.Id("dst"), x, jen.Lit(t.Precision), jen.Lit(t.Scale), jen.Lit(t.Size)))
		}
		return checked(jen.Qual(rt, "AppendDecimal").Call(jen.Id("dst"), x, jen.Lit(t.Precision), jen.Lit(t.Scale)))
	case model.Fixed:
		return []jen.Code{jen.Id("dst").Op("=").Append(jen.Id("dst"), jen.Add(x).Index(jen.Empty(), jen.Empty()).Op("..."))}
	case model.Enum:
		return checked(jen.Add(x).Dot("appendAvro").Call(jen.Id("dst")))
	case model.Record:
		return checked(jen.Add(x).Dot("appendAvro").Call(jen.Id("dst"), jen.Id("depth").Op("+").Lit(1)))
	case model.Union:
		return checked(jen.Id("append"+t.Name).Call(jen.Id("dst"), x, jen.Id("depth").Op("+").Lit(1)))
	case model.Optional:
		some := []jen.Code{jen.Id("dst").Op("=").Qual(rt, "AppendLong").Call(jen.Id("dst"), jen.Lit(1-t.NullIndex))}
		var inner jen.Code
		switch t.Elem.Kind {
		case model.Decimal: // *big.Rat itself
			inner = x
		case model.Record, model.Enum, model.Fixed: // methods and slicing work through the pointer
			inner = x
		case model.Array, model.Map:
			o := e.fresh("o")
			some = append(some, jen.Id(o).Op(":=").Op("*").Add(x))
			inner = jen.Id(o)
		default:
			inner = jen.Op("*").Add(x)
		}
		some = append(some, e.appendValue(inner, t.Elem, fail)...)
		return []jen.Code{jen.If(jen.Add(x).Op("==").Nil()).Block(
			jen.Id("dst").Op("=").Qual(rt, "AppendLong").Call(jen.Id("dst"), jen.Lit(t.NullIndex)),
		).Else().Block(some...)}
	case model.Array:
		i := e.fresh("i")
		body := e.appendValue(jen.Add(x).Index(jen.Id(i)), t.Elem, wrapWith(fail, "Index", jen.Id(i)))
		return []jen.Code{
			jen.If(jen.Len(x).Op(">").Lit(0)).Block(
				jen.Id("dst").Op("=").Qual(rt, "AppendLong").Call(jen.Id("dst"), jen.Int64().Call(jen.Len(x))),
				jen.For(jen.Id(i).Op(":=").Range().Add(x)).Block(body...),
			),
			jen.Id("dst").Op("=").Append(jen.Id("dst"), jen.Lit(0)),
		}
	case model.Map:
		k, v, kb := e.fresh("k"), e.fresh("v"), e.fresh("keys")
		body := append([]jen.Code{
			jen.Id(v).Op(":=").Add(x).Index(jen.Id(k)),
			jen.Id("dst").Op("=").Qual(rt, "AppendString").Call(jen.Id("dst"), jen.Id(k)),
		}, e.appendValue(jen.Id(v), t.Elem, wrapWith(fail, "Key", jen.Id(k)))...)
		return []jen.Code{
			jen.If(jen.Len(x).Op(">").Lit(0)).Block(
				jen.Id("dst").Op("=").Qual(rt, "AppendLong").Call(jen.Id("dst"), jen.Int64().Call(jen.Len(x))),
				jen.Var().Id(kb).Index(jen.Lit(8)).String(),
				jen.For(jen.List(jen.Id("_"), jen.Id(k)).Op(":=").Range().Qual(rt, "SortedKeys").Call(jen.Id(kb).Index(jen.Empty(), jen.Lit(0)), x)).Block(body...),
			),
			jen.Id("dst").Op("=").Append(jen.Id("dst"), jen.Lit(0)),
		}
	}
	return nil // null: nothing on the wire
}

// decodeValue writes statements decoding a value of type t from src into
// the addressable x.
func (e *emitter) decodeValue(x jen.Code, t *model.Type, fail failFn) []jen.Code {
	e.err = true
	check := func(lhs []jen.Code, call jen.Code) []jen.Code {
		return []jen.Code{jen.If(jen.List(lhs...).Op("=").Add(call), jen.Err().Op("!=").Nil()).Block(fail(jen.Err()))}
	}
	read := func(fn string, args ...jen.Code) []jen.Code {
		return check([]jen.Code{x, jen.Id("src"), jen.Err()}, jen.Qual(rt, fn).Call(append([]jen.Code{jen.Id("src")}, args...)...))
	}
	switch t.Kind {
	case model.String, model.UUID:
		return read("ReadString", jen.Id("whole"))
	case model.Bytes:
		return read("ReadBytes")
	case model.Bool:
		return read("ReadBool")
	case model.Int32:
		return read("ReadInt")
	case model.Int64:
		return read("ReadLong")
	case model.Float32:
		return read("ReadFloat")
	case model.Float64:
		return read("ReadDouble")
	case model.Timestamp:
		if t.Unit == model.Micros {
			return read("ReadTimestampMicros")
		}
		return read("ReadTimestampMillis")
	case model.Date:
		return read("ReadDate")
	case model.Decimal:
		if t.Size > 0 {
			return read("ReadFixedDecimal", jen.Lit(t.Scale), jen.Lit(t.Size))
		}
		return read("ReadDecimal", jen.Lit(t.Scale))
	case model.Fixed:
		return check([]jen.Code{jen.Id("src"), jen.Err()}, jen.Qual(rt, "ReadFixed").Call(jen.Id("src"), jen.Add(x).Index(jen.Empty(), jen.Empty())))
	case model.Enum:
		return check([]jen.Code{jen.Id("src"), jen.Err()}, jen.Add(x).Dot("decodeAvro").Call(jen.Id("src")))
	case model.Record:
		return check([]jen.Code{jen.Id("src"), jen.Err()}, jen.Add(x).Dot("decodeAvro").Call(jen.Id("src"), jen.Id("depth").Op("+").Lit(1), jen.Id("whole")))
	case model.Union:
		return check([]jen.Code{x, jen.Id("src"), jen.Err()}, jen.Id("decode"+t.Name).Call(jen.Id("src"), jen.Id("depth").Op("+").Lit(1), jen.Id("whole")))
	case model.Optional:
		idx := e.fresh("b")
		var some []jen.Code
		if t.Elem.Kind == model.Decimal {
			some = e.decodeValue(x, t.Elem, fail)
		} else {
			o := e.fresh("o")
			some = append([]jen.Code{jen.Var().Id(o).Add(gotype.Of(t.Elem))}, e.decodeValue(jen.Id(o), t.Elem, fail)...)
			some = append(some, jen.Add(x).Op("=").Op("&").Id(o))
		}
		return []jen.Code{
			jen.Var().Id(idx).Int(),
			jen.If(jen.List(jen.Id(idx), jen.Id("src"), jen.Err()).Op("=").Qual(rt, "ReadUnionIndex").Call(jen.Id("src"), jen.Lit(2)), jen.Err().Op("!=").Nil()).Block(fail(jen.Err())),
			jen.If(jen.Id(idx).Op("==").Lit(t.NullIndex)).Block(jen.Add(x).Op("=").Nil()).Else().Block(some...),
		}
	case model.Array:
		total, n, i := e.fresh("total"), e.fresh("n"), e.fresh("i")
		body := append([]jen.Code{
			jen.Id(i).Op(":=").Len(x),
			jen.Add(x).Op("=").Append(x, zero(t.Elem)),
		}, e.decodeValue(jen.Add(x).Index(jen.Id(i)), t.Elem, wrapWith(fail, "Index", jen.Id(i)))...)
		return []jen.Code{
			jen.Add(x).Op("=").Nil(),
			jen.For(jen.Id(total).Op(":=").Lit(0), jen.Empty(), jen.Empty()).Block(
				jen.Var().Id(n).Int(),
				jen.If(jen.List(jen.Id(n), jen.Id("src"), jen.Err()).Op("=").Qual(rt, "ReadBlockCount").Call(jen.Id("src"), jen.Id(total), jen.Lit(minSize(t.Elem, map[*model.Type]bool{}))), jen.Err().Op("!=").Nil()).Block(fail(jen.Err())),
				jen.If(jen.Id(n).Op("==").Lit(0)).Block(jen.Break()),
				jen.Id(total).Op("+=").Id(n),
				jen.Add(x).Op("=").Qual("slices", "Grow").Call(x, jen.Min(jen.Id(n), jen.Lit(1024))),
				jen.For(jen.Range().Id(n)).Block(body...),
			),
		}
	case model.Map:
		total, n, k, v := e.fresh("total"), e.fresh("n"), e.fresh("k"), e.fresh("v")
		body := []jen.Code{
			jen.Var().Id(k).String(),
			jen.If(jen.List(jen.Id(k), jen.Id("src"), jen.Err()).Op("=").Qual(rt, "ReadString").Call(jen.Id("src"), jen.Id("whole")), jen.Err().Op("!=").Nil()).Block(fail(jen.Err())),
			jen.Var().Id(v).Add(gotype.Of(t.Elem)),
		}
		body = append(body, e.decodeValue(jen.Id(v), t.Elem, wrapWith(fail, "Key", jen.Id(k)))...)
		body = append(body, jen.Add(x).Index(jen.Id(k)).Op("=").Id(v))
		return []jen.Code{
			jen.Add(x).Op("=").Nil(),
			jen.For(jen.Id(total).Op(":=").Lit(0), jen.Empty(), jen.Empty()).Block(
				jen.Var().Id(n).Int(),
				jen.If(jen.List(jen.Id(n), jen.Id("src"), jen.Err()).Op("=").Qual(rt, "ReadBlockCount").Call(jen.Id("src"), jen.Id(total), jen.Lit(1)), jen.Err().Op("!=").Nil()).Block(fail(jen.Err())),
				jen.If(jen.Id(n).Op("==").Lit(0)).Block(jen.Break()),
				jen.Id(total).Op("+=").Id(n),
				jen.If(jen.Add(x).Op("==").Nil()).Block(jen.Add(x).Op("=").Make(gotype.Of(t), jen.Min(jen.Id(n), jen.Lit(1024)))),
				jen.For(jen.Range().Id(n)).Block(body...),
			),
		}
	}
	return nil // null
}

// hasString reports whether values of t can hold strings.
func hasString(t *model.Type, seen map[*model.Type]bool) bool {
	if t == nil || seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind {
	case model.String, model.UUID, model.Map:
		return true
	}
	for _, f := range t.Fields {
		if hasString(f.Type, seen) {
			return true
		}
	}
	for _, v := range t.Variants {
		if hasString(v, seen) {
			return true
		}
	}
	return hasString(t.Elem, seen)
}

func (e *emitter) record(t *model.Type) {
	f := e.f
	fields := make([]jen.Code, 0, len(t.Fields))
	for _, fl := range t.Fields {
		c := jen.Id(fl.Name).Add(gotype.Of(fl.Type)).Tag(map[string]string{"json": fl.WireName, "avro": fl.WireName})
		if fl.Doc != "" {
			fields = append(fields, jen.Comment(fl.Doc))
		}
		fields = append(fields, c)
	}
	f.Comment(t.Name + " is the Avro record " + t.FullName + ".")
	if t.Doc != "" {
		f.Comment("")
		f.Comment(t.Doc)
	}
	f.Type().Id(t.Name).Struct(fields...)
	f.Line()

	e.schemaConst(t)

	full := jen.Lit(t.FullName)
	f.Comment("AppendAvro appends the Avro binary encoding of v to dst.")
	f.Func().Params(jen.Id("v").Op("*").Id(t.Name)).Id("AppendAvro").Params(jen.Id("dst").Index().Byte()).Params(jen.Index().Byte(), jen.Error()).Block(
		jen.List(jen.Id("dst"), jen.Err()).Op(":=").Id("v").Dot("appendAvro").Call(jen.Id("dst"), jen.Lit(0)),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Qual(rt, "Encoding").Call(jen.Err(), full))),
		jen.Return(jen.Id("dst"), jen.Nil()),
	)
	f.Line()
	f.Comment("DecodeAvro decodes one " + t.Name + " from the front of src into v and returns")
	f.Comment("the bytes after it. Lengths and counts are bounded by the input left and")
	f.Comment("the limits of package avro.")
	f.Func().Params(jen.Id("v").Op("*").Id(t.Name)).Id("DecodeAvro").Params(jen.Id("src").Index().Byte()).Params(jen.Index().Byte(), jen.Error()).Block(
		jen.List(jen.Id("rest"), jen.Err()).Op(":=").Id("v").Dot("decodeAvro").Call(jen.Id("src"), jen.Lit(0), jen.Lit("")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Qual(rt, "Decoding").Call(jen.Err(), full))),
		jen.Return(jen.Id("rest"), jen.Nil()),
	)
	f.Line()

	// appendAvro
	e.err, e.n = false, 0
	var body []jen.Code
	for _, fl := range t.Fields {
		fail := func(err jen.Code) jen.Code {
			return jen.Return(jen.Nil(), jen.Qual(rt, "Field").Call(err, jen.Lit(fl.WireName)))
		}
		body = append(body, e.appendValue(jen.Id("v").Dot(fl.Name), fl.Type, fail)...)
	}
	pre := []jen.Code{jen.If(jen.Id("depth").Op(">").Qual(rt, "MaxDepth")).Block(jen.Return(jen.Nil(), jen.Qual(rt, "ErrTooDeep")))}
	if e.err {
		pre = append(pre, jen.Var().Err().Error())
	}
	body = append(append(pre, body...), jen.Return(jen.Id("dst"), jen.Nil()))
	f.Func().Params(jen.Id("v").Op("*").Id(t.Name)).Id("appendAvro").Params(jen.Id("dst").Index().Byte(), jen.Id("depth").Int()).Params(jen.Index().Byte(), jen.Error()).Block(body...)
	f.Line()

	// decodeAvro
	e.err, e.n = false, 0
	body = nil
	for _, fl := range t.Fields {
		fail := func(err jen.Code) jen.Code {
			return jen.Return(jen.Nil(), jen.Qual(rt, "Field").Call(err, jen.Lit(fl.WireName)))
		}
		body = append(body, e.decodeValue(jen.Id("v").Dot(fl.Name), fl.Type, fail)...)
	}
	pre = []jen.Code{jen.If(jen.Id("depth").Op(">").Qual(rt, "MaxDepth")).Block(jen.Return(jen.Nil(), jen.Qual(rt, "ErrTooDeep")))}
	if e.err {
		pre = append(pre, jen.Var().Err().Error())
	}
	body = append(append(pre, body...), jen.Return(jen.Id("src"), jen.Nil()))
	f.Func().Params(jen.Id("v").Op("*").Id(t.Name)).Id("decodeAvro").Params(jen.Id("src").Index().Byte(), jen.Id("depth").Int(), jen.Id("whole").String()).Params(jen.Index().Byte(), jen.Error()).Block(body...)
	f.Line()

	// serdes
	hint := sizeHint(t)
	whole := jen.Lit("")
	if hasString(t, map[*model.Type]bool{}) {
		whole = jen.Qual(rt, "Whole").Call(jen.Id("b"))
	}
	serde, conf := SerdeName(t), ConfluentSerdeName(t)
	f.Comment(serde + " is a serde.Serde[" + t.Name + "] for plain Avro binary values.")
	f.Type().Id(serde).Struct()
	f.Line()
	f.Comment("Serialize encodes v in Avro binary.")
	f.Func().Params(jen.Id(serde)).Id("Serialize").Params(jen.Id("v").Id(t.Name)).Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Return(jen.Id("v").Dot("AppendAvro").Call(jen.Make(jen.Index().Byte(), jen.Lit(0), jen.Lit(hint)))),
	)
	f.Line()
	f.Comment("Deserialize decodes one " + t.Name + " that must fill b exactly. The value")
	f.Comment("never aliases b (its strings may share one copy of it: avro.Whole). A")
	f.Comment("record with no value (nil b, a tombstone) is the zero " + t.Name + ", not an error.")
	f.Func().Params(jen.Id(serde)).Id("Deserialize").Params(jen.Id("b").Index().Byte()).Params(jen.Id(t.Name), jen.Error()).Block(
		jen.If(jen.Id("b").Op("==").Nil()).Block(jen.Return(jen.Id(t.Name).Values(), jen.Nil())),
		jen.Var().Id("v").Id(t.Name),
		jen.List(jen.Id("rest"), jen.Err()).Op(":=").Id("v").Dot("decodeAvro").Call(jen.Id("b"), jen.Lit(0), whole),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Id(t.Name).Values(), jen.Qual(rt, "Decoding").Call(jen.Err(), full))),
		jen.If(jen.Len(jen.Id("rest")).Op("!=").Lit(0)).Block(jen.Return(jen.Id(t.Name).Values(), jen.Qual(rt, "Decoding").Call(jen.Qual(rt, "ErrTrailing"), full))),
		jen.Return(jen.Id("v"), jen.Nil()),
	)
	f.Line()
	f.Comment(conf + " is a serde.Serde[" + t.Name + "] for the Confluent wire format:")
	f.Comment("a 5-byte header naming the schema registry id of " + t.Name + "AvroSchema,")
	f.Comment("then Avro binary. Deserialize accepts only SchemaID.")
	f.Type().Id(conf).Struct(jen.Id("SchemaID").Uint32())
	f.Line()
	f.Comment("Serialize encodes v after the wire format header.")
	f.Func().Params(jen.Id("s").Id(conf)).Id("Serialize").Params(jen.Id("v").Id(t.Name)).Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Id("dst").Op(":=").Qual(rt, "AppendConfluentHeader").Call(jen.Make(jen.Index().Byte(), jen.Lit(0), jen.Lit(hint+5)), jen.Id("s").Dot("SchemaID")),
		jen.Return(jen.Id("v").Dot("AppendAvro").Call(jen.Id("dst"))),
	)
	f.Line()
	f.Comment("Deserialize checks the wire format header and decodes the " + t.Name + " after it;")
	f.Comment("a tombstone (nil b) is the zero " + t.Name + ".")
	f.Func().Params(jen.Id("s").Id(conf)).Id("Deserialize").Params(jen.Id("b").Index().Byte()).Params(jen.Id(t.Name), jen.Error()).Block(
		jen.If(jen.Id("b").Op("==").Nil()).Block(jen.Return(jen.Id(t.Name).Values(), jen.Nil())),
		jen.List(jen.Id("id"), jen.Id("payload"), jen.Err()).Op(":=").Qual(rt, "ParseConfluentHeader").Call(jen.Id("b")),
		jen.If(jen.Err().Op("==").Nil()).Block(jen.Err().Op("=").Qual(rt, "CheckSchemaID").Call(jen.Id("id"), jen.Id("s").Dot("SchemaID"))),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Id(t.Name).Values(), jen.Qual(rt, "Decoding").Call(jen.Err(), full))),
		jen.Return(jen.Id(serde).Values().Dot("Deserialize").Call(jen.Id("payload"))),
	)
	f.Line()
}

func (e *emitter) schemaConst(t *model.Type) {
	e.f.Comment(t.Name + "AvroSchema is the Avro schema of " + t.Name + " as JSON, with every")
	e.f.Comment("type it uses declared inline, ready for schema registry registration.")
	lit := jen.Lit(t.Schema)
	if !strings.Contains(t.Schema, "`") {
		lit = jen.Op("`" + t.Schema + "`")
	}
	e.f.Const().Id(SchemaConstName(t)).Op("=").Add(lit)
	e.f.Line()
}

func (e *emitter) enum(t *model.Type) {
	f := e.f
	f.Comment(t.Name + " is the Avro enum " + t.FullName + ".")
	if t.Doc != "" {
		f.Comment("")
		f.Comment(t.Doc)
	}
	f.Type().Id(t.Name).String()
	f.Line()
	consts := make([]jen.Code, len(t.Symbols))
	syms := make([]jen.Code, len(t.Symbols))
	cases := make([]jen.Code, len(t.Symbols))
	for i, s := range t.Symbols {
		c := EnumConstName(t, s)
		consts[i] = jen.Id(c).Id(t.Name).Op("=").Lit(s)
		syms[i] = jen.Id(c)
		cases[i] = jen.Case(jen.Id(c)).Block(jen.Return(jen.Qual(rt, "AppendInt").Call(jen.Id("dst"), jen.Lit(i)), jen.Nil()))
	}
	f.Comment("The symbols of " + t.Name + ", in wire order.")
	f.Const().Defs(consts...)
	f.Line()
	f.Comment("Valid reports whether v is one of the symbols of " + t.Name + ".")
	f.Func().Params(jen.Id("v").Id(t.Name)).Id("Valid").Params().Bool().Block(
		jen.Switch(jen.Id("v")).Block(jen.Case(syms...).Block(jen.Return(jen.True()))),
		jen.Return(jen.False()),
	)
	f.Line()
	e.schemaConst(t)
	f.Func().Params(jen.Id("v").Id(t.Name)).Id("appendAvro").Params(jen.Id("dst").Index().Byte()).Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Switch(jen.Id("v")).Block(cases...),
		jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit("%q is not a symbol of "+t.FullName), jen.String().Call(jen.Id("v")))),
	)
	f.Line()
	dcases := make([]jen.Code, len(t.Symbols))
	for i, s := range t.Symbols {
		c := jen.Case(jen.Lit(i))
		if i == len(t.Symbols)-1 {
			c = jen.Default()
		}
		dcases[i] = c.Block(jen.Op("*").Id("v").Op("=").Id(EnumConstName(t, s)))
	}
	f.Func().Params(jen.Id("v").Op("*").Id(t.Name)).Id("decodeAvro").Params(jen.Id("src").Index().Byte()).Params(jen.Index().Byte(), jen.Error()).Block(
		jen.List(jen.Id("i"), jen.Id("src"), jen.Err()).Op(":=").Qual(rt, "ReadEnumIndex").Call(jen.Id("src"), jen.Lit(len(t.Symbols))),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Switch(jen.Id("i")).Block(dcases...),
		jen.Return(jen.Id("src"), jen.Nil()),
	)
	f.Line()
}

func (e *emitter) fixed(t *model.Type) {
	e.f.Comment(fmt.Sprintf("%s is the Avro fixed %s of %d bytes.", t.Name, t.FullName, t.Size))
	if t.Doc != "" {
		e.f.Comment("")
		e.f.Comment(t.Doc)
	}
	e.f.Type().Id(t.Name).Index(jen.Lit(t.Size)).Byte()
	e.f.Line()
	e.schemaConst(t)
}

func (e *emitter) union(t *model.Type) {
	f := e.f
	sealed := "is" + t.Name
	var names []string
	nullIdx := -1
	for i, v := range t.Variants {
		if v.Null {
			nullIdx = i
			continue
		}
		names = append(names, VariantGoType(t, v))
	}
	f.Comment(t.Name + " is the Avro union of " + t.FullName + ": one of")
	f.Comment(strings.Join(names, ", ") + ".")
	if nullIdx >= 0 {
		f.Comment("A nil " + t.Name + " is null.")
	} else {
		f.Comment("It has no null branch: encoding a nil " + t.Name + " is an error.")
	}
	f.Type().Id(t.Name).Interface(jen.Id(sealed).Params())
	f.Line()
	for _, v := range t.Variants {
		if v.Null {
			continue
		}
		switch v.Kind {
		case model.Record:
			f.Func().Params(jen.Op("*").Id(v.Name)).Id(sealed).Params().Block()
		case model.Enum, model.Fixed:
			f.Func().Params(jen.Id(v.Name)).Id(sealed).Params().Block()
		default:
			w := t.Name + VariantSuffix(v)
			f.Comment(w + " is the " + VariantSuffix(v) + " branch of " + t.Name + ".")
			f.Type().Id(w).Struct(jen.Id("Value").Add(gotype.Of(v)))
			f.Line()
			f.Func().Params(jen.Id(w)).Id(sealed).Params().Block()
		}
		f.Line()
	}

	// append
	e.err, e.n = false, 0
	fail := func(err jen.Code) jen.Code { return jen.Return(jen.Nil(), err) }
	var cases []jen.Code
	for i, v := range t.Variants {
		if v.Null {
			cases = append(cases, jen.Case(jen.Nil()).Block(jen.Id("dst").Op("=").Qual(rt, "AppendLong").Call(jen.Id("dst"), jen.Lit(i))))
			continue
		}
		body := []jen.Code{jen.Id("dst").Op("=").Qual(rt, "AppendLong").Call(jen.Id("dst"), jen.Lit(i))}
		var val jen.Code
		switch v.Kind {
		case model.Record:
			body = append([]jen.Code{jen.If(jen.Id("u").Op("==").Nil()).Block(jen.Return(jen.Nil(), jen.Qual(rt, "ErrNilUnion")))}, body...)
			val = jen.Id("u")
		case model.Enum, model.Fixed:
			val = jen.Id("u")
		default:
			val = jen.Id("u").Dot("Value")
		}
		// records are reached with depth already counted by the caller
		stmts := e.appendValue(val, v, fail)
		body = append(body, stmts...)
		caseType := jen.Id(VariantGoType(t, v))
		if v.Kind == model.Record {
			caseType = jen.Op("*").Id(v.Name)
		}
		cases = append(cases, jen.Case(caseType).Block(body...))
	}
	if nullIdx < 0 {
		cases = append(cases, jen.Case(jen.Nil()).Block(jen.Return(jen.Nil(), jen.Qual(rt, "ErrNilUnion"))))
	}
	cases = append(cases, jen.Default().Block(jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit("%T is not a branch of union "+t.Name), jen.Id("u")))))
	body := []jen.Code{}
	if e.err {
		body = append(body, jen.Var().Err().Error())
	}
	body = append(body, jen.Switch(jen.Id("u").Op(":=").Id("u").Assert(jen.Type())).Block(cases...), jen.Return(jen.Id("dst"), jen.Nil()))
	f.Func().Id("append"+t.Name).Params(jen.Id("dst").Index().Byte(), jen.Id("u").Id(t.Name), jen.Id("depth").Int()).Params(jen.Index().Byte(), jen.Error()).Block(body...)
	f.Line()

	// decode
	e.n = 0
	dfail := func(err jen.Code) jen.Code { return jen.Return(jen.Nil(), jen.Nil(), err) }
	var dcases []jen.Code
	for i, v := range t.Variants {
		c := jen.Case(jen.Lit(i))
		if i == len(t.Variants)-1 {
			c = jen.Default()
		}
		var body []jen.Code
		switch {
		case v.Null:
			body = []jen.Code{jen.Return(jen.Nil(), jen.Id("src"), jen.Nil())}
		case v.Kind == model.Record:
			body = []jen.Code{
				jen.Id("u").Op(":=").New(jen.Id(v.Name)),
				jen.If(jen.List(jen.Id("src"), jen.Err()).Op("=").Id("u").Dot("decodeAvro").Call(jen.Id("src"), jen.Id("depth"), jen.Id("whole")), jen.Err().Op("!=").Nil()).Block(dfail(jen.Err())),
				jen.Return(jen.Id("u"), jen.Id("src"), jen.Nil()),
			}
		case v.Kind == model.Enum || v.Kind == model.Fixed:
			body = append([]jen.Code{jen.Var().Id("u").Id(v.Name)}, e.decodeValue(jen.Id("u"), v, dfail)...)
			body = append(body, jen.Return(jen.Id("u"), jen.Id("src"), jen.Nil()))
		default:
			w := t.Name + VariantSuffix(v)
			body = append([]jen.Code{jen.Var().Id("u").Id(w)}, e.decodeValue(jen.Id("u").Dot("Value"), v, dfail)...)
			body = append(body, jen.Return(jen.Id("u"), jen.Id("src"), jen.Nil()))
		}
		dcases = append(dcases, c.Block(body...))
	}
	f.Func().Id("decode"+t.Name).Params(jen.Id("src").Index().Byte(), jen.Id("depth").Int(), jen.Id("whole").String()).Params(jen.Id(t.Name), jen.Index().Byte(), jen.Error()).Block(
		jen.List(jen.Id("i"), jen.Id("src"), jen.Err()).Op(":=").Qual(rt, "ReadUnionIndex").Call(jen.Id("src"), jen.Lit(len(t.Variants))),
		jen.If(jen.Err().Op("!=").Nil()).Block(dfail(jen.Err())),
		jen.Switch(jen.Id("i")).Block(dcases...),
	)
	f.Line()
}
