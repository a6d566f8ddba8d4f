package gen

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
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
		return nil, append(errs, avroErrors(abs, display, patterns[0].Pos, err)...)
	}
	return u.Types, errs
}

// avroErrors turns the Avro loader's errors into schema errors, naming
// schema files relative to display, the directory as the user gave it.
// Errors without a place in a schema are put at the spec's types: avro.
func avroErrors(abs, display string, at schema.Pos, err error) schema.Errors {
	all := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		all = j.Unwrap()
	}
	var errs schema.Errors
	for _, e := range all {
		var ae *avro.Error
		if !errors.As(e, &ae) || ae.Pos.File == "" {
			errs = append(errs, &schema.Error{Pos: at, Msg: "types: avro: " + e.Error()})
			continue
		}
		pos := ae.Pos
		if rel, err := filepath.Rel(abs, pos.File); err == nil && !strings.HasPrefix(rel, "..") {
			pos.File = filepath.ToSlash(filepath.Join(display, rel))
		}
		errs = append(errs, &schema.Error{Pos: pos, Msg: ae.Msg})
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
