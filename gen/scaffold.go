package gen

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/gen/model"
	"github.com/kgen-dev/kgen/schema"
	"github.com/kgen-dev/kgen/templates"
)

// typeText writes a model type as Go source seen from package self, adding
// the imports it needs.
func typeText(t *model.Type, self string, imports map[string]string) string {
	if t == nil {
		return "struct{}"
	}
	if t.IsNamed() {
		if t.GoPackage == "" || t.GoPackage == self {
			return t.Name
		}
		name := path.Base(t.GoPackage)
		if i := strings.IndexByte(t.FullName, '.'); i > 0 {
			name = t.FullName[:i]
		}
		imports[t.GoPackage] = name
		return name + "." + t.Name
	}
	switch t.Kind {
	case model.String, model.UUID:
		return "string"
	case model.Bytes:
		return "[]byte"
	case model.Bool, model.Int32, model.Int64, model.Float32, model.Float64:
		return t.Kind.String()
	case model.Timestamp, model.Date:
		imports["time"] = "time"
		return "time.Time"
	case model.Decimal:
		imports["math/big"] = "big"
		return "*big.Rat"
	case model.Fixed:
		return fmt.Sprintf("[%d]byte", t.Size)
	case model.Array:
		return "[]" + typeText(t.Elem, self, imports)
	case model.Map:
		return "map[string]" + typeText(t.Elem, self, imports)
	case model.Optional:
		return "*" + typeText(t.Elem, self, imports)
	}
	return "struct{}"
}

// importLines renders an import block's lines: the standard library first,
// then a blank line, then the rest.
func importLines(imports map[string]string) []string {
	var std, other []string
	for p, name := range imports {
		line := strconv.Quote(p)
		if path.Base(p) != name {
			line = name + " " + line
		}
		if strings.Contains(strings.Split(p, "/")[0], ".") {
			other = append(other, line)
		} else {
			std = append(std, line)
		}
	}
	slices.Sort(std)
	slices.Sort(other)
	if len(std) > 0 && len(other) > 0 {
		std = append(std, "")
	}
	return append(std, other...)
}

func snake(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func executeTemplate(name string, data any) ([]byte, error) {
	t, err := templates.Parse()
	if err != nil {
		return nil, fmt.Errorf("parse templates: %w", err)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	return gofmt(name, buf.Bytes())
}

// userMethods lists, per type name, the methods declared on it in the
// hand-written Go files of dir, and the file each type is declared in.
func userMethods(dir string) (methods map[string][]string, declared map[string]string, err error) {
	methods, declared = map[string][]string{}, map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, ".gen.go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			continue // the compiler will say it better
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) != 1 {
					continue
				}
				t := d.Recv.List[0].Type
				if s, ok := t.(*ast.StarExpr); ok {
					t = s.X
				}
				if id, ok := t.(*ast.Ident); ok {
					methods[id.Name] = append(methods[id.Name], d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						declared[ts.Name.Name] = n
					}
				}
			}
		}
	}
	return methods, declared, nil
}

// factories scaffolds Factories, the user's implementation of Processors,
// or, when it exists, announces the methods a new processor needs: the
// compiler stops at "var _ Processors = Factories{}" until they are there.
func (e *emitter) factories(dir string, res *Result, methods map[string][]string, declared map[string]string) error {
	if file, ok := declared[idFactories]; ok {
		for _, p := range e.g.Processors {
			if !slices.Contains(methods[idFactories], p.Go.Factory) {
				res.Notes = append(res.Notes, fmt.Sprintf("%s: %s has no method for processor %q yet (it will not compile): add\n\tfunc (%s) %s() %s { return &%s{} }", path.Join(filepath.Base(dir), file), idFactories, p.Name.Value, idFactories, p.Go.Factory, p.Go.Interface, p.Go.Impl))
			}
		}
		for _, o := range e.g.allOps() {
			for _, fn := range o.funcs() {
				if !slices.Contains(methods[idFactories], fn.method) {
					res.Notes = append(res.Notes, fmt.Sprintf("%s: %s has no method %s for %s yet (it will not compile): add\n\tfunc (%s) %s", path.Join(filepath.Base(dir), file), idFactories, fn.method, o.what(), idFactories, fn.signature(e.pkgPath, map[string]string{}, false)))
				}
			}
		}
		var wanted []string
		for _, p := range e.g.Processors {
			wanted = append(wanted, p.Go.Factory)
		}
		for _, o := range e.g.allOps() {
			for _, fn := range o.funcs() {
				wanted = append(wanted, fn.method)
			}
		}
		res.Notes = append(res.Notes, staleFactoryNotes(dir, file, res, wanted)...)
		return nil
	}
	type procRef struct{ Name, Factory, Interface, Impl string }
	var procs []procRef
	for _, p := range e.g.Processors {
		procs = append(procs, procRef{p.Name.Value, p.Go.Factory, p.Go.Interface, p.Go.Impl})
	}
	// Stubs of the operators' functions, with named results so that each
	// compiles as a bare return.
	type opRef struct{ Doc, Signature, What string }
	var ops []opRef
	imports := map[string]string{}
	for _, o := range e.g.allOps() {
		for _, fn := range o.funcs() {
			ops = append(ops, opRef{fn.method + " " + fn.doc, fn.signature(e.pkgPath, imports, true), o.what()})
		}
	}
	src, err := executeTemplate("factories.go.tmpl", map[string]any{
		"Package": e.pkgName, "SpecFile": schema.FileName, "Type": idFactories, "Interface": idProcessors, "Processors": procs,
		"Operators": ops, "Imports": importLines(imports),
	})
	if err != nil {
		return err
	}
	res.Files = append(res.Files, File{Path: FileFactories, Data: src, Scaffold: true})
	return nil
}

// scaffolds adds the user-owned files that do not exist yet, and notes for
// files that exist but miss what the spec now asks for.
func (e *emitter) scaffolds(dir string, res *Result) error {
	methods, declared, err := userMethods(dir)
	if err != nil {
		return err
	}
	for _, p := range e.g.Processors {
		imports := map[string]string{"errors": "errors"}
		key, value := refText(p.In.Key, e.pkgPath, imports), refText(p.In.Value, e.pkgPath, imports)
		ctx := p.Go.Context
		type punct struct{ Method, Every, Kind string }
		var puncts []punct
		want := []string{fmt.Sprintf("Process(ctx *%s, key %s, value %s) error", ctx, key, value)}
		for _, pu := range p.Punctuations {
			kind := "stream time"
			if pu.WallClock {
				kind = "wall-clock time"
			}
			puncts = append(puncts, punct{pu.Method, durationText(pu.Every), kind})
			want = append(want, fmt.Sprintf("%s(ctx *%s, now time.Time) error", pu.Method, ctx))
			imports["time"] = "time"
		}
		if file, ok := declared[p.Go.Impl]; ok {
			// The user's file exists: announce, never edit.
			for _, sig := range want {
				name := sig[:strings.IndexByte(sig, '(')]
				if !slices.Contains(methods[p.Go.Impl], name) {
					res.Notes = append(res.Notes, fmt.Sprintf("%s: %s does not have method %s yet: add\n\tfunc (p *%s) %s {\n\t\treturn nil\n\t}", filepath.ToSlash(filepath.Join(filepath.Base(dir), file)), p.Go.Impl, name, p.Go.Impl, sig))
				}
			}
			continue
		}
		var children []string
		if len(p.Children) > 1 {
			for _, m := range p.Go.ForwardTo {
				children = append(children, "ctx."+m+"(key, value)")
			}
		}
		var inputs []string
		for _, par := range p.Parents {
			inputs = append(inputs, strconv.Quote(par.Name()))
		}
		src, err := executeTemplate("processor.go.tmpl", map[string]any{
			"Package": e.pkgName, "Imports": importLines(imports), "Name": p.Name.Value,
			"Type": p.Go.Impl, "Interface": p.Go.Interface, "Context": ctx, "Key": key, "Value": value,
			"Inputs": strings.Join(inputs, ", "), "Forwards": p.HasOut && len(p.Children) > 0, "Children": strings.Join(children, ", "),
			"Punctuations":   puncts,
			"NotImplemented": strconv.Quote(fmt.Sprintf("processor %q is not implemented yet: write %s.Process in %s", p.Name.Value, p.Go.Impl, p.Go.File)),
		})
		if err != nil {
			return err
		}
		file := p.Go.File
		if _, err := os.Stat(filepath.Join(dir, file)); err == nil {
			res.Notes = append(res.Notes, fmt.Sprintf("%s exists but does not declare %s: implement %s somewhere in package %s", file, p.Go.Impl, p.Go.Interface, e.pkgName))
			continue
		}
		res.Files = append(res.Files, File{Path: file, Data: src, Scaffold: true})
	}

	if err := e.factories(dir, res, methods, declared); err != nil {
		return err
	}

	// The main of the application, under cmd/APP.
	mainPath := path.Join("cmd", e.g.Spec.App.Value, "main.go")
	importSpec := strconv.Quote(e.pkgPath)
	if path.Base(e.pkgPath) != e.pkgName {
		importSpec = e.pkgName + " " + importSpec
	}
	src, err := executeTemplate("main.go.tmpl", map[string]any{
		"App": e.g.Spec.App.Value, "ImportSpec": importSpec, "PkgName": e.pkgName, "Factories": idFactories,
	})
	if err != nil {
		return err
	}
	res.Files = append(res.Files, File{Path: mainPath, Data: src, Scaffold: true})
	return nil
}
