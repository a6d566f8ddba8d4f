package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/examples/wordcount-ops"
)

// TestDemo runs the demo end to end on the embedded broker: the sample text
// in, the sorted counts out.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	cfg := wordcountops.Config{AppID: "wordcount-ops-test", Parallelism: 1, StateDir: t.TempDir()}
	if err := demo(ctx, cfg, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"the          15", "of           11", "it           9"}
	if len(lines) < len(want) {
		t.Fatalf("output:\n%s", out.String())
	}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("line %d = %q, want %q\nall output:\n%s", i, lines[i], w, out.String())
		}
	}
}
