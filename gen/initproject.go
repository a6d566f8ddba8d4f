package gen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kgen-dev/kgen/gen/model"
	"github.com/kgen-dev/kgen/schema"
	"github.com/kgen-dev/kgen/templates"
)

// kgenModule is kgen's own module path.
const kgenModule = "github.com/kgen-dev/kgen"

// InitOptions configures Init.
type InitOptions struct {
	// Module makes the project a module of its own with this path. Default:
	// a package of the module the directory is in, or, outside any module,
	// a new module named after the directory.
	Module string
	// KgenVersion is the kgen version to require; "(devel)" or empty means
	// this source checkout, found from the running binary.
	KgenVersion string
	// Checkout overrides the kgen source checkout a development build points
	// the project at (a replace directive).
	Checkout string
}

// Init creates a new project in dir: kgen.yaml, a record type, a processor
// with its test, and everything generate writes. Inside a module the project
// is a package of it (kgen becomes a tool of the module if it is not yet);
// outside any module, or with opts.Module, it is a module of its own with a
// go.mod. The project builds and its tests pass right away. It returns the
// files written, relative to dir.
func Init(dir string, opts InitOptions) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	userErr := func(format string, args ...any) error {
		return schema.Errors{{Pos: model.Pos{File: dir}, Msg: fmt.Sprintf(format, args...)}}
	}
	if _, err := os.Stat(filepath.Join(abs, schema.FileName)); err == nil {
		return nil, userErr("a project already exists here (%s): kgen init makes new ones", schema.FileName)
	}
	if _, err := os.Stat(filepath.Join(abs, "go.mod")); err == nil {
		return nil, userErr("go.mod already exists: kgen init makes a new module; add a kgen.yaml by hand to use kgen in an existing one")
	}
	app := strings.ToLower(filepath.Base(abs))
	if !validAppName(app) {
		return nil, userErr("directory name %q cannot be an application id: use letters, digits, '-', '_' and '.'", filepath.Base(abs))
	}
	pkg := ""
	for _, r := range app {
		if r >= 'a' && r <= 'z' || pkg != "" && r >= '0' && r <= '9' {
			pkg += string(r)
		}
	}
	if pkg == "" || pkg == "main" {
		pkg = "app"
	}
	module := opts.Module
	encRoot, encPath := enclosingModule(abs)
	newModule := module != "" || encRoot == ""
	if !newModule {
		rel, err := filepath.Rel(encRoot, abs)
		if err != nil {
			return nil, err
		}
		module = encPath + "/" + filepath.ToSlash(rel)
	}
	if module == "" {
		module = app
	}

	var gomod strings.Builder
	fmt.Fprintf(&gomod, "module %s\n\ngo %s\n\ntool %s/cmd/kgen\n", module, goVersion(), kgenModule)
	checkout := opts.Checkout
	version := opts.KgenVersion
	if version == "" || strings.HasPrefix(version, "(devel") {
		if checkout == "" {
			checkout = sourceCheckout()
		}
		if checkout == "" {
			return nil, errors.New("this kgen was built without a version and its source checkout cannot be found: install a released kgen (go install github.com/kgen-dev/kgen/cmd/kgen@latest)")
		}
		version = "v0.0.0-00010101000000-000000000000"
	}
	fmt.Fprintf(&gomod, "\nrequire %s %s\n", kgenModule, version)
	if checkout != "" {
		fmt.Fprintf(&gomod, "\n// The kgen that made this project is a development build with no version:\n"+
			"// the replace directive builds against its source checkout instead. With a\n"+
			"// released kgen, delete it and run go get -tool %s@latest.\n", kgenTool)
		fmt.Fprintf(&gomod, "replace %s => %s\n", kgenModule, replaceTarget(abs, checkout))
	}

	data := map[string]string{"App": app, "Package": pkg, "Module": module, "SchemaURL": schemaURL(opts.KgenVersion)}
	files := []struct{ path, tmpl string }{
		{schema.FileName, "init_kgen.yaml.tmpl"},
		{"doc.go", "init_generate.go.tmpl"},
		{"model/model.go", "init_model.go.tmpl"},
		{"shout.go", "init_shout.go.tmpl"},
		{pkg + "_test.go", "init_test.go.tmpl"},
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(abs, filepath.FromSlash(f.path))); err == nil {
			return nil, userErr("%s already exists: kgen init only writes into a new or empty directory", f.path)
		}
	}
	if !newModule {
		// Only now that nothing stands in the way: this edits the user's go.mod.
		if err := ensureKgenTool(encRoot, encPath, opts.KgenVersion); err != nil {
			return nil, userErr("%v", err)
		}
	}
	t, err := templates.Parse()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(abs, "model"), 0o755); err != nil {
		return nil, err
	}
	var wrote []string
	if newModule {
		if err := os.WriteFile(filepath.Join(abs, "go.mod"), []byte(gomod.String()), 0o644); err != nil {
			return nil, err
		}
		wrote = append(wrote, "go.mod")
	}
	for _, f := range files {
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&buf, f.tmpl, data); err != nil {
			return wrote, fmt.Errorf("template %s: %w", f.tmpl, err)
		}
		src := buf.Bytes()
		if strings.HasSuffix(f.path, ".go") {
			if src, err = gofmt(f.path, src); err != nil {
				return wrote, err
			}
		}
		if err := os.WriteFile(filepath.Join(abs, filepath.FromSlash(f.path)), src, 0o644); err != nil {
			return wrote, err
		}
		wrote = append(wrote, f.path)
	}
	// go.sum first: loading the model package needs the module graph.
	if newModule {
		if err := tidy(abs); err != nil {
			return wrote, err
		}
		wrote = append(wrote, "go.sum")
	}
	res, err := Generate(abs)
	if err != nil {
		return wrote, err
	}
	more, err := res.Write()
	wrote = append(wrote, more...)
	if err != nil {
		return wrote, err
	}
	// Again, for what the generated code imports. kgen's own module has all
	// of it already; another enclosing module may not.
	switch {
	case newModule:
		err = tidy(abs)
	case encPath != kgenModule:
		err = tidy(encRoot)
	}
	return wrote, err
}

func validAppName(s string) bool {
	id, ok := Ident(s)
	return ok && id != ""
}

// goVersion is the go directive of new projects: the language version of
// the toolchain that built kgen, at least kgen's own.
func goVersion() string {
	v := strings.TrimPrefix(runtime.Version(), "go")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return "1.26"
	}
	minor := parts[1]
	if i := strings.IndexAny(minor, "rcbeta"); i > 0 {
		minor = minor[:i]
	}
	return parts[0] + "." + minor
}

// sourceCheckout finds the kgen checkout this binary was built from, when it
// was built from one: the directory holding kgen's go.mod.
func sourceCheckout() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	root := filepath.Dir(filepath.Dir(file)) // .../gen/initproject.go -> checkout
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return ""
	}
	if m := moduleLine.FindSubmatch(data); m == nil || string(m[1]) != kgenModule {
		return ""
	}
	return root
}

func tidy(dir string) error {
	cmd := exec.Command("go", "mod", "tidy")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod tidy in %s: %w\n%s", dir, err, out)
	}
	return nil
}
