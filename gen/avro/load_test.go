package avro

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"
	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/gen/model"
)

func mustLoad(t *testing.T, files ...string) *model.Universe {
	t.Helper()
	u, err := Load(files)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func field(t *testing.T, r *model.Type, wire string) *model.Field {
	t.Helper()
	for _, f := range r.Fields {
		if f.WireName == wire {
			return f
		}
	}
	t.Fatalf("%s has no field %s", r.FullName, wire)
	return nil
}

// shape is a short description of a type, for comparisons.
func shape(t *model.Type) string {
	switch {
	case t.Null:
		return "null"
	case t.IsNamed():
		return t.Kind.String() + " " + t.Name
	case t.Kind == model.Array || t.Kind == model.Map || t.Kind == model.Optional:
		return t.Kind.String() + "(" + shape(t.Elem) + ")"
	}
	return t.Kind.String()
}

func TestLoadOrder(t *testing.T) {
	u := mustLoad(t, fixtures...)
	order := u.Types["com.example.shop.Order"]
	if order == nil || u.Types["Order"] != order {
		t.Fatalf("Order not found by full and short name: %v", u.Types)
	}
	if order.Name != "Order" || order.Kind != model.Record || order.Doc != "An order placed in the shop." {
		t.Errorf("order: %+v", order)
	}
	if want := (model.Pos{File: "testdata/order.avsc", Line: 1, Col: 28}); order.Pos != want {
		t.Errorf("order pos %v, want %v", order.Pos, want)
	}
	want := map[string]string{
		"id":          "uuid",
		"customer":    "record Customer",
		"placed":      "timestamp",
		"shipped":     "optional(timestamp)",
		"day":         "date",
		"total":       "decimal",
		"tax":         "decimal",
		"discount":    "optional(decimal)",
		"status":      "enum Status",
		"lines":       "array(record Line)",
		"attrs":       "map(int64)",
		"note":        "optional(string)",
		"payment":     "union OrderPayment",
		"ratio":       "float64",
		"flags":       "map(array(bool))",
		"maybeLines":  "optional(array(record Line))",
		"maybeStatus": "optional(enum Status)",
		"raw":         "bytes",
		"choice":      "union OrderChoice",
		"nested":      "array(map(union OrderNestedItemValue))",
		"big":         "int64",
	}
	got := map[string]string{}
	for _, f := range order.Fields {
		got[f.WireName] = shape(f.Type)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("field shapes (-want +got):\n%s", d)
	}

	if f := field(t, order, "id"); f.Name != "ID" || f.Doc != "Order identifier." || f.Pos.Line != 4 {
		t.Errorf("id field: %+v", f)
	}
	if f := field(t, order, "maybeLines"); f.Name != "MaybeLines" {
		t.Errorf("maybeLines Go name %s", f.Name)
	}
	if ty := field(t, order, "placed").Type; ty.Unit != model.Millis {
		t.Errorf("placed unit %v", ty.Unit)
	}
	if ty := field(t, order, "shipped").Type; ty.Elem.Unit != model.Micros || ty.NullIndex != 0 {
		t.Errorf("shipped: %+v", ty)
	}
	if ty := field(t, order, "note").Type; ty.NullIndex != 1 {
		t.Errorf("note: [string, null] has NullIndex %d, want 1", ty.NullIndex)
	}
	if ty := field(t, order, "total").Type; ty.Precision != 12 || ty.Scale != 2 || ty.Size != 0 {
		t.Errorf("total: %+v", ty)
	}
	if ty := field(t, order, "tax").Type; ty.Precision != 18 || ty.Scale != 4 || ty.Size != 8 || ty.FullName != "com.example.shop.Money" || ty.IsNamed() {
		t.Errorf("tax: %+v", ty)
	}
	status := field(t, order, "status").Type
	if d := cmp.Diff([]string{"PENDING", "PAID", "SHIPPED", "CANCELLED"}, status.Symbols); d != "" || status.Doc != "Where the order is." {
		t.Errorf("status: %s %q", d, status.Doc)
	}
	line := field(t, order, "lines").Type.Elem
	if dig := field(t, line, "digest").Type; dig.Kind != model.Fixed || dig.Size != 4 || dig.Name != "Digest" {
		t.Errorf("digest: %+v", dig)
	}
	if field(t, order, "maybeLines").Type.Elem.Elem != line {
		t.Error("a reference to Line is not the same *Type as its declaration")
	}
	pay := field(t, order, "payment").Type
	var vs []string
	for _, v := range pay.Variants {
		vs = append(vs, shape(v))
	}
	if d := cmp.Diff([]string{"null", "record Card", "record Cash", "string", "array(union OrderPaymentArrayItem)"}, vs); d != "" {
		t.Errorf("payment variants (-want +got):\n%s", d)
	}
	if pay.FullName != "com.example.shop.Order.payment" {
		t.Errorf("payment full name %s", pay.FullName)
	}

	defaults := map[string]any{
		"shipped": nil, "discount": nil, "payment": nil, "maybeLines": nil, "maybeStatus": nil, "status": "PENDING", "attrs": map[string]any{}, "note": "none",
		"ratio": json.Number("1.5"), "raw": "", "big": json.Number("9007199254740993"),
	}
	for _, f := range order.Fields {
		d, ok := defaults[f.WireName]
		if f.HasDefault != ok {
			t.Errorf("%s: HasDefault %v", f.WireName, f.HasDefault)
			continue
		}
		if diff := cmp.Diff(d, f.Default); diff != "" {
			t.Errorf("%s default (-want +got):\n%s", f.WireName, diff)
		}
	}

	// declared in another file, listed after its user
	cust := u.Types["com.example.crm.Customer"]
	if cust == nil || field(t, order, "customer").Type != cust || field(t, cust, "address").Type != u.Types["Address"] {
		t.Fatal("cross-file references are not resolved to the declared types")
	}
	// schemas stand alone: Customer's includes Address
	var js map[string]any
	if err := json.Unmarshal([]byte(cust.Schema), &js); err != nil {
		t.Fatalf("customer schema: %v", err)
	}
	if !strings.Contains(cust.Schema, `{"type":"record","name":"com.example.crm.Address"`) {
		t.Errorf("customer schema does not declare Address: %s", cust.Schema)
	}
	if !strings.Contains(order.Schema, `"default":9007199254740993`) {
		t.Errorf("order schema loses the exact long default: %s", order.Schema)
	}

	// top-level union of records
	if u.Types["com.example.events.Deleted"] == nil || u.Types["Created"] == nil {
		t.Error("records of a top-level union are missing")
	}
	if ty := field(t, u.Types["Deleted"], "nothing").Type; !ty.Null || ty.Kind != 0 {
		t.Errorf("null field: %+v", ty)
	}
}

func TestLoadInterop(t *testing.T) {
	u := mustLoad(t, "testdata/interop.avsc")
	in := u.Types["org.apache.avro.Interop"]
	node := u.Types["Node"]
	if in == nil || node == nil || u.Types["Foo"] == nil || u.Types["Kind"] == nil || u.Types["MD5"] == nil {
		t.Fatalf("types: %v", u.Types)
	}
	if field(t, node, "children").Type.Elem != node {
		t.Error("Node.children is not an array of Node itself")
	}
	if ty := field(t, in, "unionField").Type; ty.Kind != model.Union || ty.Name != "InteropUnionField" || len(ty.Variants) != 3 {
		t.Errorf("unionField: %+v", ty)
	}
	if ty := field(t, in, "timeMillisField").Type; ty.Kind != model.Int32 {
		t.Errorf("a logicalType on a field (not the type) must be ignored: %v", ty.Kind)
	}
	if ty := field(t, in, "fixedField").Type; ty.Size != 16 {
		t.Errorf("fixed: %+v", ty)
	}
}

// TestLoadOrderIndependent loads the fixtures in two orders.
func TestLoadOrderIndependent(t *testing.T) {
	rev := make([]string, len(fixtures))
	for i, f := range fixtures {
		rev[len(fixtures)-1-i] = f
	}
	a, b := mustLoad(t, fixtures...), mustLoad(t, rev...)
	sum := func(u *model.Universe) map[string]string {
		m := map[string]string{}
		for k, v := range u.Types {
			m[k] = v.Name + " " + v.Schema
		}
		return m
	}
	if d := cmp.Diff(sum(a), sum(b)); d != "" {
		t.Errorf("load order changes the result (-forward +reverse):\n%s", d)
	}
}

func TestLoadAmbiguousShortName(t *testing.T) {
	u := mustLoad(t, "testdata/ambiguous/a.avsc", "testdata/ambiguous/b.avsc")
	if _, ok := u.Types["Event"]; ok {
		t.Error("ambiguous short name Event is a key")
	}
	if a, b := u.Types["a.Event"], u.Types["b.Event"]; a == nil || b == nil || a.Name != "AEvent" || b.Name != "BEvent" {
		t.Errorf("a.Event, b.Event: %+v %+v", a, b)
	}
}

// TestLoadErrors checks each problem's message and place; a case without
// wanted errors must load.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name  string
		files []string
		want  []string
	}{
		{"unknown type", []string{"testdata/errors/unknown.avsc"},
			[]string{`testdata/errors/unknown.avsc:3:26: unknown type "x.Missing"`}},
		{"bad logical types", []string{"testdata/errors/badlogical.avsc"}, []string{
			`testdata/errors/badlogical.avsc:2:59: logical type date needs int, not string`,
			`testdata/errors/badlogical.avsc:3:58: decimal scale must be an integer from 0 to the precision 4`,
		}},
		{"duplicate across files", []string{"testdata/errors/dup1.avsc", "testdata/errors/dup2.avsc"},
			[]string{`testdata/errors/dup2.avsc:2:50: duplicate name "d.Twice" (first declared at testdata/errors/dup1.avsc:1:28)`}},
		{"duplicate field", []string{"testdata/errors/dupfield.avsc"},
			[]string{`testdata/errors/dupfield.avsc:3:12: record "F": duplicate field "a"`}},
		{"invalid json", []string{"testdata/errors/invalid.avsc"},
			[]string{`testdata/errors/invalid.avsc:3:18: invalid json: invalid character '"' after object key:value pair`}},
		{"missing file", []string{"testdata/errors/none.avsc"},
			[]string{`testdata/errors/none.avsc: open testdata/errors/none.avsc: no such file or directory`}},
		{"truncated", []string{write("trunc.avsc", `{"type": "record",`)},
			[]string{filepath.Join(dir, "trunc.avsc") + `:1:19: invalid json: unexpected end of file`}},
		{"fixed decimal too precise", []string{write("fd.avsc", `{"type":"fixed","name":"F","size":2,"logicalType":"decimal","precision":6}`)},
			[]string{filepath.Join(dir, "fd.avsc") + `:1:51: decimal precision 6 does not fit in fixed of 2 bytes (at most 4)`}},
		{"enum", []string{write("e.avsc", `{"type":"enum","name":"E","symbols":["A","A","1x"]}`)}, []string{
			filepath.Join(dir, "e.avsc") + `:1:42: enum "E": duplicate symbol "A"`,
			filepath.Join(dir, "e.avsc") + `:1:46: enum "E": invalid symbol "1x"`,
		}},
		{"go name clash", []string{write("g.avsc", `[{"type":"fixed","name":"order_id","size":1},{"type":"fixed","name":"OrderID","size":1}]`)},
			[]string{filepath.Join(dir, "g.avsc") + `:1:25: Go name OrderID of "order_id" is also the Go name of "OrderID"`}},
		{"invalid default", []string{write("d.avsc", `{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"x"}]}`)},
			[]string{filepath.Join(dir, "d.avsc") + `:1:74: invalid default for field a. <nil> not a int`}},
		{"union branches", []string{write("u.avsc", `{"type":"record","name":"S","fields":[{"name":"a","type":["int","int",["null"]]}]}`)}, []string{
			filepath.Join(dir, "u.avsc") + `:1:65: union has two branches of type int`,
			filepath.Join(dir, "u.avsc") + `:1:71: a union may not directly contain a union`,
		}},
		{"nested invalid default", []string{write("n.avsc", `{"type":"record","name":"R","fields":[{"name":"r","type":{"type":"record","name":"In","fields":[{"name":"b","type":"boolean","default":1}]}}]}`)},
			[]string{filepath.Join(dir, "n.avsc") + `:1:136: invalid default for field b. <nil> not a boolean`}},
		// These crashed the loader (SIGSEGV in kgen check and generate): a
		// named type without "name", or with a "name" that is not a string,
		// inside a union.
		{"nameless record in a union", []string{write("nn.avsc", `["null",{"type":"record","fields":[]}]`)},
			[]string{filepath.Join(dir, "nn.avsc") + `:1:9: record has no "name"`}},
		{"nameless enum in a field's union", []string{write("ne.avsc", `{"type":"record","name":"R","fields":[{"name":"a","type":["int",{"type":"enum","symbols":["A"]}]}]}`)},
			[]string{filepath.Join(dir, "ne.avsc") + `:1:65: enum has no "name"`}},
		{"fixed with a number for a name in a union", []string{write("nf.avsc", `[{"type":"fixed","name":1,"size":1},"int"]`)},
			[]string{filepath.Join(dir, "nf.avsc") + `:1:2: fixed has no "name"`}},
		// Found by FuzzLoad: kgen read the first "name", hamba/avro the
		// last, and the loader crashed on the name it did not know.
		{"duplicate key", []string{write("dk.avsc", `{"type": "record", "name": "A0", "name": "A","fields": []}`)},
			[]string{filepath.Join(dir, "dk.avsc") + `:1:34: duplicate key "name"`}},
		{"two top-level unions", []string{write("t1.avsc", `[{"type":"fixed","name":"F1","size":1},"int"]`), write("t2.avsc", `[{"type":"fixed","name":"F2","size":1},"int"]`)}, nil},
		{"all problems reported", []string{"testdata/errors/unknown.avsc", "testdata/errors/dupfield.avsc"}, []string{
			`testdata/errors/unknown.avsc:3:26: unknown type "x.Missing"`,
			`testdata/errors/dupfield.avsc:3:12: record "F": duplicate field "a"`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.files)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			got := strings.Split(err.Error(), "\n")
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
		})
	}
}

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"intField": "IntField", "order_line": "OrderLine", "userId": "UserID", "id": "ID",
		"MD5": "MD5", "md5": "Md5", "uuidField": "UUIDField", "a.b.Event": "ABEvent", "x": "X",
	} {
		if got := GoName(in); got != want {
			t.Errorf("GoName(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"PENDING": "Pending", "credit_card": "CreditCard", "A": "A", "ID": "ID"} {
		if got := symbolName(in); got != want {
			t.Errorf("symbolName(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzLoad feeds arbitrary schema text, next to the interop schema, to the
// loader: it must report errors, never panic.
func FuzzLoad(f *testing.F) {
	for _, name := range append(fixtures, "testdata/errors/badlogical.avsc", "testdata/errors/invalid.avsc") {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	interop, err := os.ReadFile("testdata/interop.avsc")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := load([]string{"fuzz.avsc", "interop.avsc"}, [][]byte{data, interop})
		if err == nil {
			ff := jen.NewFile("p")
			if err := Emit(ff, Types(u)); err != nil && !strings.Contains(err.Error(), "clashes") {
				t.Fatalf("emit: %v", err)
			}
			return
		}
		if !strings.Contains(err.Error(), "fuzz.avsc") && !strings.Contains(err.Error(), "interop.avsc") {
			t.Fatalf("error names no file: %v", err)
		}
	})
}
