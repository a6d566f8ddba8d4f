package scaffold

import (
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/streamtest"
)

// TestScaffoldFailsLoudly: a processor nobody implemented yet makes every
// record fail with an error naming it and the file to edit.
func TestScaffoldFailsLoudly(t *testing.T) {
	d, err := NewTestDriver(Factories{}, streamtest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	err = d.PipeGreetings("k", "hello", time.Unix(0, 0))
	const want = `processor "shout" is not implemented yet: write Shout.Process in shout.go`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Pipe = %v, want an error containing %q", err, want)
	}
}
