package gen

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kgen-dev/kgen/gen/avro"
	"github.com/kgen-dev/kgen/gen/model"
	"github.com/kgen-dev/kgen/schema"
)

// loadAvro reads the .avsc files the spec names (globs relative to abs) with
// the Avro loader. Problems come back as schema errors with paths shown
// relative to display, the directory as the user gave it.
func loadAvro(abs, display string, patterns []schema.Str) (map[string]*model.Type, schema.Errors) {
	if len(patterns) == 0 {
		return nil, nil
	}
	var errs schema.Errors
	var files []string
	for _, p := range patterns {
		matches, err := filepath.Glob(filepath.Join(abs, filepath.FromSlash(p.Value)))
		if err != nil {
			errs = append(errs, &schema.Error{Pos: p.Pos, Msg: fmt.Sprintf("types: avro: bad pattern %q: %v", p.Value, err)})
			continue
		}
		if len(matches) == 0 {
			errs = append(errs, &schema.Error{Pos: p.Pos, Msg: fmt.Sprintf("types: avro: no file matches %q", p.Value)})
		}
		for _, m := range matches {
			if !slices.Contains(files, m) {
				files = append(files, m)
			}
		}
	}
	if len(files) == 0 {
		return nil, errs
	}
	slices.Sort(files)
	u, err := avro.Load(files)
	if err != nil {
		return nil, append(errs, avroErrors(abs, display, err)...)
	}
	return u.Types, errs
}

var avroErrPos = regexp.MustCompile(`^(.+?\.avsc):(\d+):(\d+): (.*)$`)

// avroErrors turns the Avro loader's joined "file.avsc:LINE:COL: message"
// errors into schema errors.
func avroErrors(abs, display string, err error) schema.Errors {
	var lines []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			lines = append(lines, e.Error())
		}
	} else {
		lines = strings.Split(err.Error(), "\n")
	}
	var errs schema.Errors
	for _, l := range lines {
		m := avroErrPos.FindStringSubmatch(l)
		if m == nil {
			errs = append(errs, &schema.Error{Pos: model.Pos{File: filepath.Join(display, "kgen.yaml")}, Msg: "types: avro: " + l})
			continue
		}
		file := m[1]
		if rel, err := filepath.Rel(abs, file); err == nil && !strings.HasPrefix(rel, "..") {
			file = filepath.ToSlash(filepath.Join(display, rel))
		}
		line, _ := strconv.Atoi(m[2])
		col, _ := strconv.Atoi(m[3])
		errs = append(errs, &schema.Error{Pos: model.Pos{File: file, Line: line, Col: col}, Msg: m[4]})
	}
	if len(errs) == 0 {
		errs = append(errs, &schema.Error{Pos: model.Pos{File: filepath.Join(display, "kgen.yaml")}, Msg: "types: avro: " + errors.Unwrap(err).Error()})
	}
	return errs
}

// avro writes kgen_avro.gen.go: the Go types of the Avro schemas with their
// codecs and serdes, by the Avro emitter.
func (e *emitter) avro(types map[string]*model.Type) ([]byte, error) {
	f := e.newFile()
	if err := avro.Emit(f, avro.Types(&model.Universe{Types: types})); err != nil {
		return nil, fmt.Errorf("emit Avro types: %w", err)
	}
	return render(f)
}

// avroSerdeExpr is the generated serde of an Avro record for format avro or
// avro-confluent (whose schema id RegisterSchemas fills in).
func avroSerdeExpr(format string, t *model.Type) (jen.Code, error) {
	if t == nil || t.Kind != model.Record || t.GoPackage != "" {
		return nil, fmt.Errorf("format %s needs a record type from an Avro schema", format)
	}
	if format == schema.FormatAvroConfluent {
		return jen.Id(avro.ConfluentSerdeName(t)).Values(), nil
	}
	return jen.Id(avro.SerdeName(t)).Values(), nil
}
