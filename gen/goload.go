package gen

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/kgen-dev/kgen/gen/model"
	"github.com/kgen-dev/kgen/schema"
)

// recordMarker marks a struct as a record type in its doc comment.
const recordMarker = "//kgen:record"

// LoadGoTypes loads the Go packages matching patterns (relative to dir) and
// returns every struct marked //kgen:record, by spec name ("model.Sentence").
// Unsupported fields come back as schema.Errors naming file.go:line:col,
// together with the types that were found, so the spec can still be checked.
func LoadGoTypes(dir string, patterns []schema.Str) (map[string]*model.Type, error) {
	types, _, err := loadGoTypes(dir, patterns)
	return types, err
}

// loadGoTypes is LoadGoTypes that also returns the structs it saw without
// the marker, by spec name, so that a spec naming one can be told what is
// missing rather than that the type is unknown.
func loadGoTypes(dir string, patterns []schema.Str) (map[string]*model.Type, map[string]model.Pos, error) {
	out := map[string]*model.Type{}
	unmarked := map[string]model.Pos{}
	if len(patterns) == 0 {
		return out, unmarked, nil
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	var pats []string
	for _, p := range patterns {
		pats = append(pats, p.Value)
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo | packages.NeedFiles,
		Dir:  dir,
	}
	pkgs, err := packages.Load(cfg, pats...)
	if err != nil {
		// Mostly a pattern that names nothing: the user's to fix.
		var errs schema.Errors
		for _, p := range patterns {
			errs = append(errs, &schema.Error{Pos: p.Pos, Msg: fmt.Sprintf("types: go: cannot load %s: %v", strings.Join(pats, " "), err)})
		}
		return nil, nil, errs[:1]
	}
	var errs schema.Errors
	if len(pkgs) == 0 {
		for _, p := range patterns {
			errs = append(errs, &schema.Error{Pos: p.Pos, Msg: fmt.Sprintf("types: go: no package matches %q", p.Value)})
		}
		return nil, nil, errs
	}
	l := &goLoader{dir: dir, fset: cfg.Fset, named: map[*types.TypeName]*model.Type{}}
	for _, pkg := range pkgs {
		if l.fset == nil && pkg.Fset != nil {
			l.fset = pkg.Fset
		}
		for _, e := range pkg.Errors {
			if e.Kind == packages.ListError && strings.HasPrefix(e.Msg, "# ") && len(pkg.TypeErrors) > 0 {
				continue // the go command's copy of the type errors below
			}
			e.Msg = strings.ReplaceAll(e.Msg, dir+string(filepath.Separator), "")
			if e.Pos == "" || e.Pos == "-" {
				// No place in a Go file: the pattern itself is wrong.
				at := patterns[0]
				for _, p := range patterns {
					if p.Value == pkg.ID || p.Value == pkg.PkgPath {
						at = p
					}
				}
				errs = append(errs, &schema.Error{Pos: at.Pos, Msg: fmt.Sprintf("types: go: %s: %s", at.Value, e.Msg)})
				continue
			}
			errs = append(errs, &schema.Error{Pos: l.errPos(e.Pos), Msg: e.Msg})
		}
	}
	// A package that failed to load is reported above; the others are
	// still read, so their own problems are reported in the same run.
	slices.SortFunc(pkgs, func(a, b *packages.Package) int { return strings.Compare(a.PkgPath, b.PkgPath) })
	for _, pkg := range pkgs {
		if len(pkg.Errors) > 0 || pkg.IllTyped || pkg.TypesInfo == nil {
			continue
		}
		l.fset = pkg.Fset
		for _, f := range pkg.Syntax {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					if !marked(ts.Doc) && !(len(gd.Specs) == 1 && marked(gd.Doc)) {
						if _, ok := ts.Type.(*ast.StructType); ok && ts.Name.IsExported() {
							unmarked[pkg.Name+"."+ts.Name.Name] = l.pos(ts.Pos())
						}
						continue
					}
					obj, _ := pkg.TypesInfo.Defs[ts.Name].(*types.TypeName)
					if obj == nil {
						continue
					}
					if _, ok := obj.Type().Underlying().(*types.Struct); !ok {
						l.errorf(ts.Pos(), "%s is marked %s but is not a struct", ts.Name.Name, recordMarker)
						continue
					}
					key := pkg.Name + "." + obj.Name()
					if prev, dup := out[key]; dup && prev.GoPackage != pkg.PkgPath {
						l.errorf(ts.Pos(), "record type %s is declared in %s and %s: spec names must be unique", key, prev.GoPackage, pkg.PkgPath)
						continue
					}
					out[key] = l.convert(obj.Type(), ts.Pos(), key)
				}
			}
		}
	}
	if errs = append(errs, l.errs...); len(errs) > 0 {
		return out, unmarked, errs.Sort()
	}
	return out, unmarked, nil
}

func marked(cg *ast.CommentGroup) bool {
	if cg == nil {
		return false
	}
	for _, c := range cg.List {
		if strings.TrimSpace(c.Text) == recordMarker {
			return true
		}
	}
	return false
}

type goLoader struct {
	dir   string
	fset  *token.FileSet
	named map[*types.TypeName]*model.Type
	errs  schema.Errors
}

func (l *goLoader) pos(p token.Pos) model.Pos {
	if l.fset == nil || !p.IsValid() {
		return model.Pos{File: "-"}
	}
	position := l.fset.Position(p)
	file := position.Filename
	if rel, err := filepath.Rel(l.dir, file); err == nil && !strings.HasPrefix(rel, "..") {
		file = filepath.ToSlash(rel)
	}
	return model.Pos{File: file, Line: position.Line, Col: position.Column}
}

func (l *goLoader) errPos(s string) model.Pos {
	// s is "file:line:col"; keep the file relative to the spec's directory.
	file, rest := s, ""
	for range 2 {
		if i := strings.LastIndexByte(file, ':'); i > 0 {
			rest = file[i:] + rest
			file = file[:i]
		}
	}
	if rel, err := filepath.Rel(l.dir, file); err == nil && !strings.HasPrefix(rel, "..") {
		file = filepath.ToSlash(rel)
	}
	var line, col int
	fmt.Sscanf(rest, ":%d:%d", &line, &col)
	return model.Pos{File: file, Line: line, Col: col}
}

func (l *goLoader) errorf(p token.Pos, format string, args ...any) {
	l.errs = append(l.errs, &schema.Error{Pos: l.pos(p), Msg: fmt.Sprintf(format, args...)})
}

// convert maps a Go type to the model; at is where it was used, for errors.
func (l *goLoader) convert(t types.Type, at token.Pos, what string) *model.Type {
	switch t := t.(type) {
	case *types.Alias:
		return l.convert(types.Unalias(t), at, what)
	case *types.Named:
		obj := t.Obj()
		if obj.Pkg() != nil && obj.Pkg().Path() == "time" && obj.Name() == "Time" {
			return &model.Type{Kind: model.Timestamp}
		}
		if m, ok := l.named[obj]; ok {
			return m
		}
		st, ok := t.Underlying().(*types.Struct)
		if !ok {
			// A named basic type (type Status string) travels as its
			// underlying type.
			return l.convert(t.Underlying(), at, what)
		}
		if t.TypeArgs().Len() > 0 {
			l.errorf(at, "%s: generic type %s is not supported", what, t)
			return &model.Type{Kind: model.Record}
		}
		m := &model.Type{Kind: model.Record, Name: obj.Name(), Pos: l.pos(obj.Pos())}
		if obj.Pkg() != nil {
			m.GoPackage = obj.Pkg().Path()
			m.FullName = obj.Pkg().Name() + "." + obj.Name()
		}
		l.named[obj] = m
		for i := range st.NumFields() {
			f := st.Field(i)
			if !f.Exported() {
				continue
			}
			if f.Embedded() {
				l.errorf(f.Pos(), "%s.%s: embedded fields are not supported in a record type", obj.Name(), f.Name())
				continue
			}
			wire, skip := wireName(f.Name(), st.Tag(i))
			if skip {
				continue
			}
			m.Fields = append(m.Fields, &model.Field{
				Name:     f.Name(),
				WireName: wire,
				Type:     l.convert(f.Type(), f.Pos(), obj.Name()+"."+f.Name()),
				Pos:      l.pos(f.Pos()),
			})
		}
		return m
	case *types.Basic:
		switch t.Kind() {
		case types.String:
			return &model.Type{Kind: model.String}
		case types.Bool:
			return &model.Type{Kind: model.Bool}
		case types.Int32:
			return &model.Type{Kind: model.Int32}
		case types.Int64:
			return &model.Type{Kind: model.Int64}
		case types.Float32:
			return &model.Type{Kind: model.Float32}
		case types.Float64:
			return &model.Type{Kind: model.Float64}
		}
		l.errorf(at, "%s has unsupported type %s (use string, bool, int32, int64, float32 or float64)", what, t)
	case *types.Pointer:
		return &model.Type{Kind: model.Optional, Elem: l.convert(t.Elem(), at, what)}
	case *types.Slice:
		if b, ok := t.Elem().(*types.Basic); ok && b.Kind() == types.Byte {
			return &model.Type{Kind: model.Bytes}
		}
		return &model.Type{Kind: model.Array, Elem: l.convert(t.Elem(), at, what)}
	case *types.Map:
		if b, ok := t.Key().Underlying().(*types.Basic); !ok || b.Kind() != types.String {
			l.errorf(at, "%s has unsupported type %s: map keys must be strings", what, t)
			return &model.Type{Kind: model.Map}
		}
		return &model.Type{Kind: model.Map, Elem: l.convert(t.Elem(), at, what)}
	default:
		l.errorf(at, "%s has unsupported type %s", what, t)
	}
	return &model.Type{Kind: model.Bytes}
}

// wireName is a field's name in JSON and Avro: the avro tag, else the json
// tag, else the Go name. skip is true for json:"-".
func wireName(goName, tag string) (name string, skip bool) {
	st := reflect.StructTag(tag)
	if v, ok := st.Lookup("avro"); ok && v != "" {
		return strings.Split(v, ",")[0], false
	}
	if v, ok := st.Lookup("json"); ok {
		n := strings.Split(v, ",")[0]
		if n == "-" && v == "-" {
			return "", true
		}
		if n != "" {
			return n, false
		}
	}
	return goName, false
}
