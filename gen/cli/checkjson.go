package cli

import (
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/kgen-dev/kgen/gen"
	"github.com/kgen-dev/kgen/schema"
)

// Diagnostic is one problem kgen check -format json reports.
type Diagnostic struct {
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Severity string `json:"severity"` // error or warning
	Message  string `json:"message"`
}

// CheckReport is the JSON object kgen check -format json prints.
type CheckReport struct {
	OK          bool         `json:"ok"`
	Summary     string       `json:"summary,omitempty"` // the graph, when the spec is valid
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// checkJSON is kgen check -format json: one JSON object on stdout in every
// case, so an editor or CI step has one thing to parse; the exit status is
// check's.
func checkJSON(dir string, stdout io.Writer) int {
	rep := CheckReport{Diagnostics: []Diagnostic{}}
	code := ExitOK
	p, err := gen.Load(dir)
	var errs schema.Errors
	switch {
	case errors.As(err, &errs):
		code = ExitUser
		for _, e := range errs {
			rep.Diagnostics = append(rep.Diagnostics, Diagnostic{File: e.Pos.File, Line: e.Pos.Line, Column: e.Pos.Col, Severity: "error", Message: e.Msg})
		}
	case err != nil:
		code = ExitInternal
		rep.Diagnostics = append(rep.Diagnostics, Diagnostic{Severity: "error", Message: "internal error: " + err.Error()})
	default:
		res, err := p.Generate()
		if err != nil {
			code = ExitInternal
			rep.Diagnostics = append(rep.Diagnostics, Diagnostic{Severity: "error", Message: "internal error: " + err.Error()})
			break
		}
		rep.OK = len(res.Notes) == 0
		if !rep.OK {
			code = ExitUser
		}
		for _, n := range res.Notes {
			file, msg, ok := strings.Cut(n, ": ")
			if !ok || strings.Contains(file, " ") {
				file, msg = "", n
			}
			rep.Diagnostics = append(rep.Diagnostics, Diagnostic{File: file, Severity: "error", Message: msg})
		}
		rep.Summary = p.Graph.Describe()
		orphans, err := orphanedScaffolds(p)
		if err != nil {
			rep.Diagnostics = append(rep.Diagnostics, Diagnostic{Severity: "warning", Message: "looking for processor files left over: " + err.Error()})
		}
		for _, o := range orphans {
			rep.Diagnostics = append(rep.Diagnostics, Diagnostic{File: o.File, Severity: "warning",
				Message: "processor \"" + o.Processor + "\" is no longer in kgen.yaml: delete the file if its code is not needed"})
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return ExitInternal
	}
	return code
}
