// Package gen is kgen's generator: it loads a topology spec and the record
// types it names (Go structs marked //kgen:record), resolves them into one
// graph, and emits typed Go code for the runtime with jennifer, plus the
// files a user owns once written (processor implementations, a main).
package gen

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/gen/model"
	"github.com/kgen-dev/kgen/runtime/queryapi"
	"github.com/kgen-dev/kgen/schema"
)

// Names of the generated files, in the spec's directory.
const (
	FileMain       = "kgen.gen.go"
	FileTestDriver = "kgen_test_driver.gen.go"
	FileApp        = "kgen_app.gen.go"
	FileAvro       = "kgen_avro.gen.go" // Go types and codecs of Avro schemas
	// FileFactories is the scaffold implementing Processors, the user's.
	FileFactories = "factories.go"
)

// File is one output file.
type File struct {
	Path string // slash-separated, relative to the spec's directory
	Data []byte
	// Scaffold files belong to the user: written when absent, never
	// overwritten.
	Scaffold bool
}

// Result is everything one run of the generator produced.
type Result struct {
	Dir   string
	Graph *Graph
	Files []File
	// Notes tell the user what to change in files kgen does not touch.
	Notes []string
	// Obsolete lists generated files on disk that the spec no longer calls
	// for; Write removes them.
	Obsolete []string
}

// isGenerated reports whether the file at path exists and starts with kgen's
// generated-code header.
func isGenerated(path string) bool {
	data, err := os.ReadFile(path)
	return err == nil && bytes.HasPrefix(data, []byte("// "+genHeader+"\n"))
}

// Project is a loaded and validated spec with where its code goes.
type Project struct {
	Dir     string // the spec's directory
	Spec    *schema.Spec
	Graph   *Graph
	PkgPath string // import path of the spec's directory
	PkgName string // package name of the generated code
	// Avro holds the types read from .avsc files, by spec name; the
	// generator declares them (with their codecs) in the spec's package.
	Avro map[string]*model.Type
}

// Load reads DIR/kgen.yaml (dir may also be that file) and the record types
// it names, and validates them. Problems in the user's files come back as schema.Errors, all of them.
func Load(dir string) (*Project, error) {
	// The spec file itself names its directory; any other file is a mistake
	// to say plainly, not an error opening dir/kgen.yaml.
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		if filepath.Base(dir) != schema.FileName {
			return nil, schema.Errors{{Pos: model.Pos{File: dir}, Msg: "not a directory: give the directory that holds " + schema.FileName}}
		}
		dir = filepath.Dir(dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	specPath := filepath.Join(abs, schema.FileName)
	data, err := os.ReadFile(specPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, schema.Errors{{Pos: model.Pos{File: filepath.Join(dir, schema.FileName)}, Msg: "no spec here: run kgen init, or kgen generate DIR with the directory holding " + schema.FileName}}
		}
		return nil, fmt.Errorf("read spec: %w", err)
	}
	// Positions name the spec relative to where kgen runs when that is short.
	display := filepath.Join(dir, schema.FileName)
	spec, perr := schema.Parse(display, data)
	var errs schema.Errors
	if perr != nil {
		if !errors.As(perr, &errs) {
			return nil, perr
		}
	}
	u := &model.Universe{Types: map[string]*model.Type{}, Unmarked: map[string]model.Pos{}}
	if len(spec.Types.Go) > 0 {
		types, unmarked, err := loadGoTypes(abs, spec.Types.Go)
		var terrs schema.Errors
		switch {
		case errors.As(err, &terrs):
			// Its types are unknown now; the resolver must not say so
			// again for each use.
			u.Incomplete = true
			for _, e := range terrs {
				// Go files are named relative to the spec's directory.
				if e.Pos.File != display && e.Pos.File != "-" && !filepath.IsAbs(e.Pos.File) {
					e.Pos.File = filepath.ToSlash(filepath.Join(dir, e.Pos.File))
				}
			}
			errs = append(errs, terrs...)
		case err != nil:
			return nil, err
		}
		for k, t := range types {
			u.Types[k] = t
		}
		for k, pos := range unmarked {
			if pos.File != "-" && !filepath.IsAbs(pos.File) {
				pos.File = filepath.ToSlash(filepath.Join(dir, pos.File))
			}
			u.Unmarked[k] = pos
		}
	}
	avroTypes, aerrs := loadAvro(abs, dir, spec.Types.Avro)
	errs = append(errs, aerrs...)
	for k, t := range avroTypes {
		if prev, dup := u.Types[k]; dup && prev != t {
			errs = append(errs, &schema.Error{Pos: t.Pos, Msg: fmt.Sprintf("type name %s is declared both in Go (%s) and in an Avro schema", k, prev.Pos)})
			continue
		}
		u.Types[k] = t
	}
	pkgPath, err := importPath(abs)
	if err != nil {
		return nil, append(errs, &schema.Error{Pos: model.Pos{File: display}, Msg: err.Error()}).Sort()
	}
	g, rerr := Resolve(spec, u, pkgPath)
	if rerr != nil {
		var rerrs schema.Errors
		if !errors.As(rerr, &rerrs) {
			return nil, rerr
		}
		errs = append(errs, rerrs...)
	}
	if g != nil {
		decls, err := userDecls(abs, dir)
		if err != nil {
			return nil, err
		}
		errs = append(errs, checkUserDecls(g, decls)...)
	}
	name, err := packageName(abs, spec)
	if err != nil {
		var perrs schema.Errors
		if !errors.As(err, &perrs) {
			return nil, err
		}
		errs = append(errs, perrs...)
	}
	if len(errs) > 0 {
		return nil, errs.Sort()
	}
	return &Project{Dir: abs, Spec: spec, Graph: g, PkgPath: pkgPath, PkgName: name, Avro: avroTypes}, nil
}

var moduleLine = regexp.MustCompile(`(?m)^module\s+"?([^\s"]+)"?`)

// importPath finds the import path of dir from the go.mod above it.
func importPath(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			m := moduleLine.FindSubmatch(data)
			if m == nil {
				return "", fmt.Errorf("%s: no module line", filepath.Join(d, "go.mod"))
			}
			rel, err := filepath.Rel(d, dir)
			if err != nil {
				return "", err
			}
			if rel == "." {
				return string(m[1]), nil
			}
			return string(m[1]) + "/" + filepath.ToSlash(rel), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or above: the spec must live in a Go module", dir)
		}
	}
}

// packageName is the spec's package:, else the package of the Go files
// already in dir, else the directory name made into an identifier. A
// package: that differs from the package of the hand-written Go files in dir
// is an error at package:, since the directory would hold two packages.
func packageName(dir string, spec *schema.Spec) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	existing, from := "", ""
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		// Files the go command leaves out (//go:build ignore, _windows.go)
		// do not make the package.
		if ok, err := build.Default.MatchFile(dir, n); err != nil || !ok {
			continue
		}
		path := filepath.Join(dir, n)
		if isGenerated(path) {
			continue // rewritten with the new package name
		}
		f, err := parser.ParseFile(fset, path, nil, parser.PackageClauseOnly)
		if err == nil {
			existing, from = f.Name.Name, n
			break
		}
	}
	if spec.Package.Value != "" {
		if existing != "" && existing != spec.Package.Value {
			return "", schema.Errors{{Pos: spec.Package.Pos, Msg: fmt.Sprintf("package %q: the Go files in this directory are package %s (%s), and one directory holds one package: write package: %s, or change their package clauses", spec.Package.Value, existing, from, existing)}}
		}
		return spec.Package.Value, nil
	}
	if existing == "main" {
		return "", schema.Errors{{Pos: model.Pos{File: spec.File, Line: 1, Col: 1}, Msg: fmt.Sprintf("the Go files in this directory are package main (%s): generated code needs a package of its own; move the command to cmd/NAME", from)}}
	}
	if existing != "" {
		return existing, nil
	}
	var b strings.Builder
	for _, r := range strings.ToLower(filepath.Base(dir)) {
		if r >= 'a' && r <= 'z' || b.Len() > 0 && r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 || isKeyword(b.String()) || b.String() == "main" {
		return "", schema.Errors{{Pos: model.Pos{File: spec.File, Line: 1, Col: 1}, Msg: "cannot derive a package name from the directory: add \"package: NAME\" to the spec"}}
	}
	return b.String(), nil
}

// userDecls lists the package-level names declared in the hand-written,
// non-test Go files of dir that the go command builds, with their places
// (files named relative to display, the directory as the user gave it).
func userDecls(dir, display string) (map[string]model.Pos, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]model.Pos{}
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(dir, n); err != nil || !ok {
			continue
		}
		path := filepath.Join(dir, n)
		if isGenerated(path) {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			continue // the compiler will say it better
		}
		add := func(id *ast.Ident) {
			if id.Name == "_" {
				return
			}
			p := fset.Position(id.Pos())
			out[id.Name] = model.Pos{File: filepath.ToSlash(filepath.Join(display, n)), Line: p.Line, Col: p.Column}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					add(d.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						add(s.Name)
					case *ast.ValueSpec:
						for _, id := range s.Names {
							add(id)
						}
					}
				}
			}
		}
	}
	return out, nil
}

// Generate loads the spec in dir and produces every file in memory.
func Generate(dir string) (*Result, error) {
	p, err := Load(dir)
	if err != nil {
		return nil, err
	}
	return p.Generate()
}

// Generate produces every file of a loaded project in memory.
func (p *Project) Generate() (*Result, error) {
	e := &emitter{g: p.Graph, pkgPath: p.PkgPath, pkgName: p.PkgName}
	res := &Result{Dir: p.Dir, Graph: p.Graph}
	mainSrc, err := e.main()
	if err != nil {
		return nil, err
	}
	res.Files = append(res.Files, File{Path: FileMain, Data: mainSrc})
	driver, err := e.testDriver()
	if err != nil {
		return nil, err
	}
	res.Files = append(res.Files, File{Path: FileTestDriver, Data: driver})
	app, err := e.app()
	if err != nil {
		return nil, err
	}
	res.Files = append(res.Files, File{Path: FileApp, Data: app})
	if len(e.queryable()) > 0 {
		doc, err := e.openAPI()
		if err != nil {
			return nil, err
		}
		res.Files = append(res.Files, File{Path: FileOpenAPI, Data: append(doc, '\n')})
	} else if data, err := os.ReadFile(filepath.Join(p.Dir, FileOpenAPI)); err == nil && bytes.Contains(data, []byte(queryapi.GeneratedMark)) {
		res.Obsolete = append(res.Obsolete, FileOpenAPI) // no store is queryable any more
	}
	if len(p.Avro) > 0 {
		src, err := e.avro(p.Avro)
		if err != nil {
			return nil, err
		}
		res.Files = append(res.Files, File{Path: FileAvro, Data: src})
	} else if isGenerated(filepath.Join(p.Dir, FileAvro)) {
		res.Obsolete = append(res.Obsolete, FileAvro)
	}
	if err := e.scaffolds(p.Dir, res); err != nil {
		return nil, err
	}
	return res, nil
}

// Write writes generated files that changed and scaffolds that do not exist
// yet. It returns the paths it wrote.
func (r *Result) Write() ([]string, error) {
	var wrote []string
	for _, f := range r.Files {
		path := filepath.Join(r.Dir, filepath.FromSlash(f.Path))
		old, err := os.ReadFile(path)
		switch {
		case err == nil && f.Scaffold:
			continue
		case err == nil && bytes.Equal(old, f.Data):
			continue
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return wrote, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return wrote, err
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			return wrote, err
		}
		wrote = append(wrote, f.Path)
	}
	for _, o := range r.Obsolete {
		if err := os.Remove(filepath.Join(r.Dir, filepath.FromSlash(o))); err != nil {
			return wrote, err
		}
		wrote = append(wrote, o+" (removed)")
	}
	return wrote, nil
}

// Stale compares the generated files with what is on disk and returns a
// unified-style diff per stale file (scaffolds are the user's and not
// compared), sorted by path.
func (r *Result) Stale() ([]string, error) {
	var out []string
	for _, f := range r.Files {
		if f.Scaffold {
			continue
		}
		old, err := os.ReadFile(filepath.Join(r.Dir, filepath.FromSlash(f.Path)))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if bytes.Equal(old, f.Data) {
			continue
		}
		out = append(out, Diff(f.Path, string(old), string(f.Data)))
	}
	for _, o := range r.Obsolete {
		old, err := os.ReadFile(filepath.Join(r.Dir, filepath.FromSlash(o)))
		if err != nil {
			return nil, err
		}
		out = append(out, Diff(o, string(old), ""))
	}
	slices.Sort(out)
	return out, nil
}

// gofmt formats src, reporting which file failed on error.
func gofmt(name string, src []byte) ([]byte, error) {
	out, err := format.Source(src)
	if err != nil {
		return nil, fmt.Errorf("format %s: %w\n%s", name, err, src)
	}
	return out, nil
}
