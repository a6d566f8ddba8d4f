package avro

import (
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/gen/model"
)

func TestEmitErrors(t *testing.T) {
	goType := &model.Type{Kind: model.Record, Name: "Sentence", FullName: "model.Sentence", GoPackage: "example.com/model",
		Pos: model.Pos{File: "model/s.go", Line: 3, Col: 6}}
	enum := &model.Type{Kind: model.Enum, Name: "Suit", FullName: "x.Suit", Symbols: []string{"A"}, Pos: model.Pos{File: "s.avsc", Line: 1, Col: 2}}
	clash := &model.Type{Kind: model.Fixed, Name: "SuitA", FullName: "x.SuitA", Size: 1, Pos: model.Pos{File: "t.avsc", Line: 4, Col: 5}}
	tests := []struct {
		name  string
		types []*model.Type
		want  string
	}{
		{"go struct", []*model.Type{goType}, "model/s.go:3:6: type model.Sentence is declared in Go package example.com/model; Emit writes only types loaded from Avro schemas"},
		{"identifier clash", []*model.Type{enum, clash}, "t.avsc:4:5: Go identifier SuitA of x.SuitA clashes with one of x.Suit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Emit(jen.NewFile("p"), tc.types)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
}

// TestEmitClosure checks that Emit declares the types reached from the ones
// it is given, once each.
func TestEmitClosure(t *testing.T) {
	u := mustLoad(t, "testdata/interop.avsc")
	f := jen.NewFile("p")
	if err := Emit(f, []*model.Type{u.Types["Interop"], u.Types["Node"]}); err != nil {
		t.Fatal(err)
	}
	code := f.GoString()
	for _, decl := range []string{"type Interop struct", "type Node struct", "type Foo struct", "type Kind string", "type MD5 [16]byte", "type InteropUnionField interface"} {
		if n := strings.Count(code, decl); n != 1 {
			t.Errorf("%q declared %d times", decl, n)
		}
	}
}
