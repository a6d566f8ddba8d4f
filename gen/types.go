package gen

import (
	"slices"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/gen/internal/gotype"
	"github.com/kgen-dev/kgen/gen/model"
)

// TypeRef is a type named in the spec, resolved, as a node carries it: the
// spec's type inside zero or more wrappers, which compose (a table's change
// of a nullable value, a windowed key).
type TypeRef struct {
	// Name is as the spec writes the type ("model.Sentence", "int64"), as
	// Go spells it once wrapped ("dsl.Change[int64]").
	Name string
	Type *model.Type
	// Wraps are the wrappers around Type, innermost first; none for the
	// type as the spec names it.
	Wraps []*Wrapper
	// base is the spec's name of Type once wrapped.
	base string
}

// Wrapper is a generic type around another: what an operator's output
// carries instead of the spec's type.
type Wrapper struct {
	// Name is the wrapper as the dsl package names it, for messages.
	Name string
	// dsl says the wrapper is a generic type of package dsl (Name[T]),
	// else a pointer.
	dsl bool
}

// The wrappers operators use.
var (
	// ChangeOf is dsl.Change[T]: a table row's old and new value.
	ChangeOf = &Wrapper{Name: "Change", dsl: true}
	// PointerTo is *T: a value that may be missing, nil (a table row's new
	// value after toStream, nil when deleted; the side of a join that may
	// find no match).
	PointerTo = &Wrapper{Name: "*"}
	// WindowedOf is dsl.Windowed[K]: a key and the window it falls in, the
	// key of a windowed aggregation's table.
	WindowedOf = &Wrapper{Name: "Windowed", dsl: true}
)

func (w *Wrapper) text(inner string) string {
	if !w.dsl {
		return "*" + inner
	}
	return "dsl." + w.Name + "[" + inner + "]"
}

func (w *Wrapper) code(inner *jen.Statement) *jen.Statement {
	if !w.dsl {
		return jen.Op("*").Add(inner)
	}
	return jen.Qual(pkgDSL, w.Name).Types(inner)
}

// wrapped is r inside w.
func (r TypeRef) wrapped(w *Wrapper) TypeRef {
	if len(r.Wraps) == 0 {
		r.base = r.Name
	}
	r.Wraps = append(slices.Clip(r.Wraps), w)
	r.Name = w.text(r.Name)
	return r
}

// outer is the outermost wrapper of r, nil for the spec's type.
func (r TypeRef) outer() *Wrapper {
	if len(r.Wraps) == 0 {
		return nil
	}
	return r.Wraps[len(r.Wraps)-1]
}

// is reports whether r's outermost wrapper is w.
func (r TypeRef) is(w *Wrapper) bool { return r.outer() == w }

// unwrapped is r without its outermost wrapper.
func (r TypeRef) unwrapped() TypeRef {
	if len(r.Wraps) == 0 {
		return r
	}
	inner := r.plain()
	for _, w := range r.Wraps[:len(r.Wraps)-1] {
		inner = inner.wrapped(w)
	}
	return inner
}

// plain is the spec type r wraps.
func (r TypeRef) plain() TypeRef {
	if len(r.Wraps) == 0 {
		return r
	}
	return TypeRef{Name: r.base, Type: r.Type}
}

// Same reports whether two references denote the same type.
func (r TypeRef) Same(o TypeRef) bool {
	if !slices.Equal(r.Wraps, o.Wraps) {
		return false
	}
	if r.Type == nil || o.Type == nil {
		return true // already reported as unknown
	}
	if r.Type.IsNamed() || o.Type.IsNamed() {
		return r.Type == o.Type
	}
	return r.Type.Kind == o.Type.Kind
}

// typeOf is the Go type of values of r, wrapped as operators carry it.
func typeOf(r TypeRef) *jen.Statement {
	s := gotype.Of(r.Type)
	for _, w := range r.Wraps {
		s = w.code(s)
	}
	return s
}

// refText writes r as Go source seen from package self.
func refText(r TypeRef, self string, imports map[string]string) string {
	s := typeText(r.Type, self, imports)
	for _, w := range r.Wraps {
		if w.dsl {
			imports[pkgDSL] = "dsl"
		}
		s = w.text(s)
	}
	return s
}
