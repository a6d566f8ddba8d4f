package gen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// staleFactoryNotes finds the methods of Factories, in the user's file,
// that are for no processor or operator of the spec and name a type that
// no longer exists: the factory of a removed processor returns its
// interface (ShoutProcessor), which kgen stopped generating, so the package
// does not compile ("undefined: ShoutProcessor"). Other leftover methods
// compile and are left alone.
func staleFactoryNotes(dir, file string, res *Result, wanted []string) []string {
	fset := token.NewFileSet()
	defined := map[string]bool{}
	addDecls := func(f *ast.File) {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					defined[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						defined[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							defined[n.Name] = true
						}
					}
				}
			}
		}
	}
	// What the package will declare: the files kgen writes (generated and
	// new scaffolds) and the user's own, which kgen never rewrites.
	for _, f := range res.Files {
		if strings.Contains(f.Path, "/") || !strings.HasSuffix(f.Path, ".go") || strings.HasSuffix(f.Path, "_test.go") {
			continue
		}
		if af, err := parser.ParseFile(fset, f.Path, f.Data, parser.SkipObjectResolution); err == nil {
			addDecls(af)
		}
	}
	var factories *ast.File
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, ".gen.go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			continue // the compiler will say it better
		}
		addDecls(af)
		if n == file {
			factories = af
		}
	}
	if factories == nil {
		return nil
	}
	var notes []string
	for _, d := range factories.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 || slices.Contains(wanted, fd.Name.Name) {
			continue
		}
		recv := fd.Recv.List[0].Type
		if s, ok := recv.(*ast.StarExpr); ok {
			recv = s.X
		}
		if id, ok := recv.(*ast.Ident); !ok || id.Name != idFactories {
			continue
		}
		var undefined []string
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				ast.Inspect(n.Type, visit) // its names are no types
				return false
			case *ast.SelectorExpr:
				return false // pkg.Name: another package's
			case *ast.Ident:
				if !defined[n.Name] && types.Universe.Lookup(n.Name) == nil && !slices.Contains(undefined, n.Name) {
					undefined = append(undefined, n.Name)
				}
			}
			return true
		}
		ast.Inspect(fd.Type, visit)
		if len(undefined) == 0 {
			continue
		}
		notes = append(notes, fmt.Sprintf("%s: %s method %s is for no processor or operator of %s and names %s, which kgen no longer generates (it will not compile: undefined: %s): delete the method",
			path.Join(filepath.Base(dir), file), idFactories, fd.Name.Name, "kgen.yaml", strings.Join(undefined, ", "), undefined[0]))
	}
	return notes
}
