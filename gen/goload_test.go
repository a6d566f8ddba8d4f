package gen

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/gen/model"
	"github.com/kgen-dev/kgen/schema"
)

// describeType renders a model type compactly, records by name only.
func describeType(t *model.Type) string {
	switch t.Kind {
	case model.Record:
		return "record " + t.FullName
	case model.Array, model.Map, model.Optional:
		return t.Kind.String() + "<" + describeType(t.Elem) + ">"
	}
	return t.Kind.String()
}

func TestLoadGoTypes(t *testing.T) {
	types, err := LoadGoTypes("../testdata/golden/multichild", []schema.Str{{Value: "./model"}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range types {
		names = append(names, k)
	}
	if diff := cmp.Diff([]string{"model.Key", "model.Reading"}, sortStrings(names)); diff != "" {
		t.Errorf("record types (-want +got):\n%s", diff)
	}
	r := types["model.Reading"]
	var fields []string
	for _, f := range r.Fields {
		fields = append(fields, fmt.Sprintf("%s %s %s @%d", f.Name, f.WireName, describeType(f.Type), f.Pos.Line))
	}
	want := []string{
		"Sensor sensor string @8",
		"Value value float64 @9",
		"AtMillis at_ms int64 @10",
		"Labels labels map<string> @11",
		"Location location optional<record model.Location> @12",
		"Raw raw bytes @13",
		"Ok ok bool @14",
	}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("Reading fields (-want +got):\n%s", diff)
	}
	if r.GoPackage != "github.com/kgen-dev/kgen/testdata/golden/multichild/model" || r.Name != "Reading" || r.Pos.File != "model/model.go" {
		t.Errorf("Reading: package %q name %q pos %v", r.GoPackage, r.Name, r.Pos)
	}
	if w := types["model.Key"].Fields[0].WireName; w != "sensor_name" {
		t.Errorf("avro tag: wire name %q, want sensor_name", w)
	}

	basic, err := LoadGoTypes("../testdata/golden/basic", []schema.Str{{Value: "./model"}})
	if err != nil {
		t.Fatal(err)
	}
	var orderFields []string
	for _, f := range basic["model.Order"].Fields {
		orderFields = append(orderFields, f.Name+" "+describeType(f.Type))
	}
	if diff := cmp.Diff([]string{"ID string", "CustomerID string", "Items array<record model.Item>", "PlacedAt timestamp", "Note optional<string>", "Attrs map<string>"}, orderFields); diff != "" {
		t.Errorf("Order fields (-want +got):\n%s", diff)
	}
	// Nested records are shared by pointer.
	if basic["model.Enriched"].Fields[0].Type != basic["model.Order"] {
		t.Error("Enriched.Order is not the Order type")
	}
}

func TestLoadGoTypesNoPackage(t *testing.T) {
	_, err := LoadGoTypes("../testdata/golden/basic", []schema.Str{{Value: "./nothing-here", Pos: model.Pos{File: "kgen.yaml", Line: 4, Col: 8}}})
	if err == nil || !strings.Contains(err.Error(), "kgen.yaml:4:8") {
		t.Fatalf("err = %v, want an error at the pattern", err)
	}
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// TestLoadGoTypesReportsEveryPackage: a package that does not compile does
// not hide the problems of another.
func TestLoadGoTypesReportsEveryPackage(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"go.mod":      "module example.com/m\n\ngo 1.24\n",
		"bad/bad.go":  "package bad\n\nvar X Strin\n",
		"good/rec.go": "package good\n\n//kgen:record\ntype R struct {\n\tC complex128\n}\n",
	} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := LoadGoTypes(dir, []schema.Str{{Value: "./bad"}, {Value: "./good"}})
	var es schema.Errors
	if !errors.As(err, &es) {
		t.Fatalf("want schema.Errors, got %v", err)
	}
	got := es.Error()
	for _, want := range []string{"bad/bad.go:3:7: undefined: Strin", "good/rec.go:5:2: R.C has unsupported type complex128"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
}
