package stream_test

import (
	"io"
	"log/slog"
	"os"
	"strconv"
)

type slogLogger = slog.Logger

var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// benchBuffer lets a benchmark run try other buffer bounds (KGEN_BENCH_BUFFER).
func benchBuffer() int {
	if n, err := strconv.Atoi(os.Getenv("KGEN_BENCH_BUFFER")); err == nil {
		return n
	}
	return 1000
}
