package gen

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/schema"
)

// TestOperatorMutations resolves (and, when it resolves, emits) many
// variants of the operator golden cases: every line removed, and every
// operator given every other kind. Each must come back as generated code or
// as positioned errors, never a panic or an internal error.
func TestOperatorMutations(t *testing.T) {
	opKind := regexp.MustCompile(`op: (\w+)`)
	var variants []string
	for _, c := range []string{"ops-keyed", "err-ops-types"} {
		data, err := os.ReadFile(filepath.Join(goldenDir, c, schema.FileName))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for i := range lines {
			variants = append(variants, strings.Join(append(append([]string{}, lines[:i]...), lines[i+1:]...), "\n"))
			if !opKind.MatchString(lines[i]) {
				continue
			}
			for _, kind := range opKindNames() {
				l := slicesReplace(lines, i, opKind.ReplaceAllString(lines[i], "op: "+kind))
				variants = append(variants, strings.Join(l, "\n"))
			}
		}
	}
	generated, rejected := 0, 0
	for i, spec := range variants {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("variant %d panics: %v\n%s", i, r, spec)
				}
			}()
			s, err := schema.Parse("kgen.yaml", []byte(spec))
			var errs schema.Errors
			if err != nil && !errors.As(err, &errs) {
				t.Fatalf("variant %d: %v", i, err)
			}
			g, err := Resolve(s, universe(), "example.com/m")
			if err != nil {
				if !errors.As(err, &errs) {
					t.Fatalf("variant %d: internal error %v", i, err)
				}
				for _, e := range errs {
					if e.Pos.File != "kgen.yaml" || e.Pos.Line < 1 {
						t.Fatalf("variant %d: error without position: %v\n%s", i, e, spec)
					}
				}
				rejected++
				return
			}
			if err == nil && len(errs) > 0 {
				return // parse errors: Load would stop here
			}
			e := &emitter{g: g, pkgPath: "example.com/m", pkgName: "m"}
			if _, err := e.main(); err != nil {
				t.Fatalf("variant %d: emit: %v", i, err)
			}
			if _, err := e.testDriver(); err != nil {
				t.Fatalf("variant %d: emit test driver: %v", i, err)
			}
			generated++
		}()
	}
	t.Logf("%d variants: %d generated, %d rejected", len(variants), generated, rejected)
	if generated == 0 || rejected == 0 {
		t.Fatalf("%d generated, %d rejected: the variants no longer test both paths", generated, rejected)
	}
}

func slicesReplace(lines []string, i int, line string) []string {
	out := append([]string{}, lines...)
	out[i] = line
	return out
}

// TestTableTopicTimestamp: a table's topic cannot take its event time from
// a field yet; kgen check says so at the field rather than ignore it.
func TestTableTopicTimestamp(t *testing.T) {
	spec := `version: 1
app: a
types: {go: [./model]}
topics:
  in: {key: string, value: model.Sentence, timestamp: at}
operators:
  rows: {op: table, topic: in, store: rows}
`
	s, err := schema.Parse("kgen.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(s, universe(), "example.com/m")
	want := `kgen.yaml:5:55: topic "in": table "rows" reads it with the records' own timestamps: a timestamp field is not supported on a table's topic yet`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}
