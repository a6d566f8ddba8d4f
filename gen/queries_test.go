package gen

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestOpenAPIObsolete: openapi.json is written while a store is queryable
// and listed as obsolete once none is; a file of that name kgen did not
// write is left alone.
func TestOpenAPIObsolete(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/q\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := func(queryable bool) {
		q := ""
		if queryable {
			q = ", queryable: true"
		}
		data := "version: 1\napp: q\npackage: q\ntopics:\n  words: {key: string, value: string}\n  out: {key: string, value: int64}\n" +
			"stores:\n  counts: {key: string, value: int64" + q + "}\n" +
			"operators:\n  g: {op: groupByKey, from: [words]}\n  c: {op: count, from: [g], store: counts}\n  s: {op: toStream, from: [c], to: [out]}\n"
		if err := os.WriteFile(filepath.Join(dir, "kgen.yaml"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec(true)
	res, err := Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Files, func(f File) bool { return f.Path == FileOpenAPI }) {
		t.Fatal("no openapi.json with a queryable store")
	}
	if _, err := res.Write(); err != nil {
		t.Fatal(err)
	}
	spec(false)
	if res, err = Generate(dir); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Obsolete, FileOpenAPI) {
		t.Errorf("obsolete %v, want openapi.json", res.Obsolete)
	}
	if err := os.WriteFile(filepath.Join(dir, FileOpenAPI), []byte(`{"openapi": "3.0.3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err = Generate(dir); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(res.Obsolete, FileOpenAPI) {
		t.Error("the user's openapi.json is listed as obsolete")
	}
}
