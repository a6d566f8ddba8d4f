// Package templates holds the text/template files kgen renders: only files
// a user owns once written (processor implementations, Factories, a main, a
// new project's files). Regenerated files come from jennifer, in package gen.
package templates

import (
	"embed"
	"text/template"
)

//go:embed *.tmpl
var files embed.FS

// Parse returns every template, by file name ("processor.go.tmpl").
func Parse() (*template.Template, error) {
	return template.New("kgen").Funcs(template.FuncMap{}).ParseFS(files, "*.tmpl")
}
