// Package testlog gives tests an application logger whose output is kept
// and printed only when the test fails, so that a failure seen once (on a
// loaded CI machine) comes with what the application said.
package testlog

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
)

// keep is how much of the end of the log a failed test prints.
const keep = 256 << 10

// New returns a logger of info and above, printed with t.Logf if t fails.
// With KGEN_TEST_LOG set it writes everything, debug too, to stderr as it
// comes instead.
func New(t testing.TB) *slog.Logger {
	if os.Getenv("KGEN_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if t.Failed() && buf.Len() > 0 {
			out := buf.Bytes()
			if len(out) > keep {
				out = out[len(out)-keep:] // the end, where it failed
			}
			t.Logf("app log (info and above):\n%s", out)
		}
	})
	return slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
}

// lockedWriter serializes writes from the app's goroutines.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
