package gen

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
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

// TestVersionedQueries: a versioned table's store, once the spec can
// declare one (StoreNode.Flavor "versioned"), is served by queryapi.Versioned
// through stream.QueryVersioned, has an as-of accessor in the typed
// client and an asOf parameter in a valid openapi.json; the generated app
// builds against the runtime. The queries case's count store stands in
// for the table's: the code only needs its key and value types.
func TestVersionedQueries(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel() // its go command overlaps the others' (gocmd_test.go)
	p, err := Load(filepath.Join(goldenDir, "queries"))
	if err != nil {
		t.Fatal(err)
	}
	var counts *StoreNode
	for _, s := range p.Graph.Stores {
		if s.Name.Value == "counts" {
			counts = s
		}
	}
	if counts == nil {
		t.Fatal("no store counts in the queries case")
	}
	counts.Flavor = "versioned"
	res, err := p.Generate()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range res.Files {
		files[f.Path] = f.Data
	}
	app := string(files[FileApp])
	for _, want := range []string{
		"stream.QueryVersioned[string, *int64](a, StoreCounts, s.StoreCountsKey)",
		"queryapi.Versioned(srv, v0, queryapi.ParseKey[string], queryapi.Deref[int64])",
		"*queryapi.VersionedClient[string, int64]",
	} {
		if !strings.Contains(app, want) {
			t.Errorf("%s lacks %s", FileApp, want)
		}
	}
	doc, err := openapi3.NewLoader().LoadFromData(files[FileOpenAPI])
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	get := doc.Paths.Find("/v1/stores/counts/keys/{key}")
	if get == nil || get.Get == nil || get.Get.Parameters.GetByInAndName("query", "asOf") == nil {
		t.Fatal("openapi.json: no asOf parameter of GET /v1/stores/counts/keys/{key}")
	}
	if doc.Paths.Find("/v1/stores/counts/keys") != nil {
		t.Error("openapi.json: a versioned store has reads of many keys")
	}
	// The generated app, in place of the case's, builds.
	tmp := t.TempDir()
	src := filepath.Join(tmp, FileApp)
	if err := os.WriteFile(src, files[FileApp], 0o644); err != nil {
		t.Fatal(err)
	}
	target, err := filepath.Abs(filepath.Join(goldenDir, "queries", FileApp))
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlay, []byte(`{"Replace": {`+quote(target)+`: `+quote(src)+`}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-overlay", overlay, "./testdata/golden/queries")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
}

// TestEveryQueryableKind: every kind of store a spec can declare takes
// queryable: true and is served, and the generated project builds: a
// processor's key-value store, an aggregation's, a table's, a windowed
// aggregation's window store and a session store.
func TestEveryQueryableKind(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel() // its go command overlaps the others' (gocmd_test.go)
	// In the module, so that it builds against this runtime; a folder
	// starting with _ is outside ./..., and its subfolder is not.
	dir := filepath.Join(stableDir(t, ".", "_queryable"), "q")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := `version: 1
app: qkinds
package: qkinds
topics:
  words: {key: string, value: string}
  users: {key: int64, value: string}
  prices: {key: string, value: int64}
stores:
  seen:       {key: string, value: int64, queryable: true}
  counts:     {key: string, value: int64, queryable: true}
  users:      {key: int64, value: string, queryable: true}
  per-minute: {kind: window, key: string, value: int64, queryable: true}
  visits:     {kind: session, key: string, value: int64, queryable: true}
  prices:     {key: string, value: int64, queryable: true}
processors:
  remember: {from: [words], stores: [seen]}
operators:
  by-word:    {op: groupByKey, from: [words]}
  counted:    {op: count, from: [by-word], store: counts}
  user-table: {op: table, topic: users, store: users}
  minute:     {op: count, from: [by-word], store: per-minute, window: {tumbling: 1m}}
  sessions:   {op: count, from: [by-word], store: visits, window: {session: 30m}}
  price-table: {op: table, topic: prices, store: prices, versioned: {history: 1h}}
`
	if err := os.WriteFile(filepath.Join(dir, "kgen.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	var app string
	for _, f := range res.Files {
		if f.Path == FileApp {
			app = string(f.Data)
		}
	}
	for _, want := range []string{
		"out[StoreSeen] = queryapi.KeyValue(srv, v3, queryapi.ParseKey[string], queryapi.Plain[int64])",
		"out[StoreCounts] = queryapi.StampedKeyValue(srv, v0, queryapi.ParseKey[string], queryapi.Unstamped[int64], queryapi.Stamp[int64])",
		"out[StoreUsers] = queryapi.StampedKeyValue(srv, v4, queryapi.ParseKey[int64], queryapi.Unstamped[string], queryapi.Stamp[string])",
		"out[StorePerMinute] = queryapi.Window(",
		"out[StoreVisits] = queryapi.Session(",
		"out[StorePrices] = queryapi.Versioned(srv, v2, queryapi.ParseKey[string], queryapi.Deref[int64])",
	} {
		if !strings.Contains(app, want) {
			t.Errorf("%s lacks %s", FileApp, want)
		}
	}
	if t.Failed() {
		i := strings.Index(app, "func QueryHandlers")
		t.Logf("%s", app[i:i+3000])
	}
	if _, err := res.Write(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "vet", "./"+filepath.ToSlash(dir)+"/...")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the generated project does not build: %v\n%s", err, out)
	}
}
