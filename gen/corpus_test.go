package gen

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/schema"
)

// awkwardNames are spec names that have broken generated code, or could:
// Go keywords and predeclared identifiers, names ending in the suffixes the
// generator adds, names of generated declarations and methods, names that
// differ only in case or punctuation, file names the go command treats
// specially, and Unicode.
var awkwardNames = []string{
	// keywords and predeclared identifiers
	"type", "func", "map", "range", "go", "chan", "select", "import", "package", "var", "default", "interface", "struct", "return",
	"string", "error", "len", "nil", "true", "iota", "any", "int64",
	// suffixes and prefixes the generator adds
	"shout", "shout-processor", "shout-context", "shout-node", "topic-shout", "store-shout", "shout-key-serde", "shout-value-serde",
	"pipe-shout", "read-shout", "forward-to-shout", "shout-store-key-serde", "shout-source", "shout-sink",
	// generated declarations and methods
	"processors", "run", "config", "main", "topics", "app-id", "test-driver", "new-topology", "application", "start-dev-broker",
	"uses-schema-registry", "register-schemas", "new-test-driver", "commit", "timestamp", "headers", "topic", "partition",
	"offset", "stream-time", "task-id", "runtime", "forward", "forward-record", "close", "driver", "advance-wall-clock",
	"rt", "d", "ctx", "impl", "init", "process", "p", "t", "key", "value",
	// case and punctuation
	"Orders", "orders", "ORDERS", "a.b", "a_b", "a-b", "a--b", "x1", "x-1",
	// file names
	"x-test", "x-linux", "count-amd64", "doc", "kgen", "kgen-gen",
	// Unicode
	"größe", "日本", "café",
}

// TestAwkwardNamesCorpus is the property behind kgen check: a spec it
// accepts generates code that builds. It makes specs from awkward names in
// every role (topic, store, processor, child, punctuation), checks that each
// is either rejected with positioned errors or generated, and builds every
// generated one, scaffolds and main included, with one go vet.
func TestAwkwardNamesCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel() // its go commands overlap the others' (gocmd_test.go)
	// A fixed folder (gocmd_test.go; its name starts with _, so ./...
	// skips it). Generation is seeded, so the packages are the same from
	// run to run.
	root := stableDir(t, ".", "_corpus")
	rng := rand.New(rand.NewPCG(13, 1))
	pick := func() string { return awkwardNames[rng.IntN(len(awkwardNames))] }
	var specs []string
	for i := 0; i < len(awkwardNames); i += 2 {
		// Two names per spec, every role covered: the first as topic and
		// punctuation, the second as store and processor (a processor may
		// not share a topic's name, a rule of its own).
		first, second := awkwardNames[i], awkwardNames[(i+1)%len(awkwardNames)]
		specs = append(specs, corpusSpec(len(specs), first, "out", second, second, "other", first))
	}
	for range 8 {
		specs = append(specs, corpusSpec(len(specs), pick(), pick(), pick(), pick(), pick(), pick()))
	}
	// Operators under awkward names: the branch, its arm, the grouping (its
	// repartition serdes), the count and its implied store, the toStream.
	for i := 0; i < len(awkwardNames); i += 3 {
		specs = append(specs, corpusOpSpec(len(specs), awkwardNames[i], awkwardNames[(i+1)%len(awkwardNames)], awkwardNames[(i+2)%len(awkwardNames)], pick(), pick()))
	}
	var built []string
	rejected := 0
	for i, spec := range specs {
		dir := filepath.Join(root, fmt.Sprintf("c%03d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, schema.FileName), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := Generate(dir)
		var errs schema.Errors
		switch {
		case errors.As(err, &errs):
			rejected++
			for _, e := range errs {
				if !strings.HasSuffix(e.Pos.File, schema.FileName) || e.Pos.Line < 1 || e.Pos.Col < 1 {
					t.Errorf("case %d: error without a spec position: %v\n%s", i, e, spec)
				}
			}
			continue
		case err != nil:
			t.Fatalf("case %d: internal error: %v\n%s", i, err, spec)
		}
		if _, err := res.Write(); err != nil {
			t.Fatal(err)
		}
		built = append(built, "./"+filepath.ToSlash(dir)+"/...")
	}
	t.Logf("%d specs generated and built, %d rejected by check", len(built), rejected)
	if len(built) < len(specs)/2 {
		t.Fatalf("only %d of %d specs were accepted: the corpus no longer tests the build", len(built), len(specs))
	}
	// vet type-checks every package, mains included, without linking one
	// binary per case.
	cmd := exec.Command("go", append([]string{"vet"}, built...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("a spec kgen check accepts does not build: %v\n%s", err, out)
	}
}

// corpusSpec is a topology with the given names: topics a and b (and
// "shout", whose derived names the awkward list mimics), store s, processor
// p reading a and forwarding to b and to processor q, q writing to the
// shout topic, and a punctuation named pu.
func corpusSpec(i int, a, b, c, p, q, pu string) string {
	quote := func(s string) string { return fmt.Sprintf("%q", s) }
	return fmt.Sprintf(`version: 1
app: corpus
package: corpus%d
topics:
  %s: {key: string, value: string}
  %s: {key: string, value: string}
  shout: {key: string, value: int64}
stores:
  %s: {key: string, value: int64}
processors:
  %s: {from: [%s], forward: {key: string, value: string}, to: [%s, %s], stores: [%s], punctuate: [{name: %s, every: 1s}, {name: other, every: 2s}]}
  %s: {forward: {key: string, value: int64}, to: [shout], stores: [%s]}
`, i, quote(a), quote(b), quote(c), quote(p), quote(a), quote(b), quote(q), quote(c), quote(pu), quote(q), quote(c))
}

// corpusOpSpec is a topology of operators with the given names: branch b
// with arm arm (and a default), groupBy g of the arm, count c of it into
// store st, and a toStream writing the counts.
func corpusOpSpec(i int, b, arm, g, c, st string) string {
	quote := func(s string) string { return fmt.Sprintf("%q", s) }
	return fmt.Sprintf(`version: 1
app: corpus
package: corpusops%d
topics:
  words-in: {key: string, value: string}
  counts-out: {key: string, value: int64}
operators:
  %s: {op: branch, from: [words-in], branches: [%s], default: rest}
  %s: {op: groupBy, from: [%s], key: string}
  %s: {op: count, from: [%s], store: %s}
  to-counts: {op: toStream, from: [%s], to: [counts-out]}
  rest-seen: {op: peek, from: [%s]}
`, i, quote(b), quote(arm), quote(g), quote(b+"-"+arm), quote(c), quote(g), quote(st), quote(c), quote(b+"-rest"))
}
