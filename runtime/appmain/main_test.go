package appmain

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

func unsetKGEN(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "KGEN_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
}

func copyApp(id string) App {
	return App{
		ID:     id,
		Topics: map[string]int32{"in": 1, "out": 1},
		Topology: func() (*stream.Topology, error) {
			t := stream.NewTopology()
			stream.AddSource(t, "in", "in", serde.String{}, serde.String{})
			stream.AddSink(t, "out", "out", serde.String{}, serde.String{}, "in")
			return t, nil
		},
	}
}

// TestMainStatus runs Main's body: bad settings exit 2 before anything
// starts (no development broker, no topology built), -h exits 0 and lists
// the settings.
func TestMainStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		want []string
	}{
		{"help", nil, []string{"-h"}, 0, []string{"Usage: app [flags]", "-log-format", "-on-produce-error", "dead-letter=TOPIC", "(env KGEN_SASL_PASSWORD_FILE)", "-dev-port", "-client-log-level"}},
		{"bad variable", map[string]string{"KGEN_TLS": "yes"}, nil, 2, []string{`KGEN_TLS="yes" (flag -tls)`}},
		{"bad flag", nil, []string{"-guarantee", "exactly_once"}, 2, []string{`invalid value "exactly_once" for flag -guarantee`}},
		{"unknown flag", nil, []string{"-paralelism", "2"}, 2, []string{"flag provided but not defined: -paralelism"}},
		{"empty brokers", map[string]string{"KGEN_BROKERS": ""}, nil, 2, []string{`KGEN_BROKERS="" (flag -brokers): empty`}},
		{"arguments", nil, []string{"-brokers", "dev", "extra"}, 2, []string{"unexpected arguments: extra"}},
		{"missing file", nil, []string{"-brokers", "k:9092", "-tls-ca", "/nonexistent/ca.pem"}, 2, []string{"tls ca: open /nonexistent/ca.pem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unsetKGEN(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			app := copyApp("status")
			built := false
			app.Topology = func() (*stream.Topology, error) { built = true; return copyApp("").Topology() }
			var stderr bytes.Buffer
			code := mainStatus(context.Background(), "app", tc.args, &stderr, app, nil)
			if code != tc.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if built || strings.Contains(stderr.String(), "development broker (in memory") {
				t.Errorf("the app started despite the bad configuration:\n%s", stderr.String())
			}
		})
	}
}

// TestBadFlagIsShort: a bad flag prints its message and one line pointing
// to -h, not the usage, which would push the message off the screen.
func TestBadFlagIsShort(t *testing.T) {
	unsetKGEN(t)
	for _, args := range [][]string{{"-guarantee", "exactly_once"}, {"-paralelism", "2"}} {
		var stderr bytes.Buffer
		if code := mainStatus(context.Background(), "app", args, &stderr, copyApp("short"), nil); code != 2 {
			t.Errorf("%v: exit status %d, want 2", args, code)
		}
		lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
		if len(lines) != 2 || lines[1] != "run app -h for the flags and their variables" {
			t.Errorf("%v: stderr is not the message and the pointer to -h:\n%s", args, stderr.String())
		}
	}
}

// TestParseFlags: the parsing hand-written mains (the examples') share
// with generated ones: -h prints the usage headed by about and ends with
// status 0, a bad flag its message and the pointer to -h with status 2,
// and good flags go on.
func TestParseFlags(t *testing.T) {
	unsetKGEN(t)
	parse := func(args ...string) (int, bool, string) {
		var cfg Config
		fs := flag.NewFlagSet("demo", flag.ContinueOnError)
		cfg.RegisterFlags(fs)
		var stderr bytes.Buffer
		code, done := ParseFlags(fs, args, &stderr, "Counts words.")
		return code, done, stderr.String()
	}
	if code, done, out := parse("-h"); code != 0 || !done || !strings.HasPrefix(out, "Usage: demo [flags]\n\nCounts words.\n") {
		t.Errorf("-h: %d %v\n%s", code, done, out)
	}
	if code, done, out := parse("-bogus"); code != 2 || !done ||
		out != "flag provided but not defined: -bogus\nrun demo -h for the flags and their variables\n" {
		t.Errorf("-bogus: %d %v\n%s", code, done, out)
	}
	if code, done, out := parse("-parallelism", "2", "extra"); code != 2 || !done ||
		out != "demo: unexpected arguments: extra (flags only; run with -h for them)\n" {
		t.Errorf("an argument: %d %v\n%s", code, done, out)
	}
	if _, done, out := parse("-parallelism", "2"); done || out != "" {
		t.Errorf("good flags: done %v\n%s", done, out)
	}
}

// TestDevBrokerCreatesDeadLetterTopic: with the development broker, the
// dead-letter topic named by a policy exists, so a record that fails to
// decode reaches it instead of stopping the app on a missing topic.
func TestDevBrokerCreatesDeadLetterTopic(t *testing.T) {
	if got := devTopics(map[string]int32{"in": 4}, Config{OnDeserializeError: "dead-letter=views-dlq", OnProcessError: "dead-letter=views-dlq"}); len(got) != 2 || got["views-dlq"] != DeadLetterPartitions || got["in"] != 4 {
		t.Fatalf("devTopics = %v", got)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{OnDeserializeError: "dead-letter=views-dlq"}
	if err := run(ctx, cfg, copyApp("dlq-dev"), logger, []stream.Option{stream.ExitWhenCaughtUp()}); err != nil {
		t.Fatalf("run with a dead-letter topic on the development broker: %v\n%s", err, logs.String())
	}
}

// TestOpsAddressLoggedAndBindFailureStops: the ops endpoints log the address
// actually bound (":0" picks one), and an address in use stops Run before
// anything else starts.
func TestOpsAddressLoggedAndBindFailureStops(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{MetricsAddr: "127.0.0.1:0"}
	if err := run(ctx, cfg, copyApp("ops-log"), logger, []stream.Option{stream.ExitWhenCaughtUp()}); err != nil {
		t.Fatalf("run: %v", err)
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "ops endpoints listening") {
			line = l
		}
	}
	if !strings.Contains(line, "addr=127.0.0.1:") || strings.Contains(line, "addr=127.0.0.1:0 ") {
		t.Errorf("no line with the bound address; logs:\n%s", logs.String())
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	logs.Reset()
	cfg.MetricsAddr = taken.Addr().String()
	err = run(ctx, cfg, copyApp("ops-taken"), logger, nil)
	if err == nil || !strings.Contains(err.Error(), "-metrics-addr (KGEN_METRICS_ADDR)") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("run on a taken address: %v, want the bind failure naming -metrics-addr", err)
	}
	if strings.Contains(logs.String(), "development broker") {
		t.Errorf("the development broker started before the bind failure:\n%s", logs.String())
	}
}

// TestLoggerNamesTheInstance: every line names the instance once, whether
// the line's logger added it already or not, in both formats and at the
// configured level.
func TestLoggerNamesTheInstance(t *testing.T) {
	var buf bytes.Buffer
	l, err := Config{InstanceID: "pod-1", LogFormat: "json", LogLevel: "warn", ClientLogLevel: "debug"}.NewLogger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("dropped: below the level")
	l.Warn("plain")
	l.With("instance", "pod-1", "unit", 0).Warn("with")
	clientLogger(l, 4).Log(4, "client debug", "broker", "1")
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		m := map[string]any{}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if n := strings.Count(line, `"instance"`); n != 1 {
			t.Errorf("line %s names the instance %d times, want once", line, n)
		}
		got = append(got, m)
	}
	var msgs []string
	for _, m := range got {
		msgs = append(msgs, m["msg"].(string))
		if m["instance"] != "pod-1" {
			t.Errorf("line %v: instance %v, want pod-1", m, m["instance"])
		}
	}
	if strings.Join(msgs, "|") != "plain|with|client debug" {
		t.Errorf("messages %q, want plain, with and the client's debug line", msgs)
	}

	buf.Reset()
	l, _ = Config{LogFormat: "text"}.NewLogger(&buf)
	l.Info("before")
	setLoggerInstance(l, "abc")
	l.Info("after")
	if want := "msg=before\n"; !strings.Contains(buf.String(), want) || !strings.Contains(buf.String(), "msg=after instance=abc") {
		t.Errorf("text log:\n%s\nwant no instance before it is known and instance=abc after", buf.String())
	}
}

// syncBuffer is a bytes.Buffer for a logger and a test reading at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMetricsEndpoint: /metrics of a running app has the app's metrics,
// the Go runtime's and the process's, the build's, and the Kafka client's.
func TestMetricsEndpoint(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, Config{MetricsAddr: "127.0.0.1:0"}, copyApp("metrics"), logger, nil) }()
	addr := regexp.MustCompile(`ops endpoints listening" addr=(\S+)`)
	want := []string{"kgen_records_processed_total", `kgen_app_state{app="metrics",state="running"} 1`, "go_goroutines", "go_build_info",
		"kgen_build_info{goversion=", "kgen_kafka_connects_total", "kgen_kafka_read_bytes_total"}
	if runtime.GOOS == "linux" {
		want = append(want, "process_resident_memory_bytes")
	}
	var body string
	for deadline := time.Now().Add(30 * time.Second); ; {
		if m := addr.FindStringSubmatch(logs.String()); m != nil {
			resp, err := http.Get("http://" + m[1] + "/metrics")
			if err != nil {
				body = "GET: " + err.Error()
			} else {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				body = resp.Status + "\n" + string(b)
				missing := false
				for _, w := range want {
					missing = missing || !strings.Contains(body, w)
				}
				if !missing {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			for _, w := range want {
				if !strings.Contains(body, w) {
					t.Errorf("/metrics lacks %q", w)
				}
			}
			t.Fatalf("body:\n%s\nlogs:\n%s", body, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if os.Getenv("KGEN_DUMP_METRICS") != "" {
		t.Log(body)
	}
	if strings.Contains(body, "_buffered_") {
		t.Error("/metrics has kprom's buffered gauges, which read one client only")
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
}

type fakeStats struct {
	mu sync.Mutex
	s  stream.Stats
}

func (f *fakeStats) State() stream.State { return stream.Running }
func (f *fakeStats) Stats() stream.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s
}

// TestLogSummaries: the periodic summary names the records processed in
// the period and in all, their rate, the lag and the tasks.
func TestLogSummaries(t *testing.T) {
	src := &fakeStats{s: stream.Stats{Processed: 100}}
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	stop := logSummaries(context.Background(), src, logger, 20*time.Millisecond)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "processed_total=100"); {
		if time.Now().After(deadline) {
			t.Fatalf("no first summary:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	src.mu.Lock()
	src.s = stream.Stats{Processed: 150, Skipped: 2, Restored: 9, Dropped: map[stream.DropReason]uint64{stream.DropNullKey: 3, stream.DropNullValue: 1}, Tasks: map[stream.TaskID]stream.TaskStats{
		{Partition: 0}: {Lag: 5}, {Partition: 1}: {Lag: 7, Restoring: true},
	}}
	src.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "processed_total=150") {
		if time.Now().After(deadline) {
			t.Fatalf("no summary with the new figures:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "processed_total=150") {
			line = l
			break
		}
	}
	for _, want := range []string{"msg=summary", "state=running", "processed=50 ", "lag=12", "tasks=2", "restoring=1", "restored_total=9", "skipped_total=2", "dropped_total=4", "rate_per_s="} {
		if !strings.Contains(line, want) {
			t.Errorf("summary %q lacks %q", line, want)
		}
	}
}

// TestDevInstancesHaveTheirOwnIDs: two runs on the development broker
// without -instance-id get different instance ids, and every line of
// NewLogger names one.
func TestDevInstancesHaveTheirOwnIDs(t *testing.T) {
	ids := map[string]bool{}
	for range 2 {
		var logs syncBuffer
		logger, err := Config{LogFormat: "json"}.NewLogger(&logs)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = run(ctx, Config{}, copyApp("dev-ids"), logger, []stream.Option{stream.ExitWhenCaughtUp()})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var id string
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			m := map[string]any{}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatal(err)
			}
			got, _ := m["instance"].(string)
			if got == "" || id != "" && got != id {
				t.Errorf("line %s: instance %q, want the run's one (%q)", line, got, id)
			}
			id = got
		}
		ids[id] = true
	}
	if len(ids) != 2 {
		t.Errorf("two runs, instance ids %v: want two different", ids)
	}
}

// The ops server closes a kept-alive connection that stays idle: it kept
// such connections open forever.
func TestOpsServerClosesIdleConnections(t *testing.T) {
	defer func(d time.Duration) { opsIdleTimeout = d }(opsIdleTimeout)
	opsIdleTimeout = 200 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := opsServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// The connection is kept alive; the server must close it once idle.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("read on an idle kept-alive connection: %v, want EOF (closed by the server)", err)
	}
}
