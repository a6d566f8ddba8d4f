package gen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/schema"
)

// TestCompareSpecs runs the golden pairs of testdata/against: each folder
// holds old.yaml, new.yaml and want.txt, the changes kgen check --against
// reports (-update rewrites want.txt).
func TestCompareSpecs(t *testing.T) {
	dirs, err := filepath.Glob("../testdata/against/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			parse := func(name string) *schema.Spec {
				data, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				s, err := schema.Parse(name, data)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			var b strings.Builder
			for _, c := range CompareSpecs(parse("old.yaml"), parse("new.yaml")) {
				b.WriteString(c.String() + "\n")
			}
			got := b.String()
			path := filepath.Join(dir, "want.txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./gen -run TestCompareSpecs -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("changes differ (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompareOperators: operators' stores and repartition topics are named
// from the spec, so renaming them strands state.
func TestCompareOperators(t *testing.T) {
	old := `version: 1
app: a
topics:
  in: {key: string, value: string}
operators:
  by-word: {op: groupBy, from: [in], key: string}
  counted: {op: count, from: [by-word], store: counts}
  people:  {op: table, topic: in, store: rows}
`
	for _, tc := range []struct {
		name, new string
		want      []string
	}{
		{"unchanged", old, nil},
		{"store renamed", strings.Replace(old, "store: counts", "store: word-counts", 1), []string{
			`kgen.yaml:7:48: breaking: store "counts" of operator "counted" is gone: its state is lost (a-counts-changelog is left behind)`,
			`kgen.yaml:7:48: safe: store "word-counts" of operator "counted" is new: it starts empty`,
		}},
		{"store reused for other rows", strings.Replace(old, "{op: count, from: [by-word], store: counts}", "{op: aggregate, from: [by-word], store: counts, value: int64}", 1), []string{
			`kgen.yaml:7:52: breaking: store "counts" kept counts and now keeps aggregates of type int64: existing entries no longer decode`,
		}},
		{"grouping renamed", strings.ReplaceAll(old, "by-word", "per-word"), []string{
			`kgen.yaml:2:6: breaking: grouping "by-word" is gone: records not yet read from its repartition topic a-by-word-repartition are lost (and a groupByKey that repartitions now reads another topic)`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := schema.Parse("old.yaml", []byte(old))
			if err != nil {
				t.Fatal(err)
			}
			n, err := schema.Parse("kgen.yaml", []byte(tc.new))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range CompareSpecs(o, n) {
				got = append(got, c.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
}
