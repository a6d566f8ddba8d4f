package gen

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kgen-dev/kgen/schema"
)

// TestCompareRepartition: a repartition renamed leaves its topic behind,
// with the records not yet read from it.
func TestCompareRepartition(t *testing.T) {
	const old = `version: 1
app: a
topics:
  in: {key: string, value: string}
operators:
  spread: {op: repartition, from: [in]}
`
	o, err := schema.Parse("old.yaml", []byte(old))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, new string
		want      []string
	}{
		{"unchanged", old, nil},
		{"renamed", "version: 1\napp: a\ntopics:\n  in: {key: string, value: string}\noperators:\n  moved: {op: repartition, from: [in]}\n", []string{
			`kgen.yaml:2:6: breaking: repartition "spread" is gone: records not yet read from its topic a-spread-repartition are lost`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
