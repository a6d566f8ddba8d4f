package gen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// syntheticProject writes a spec of 50 processors over 100 record types into
// a fresh folder inside the module and returns it.
func syntheticProject(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("../testdata", "tmp-bench-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.MkdirAll(filepath.Join(dir, "model"), 0o755); err != nil {
		tb.Fatal(err)
	}
	var m strings.Builder
	m.WriteString("// Package model is a synthetic benchmark model.\npackage model\n\nimport \"time\"\n")
	for i := range 100 {
		fmt.Fprintf(&m, "\n// T%d is a record.\n//\n//kgen:record\ntype T%d struct {\n\tID string `json:\"id\"`\n\tN int64\n\tAt time.Time\n\tTags []string\n\tAttrs map[string]float64\n\tNext *T%d\n}\n", i, i, (i+1)%100)
	}
	var s strings.Builder
	s.WriteString("version: 1\napp: bench\npackage: bench\ntypes:\n  go: [./model]\ntopics:\n")
	for i := range 100 {
		fmt.Fprintf(&s, "  topic-%d: {key: string, value: model.T%d, timestamp: At}\n", i, i)
	}
	s.WriteString("stores:\n")
	for i := range 50 {
		fmt.Fprintf(&s, "  store-%d: {key: string, value: model.T%d}\n", i, i)
	}
	s.WriteString("processors:\n")
	for i := range 50 {
		// Each processor reads one topic, keeps one store and writes the
		// next processor and a topic; every fifth one also punctuates.
		to := fmt.Sprintf("[topic-%d]", 50+i)
		fwd := fmt.Sprintf("model.T%d", 50+i)
		if i < 49 {
			to = fmt.Sprintf("[proc-%d, topic-%d]", i+1, 50+i)
		}
		from := fmt.Sprintf("[topic-%d]", i)
		if i > 0 {
			from = fmt.Sprintf("[proc-%d]", i-1)
			fwd = fmt.Sprintf("model.T%d", 50+i)
		}
		fmt.Fprintf(&s, "  proc-%d: {from: %s, forward: {key: string, value: %s}, to: %s, stores: [store-%d]", i, from, fwd, to, i)
		if i%5 == 0 {
			s.WriteString(", punctuate: [{every: 10s}]")
		}
		s.WriteString("}\n")
	}
	for name, data := range map[string]string{"model/model.go": m.String(), "kgen.yaml": s.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// BenchmarkGenerate loads, validates and emits a synthetic spec of 50
// processors and 100 types (package loading included):
//
//	go test ./gen -run '^$' -bench Generate -benchmem
func BenchmarkGenerate(b *testing.B) {
	dir := syntheticProject(b)
	for b.Loop() {
		if _, err := Generate(dir); err != nil {
			b.Fatal(err)
		}
	}
}
