// Package gotype maps kgen's type model to the Go types generated code
// uses, for every emitter alike.
package gotype

import (
	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/gen/model"
)

// Of is the Go type of values of t: a named type by its name (qualified
// when it lives in another package), the others spelled out. A nil type is
// struct{}, as is Avro's null.
func Of(t *model.Type) *jen.Statement {
	if t == nil {
		return jen.Struct()
	}
	if t.IsNamed() {
		if t.GoPackage != "" {
			return jen.Qual(t.GoPackage, t.Name)
		}
		return jen.Id(t.Name)
	}
	switch t.Kind {
	case model.String, model.UUID:
		return jen.String()
	case model.Bytes:
		return jen.Index().Byte()
	case model.Bool:
		return jen.Bool()
	case model.Int32:
		return jen.Int32()
	case model.Int64:
		return jen.Int64()
	case model.Float32:
		return jen.Float32()
	case model.Float64:
		return jen.Float64()
	case model.Timestamp, model.Date:
		return jen.Qual("time", "Time")
	case model.Decimal:
		return jen.Op("*").Qual("math/big", "Rat")
	case model.Fixed:
		return jen.Index(jen.Lit(t.Size)).Byte()
	case model.Array:
		return jen.Index().Add(Of(t.Elem))
	case model.Map:
		return jen.Map(jen.String()).Add(Of(t.Elem))
	case model.Optional:
		if t.Elem.Kind == model.Decimal && !t.Elem.IsNamed() {
			return Of(t.Elem) // *big.Rat already has nil for null
		}
		return jen.Op("*").Add(Of(t.Elem))
	}
	return jen.Struct()
}
