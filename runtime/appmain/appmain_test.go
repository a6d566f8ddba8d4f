package appmain_test

import (
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/kgen-dev/kgen/internal/kafkatest"
	"github.com/kgen-dev/kgen/runtime/appmain"
	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/stream"
)

func passthrough(in, out string) func() (*stream.Topology, error) {
	return func() (*stream.Topology, error) {
		t := stream.NewTopology()
		stream.AddSource(t, "in", in, serde.String{}, serde.String{})
		stream.AddSink(t, "out", out, serde.String{}, serde.String{}, "in")
		return t, nil
	}
}

// clearEnv unsets every KGEN_* variable for the test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "KGEN_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
}

// parse registers the flags on a fresh set and parses args, as Main does.
func parse(t *testing.T, cfg *appmain.Config, env map[string]string, args ...string) error {
	t.Helper()
	clearEnv(t)
	for k, v := range env {
		t.Setenv(k, v)
	}
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return cfg.Validate()
}

var ignoreUnexported = cmpopts.IgnoreUnexported(appmain.Config{})

func TestRegisterFlags(t *testing.T) {
	cache := 10_000
	cfg := appmain.Config{AppID: "preset", StateDir: "/kept"}
	err := parse(t, &cfg, map[string]string{
		"KGEN_BROKERS": "a:9092, b:9092", "KGEN_PARALLELISM": "3", "KGEN_GUARANTEE": "exactly-once",
		"KGEN_STATIC_MEMBERSHIP": "1", "KGEN_TLS": "true", "KGEN_ON_PROCESS_ERROR": "dead-letter=dlq",
		"KGEN_LOG_FORMAT": "json", "KGEN_LOG_SUMMARY_INTERVAL": "30s", "KGEN_ADVERTISED_ADDRESS": "pod-0.app:8080",
	}, "-parallelism", "4", "-sasl-mechanism", "plain", "-sasl-user", "u", "-sasl-password-file", "/run/secret",
		"-instance-id", "pod-0", "-on-deserialize-error", "continue", "-log-level", "debug", "-heap-floor", "0")
	if err != nil {
		t.Fatal(err)
	}
	want := appmain.Config{
		Brokers: []string{"a:9092", "b:9092"}, AppID: "preset", StateDir: "/kept", Parallelism: 4,
		Guarantee: "exactly-once", SASLMechanism: "plain", SASLUser: "u", SASLPasswordFile: "/run/secret",
		InstanceID: "pod-0", StaticMembership: true, TLS: true, AdvertisedAddress: "pod-0.app:8080",
		OnDeserializeError: "continue", OnProcessError: "dead-letter=dlq", OnProduceError: "fail",
		LogLevel: "debug", LogFormat: "json", ClientLogLevel: "warn", LogSummaryInterval: 30 * time.Second,
		CacheRecords: &cache, ReplicationFactor: -1,
	}
	if diff := cmp.Diff(want, cfg, ignoreUnexported); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestRegisterFlagsDefaults(t *testing.T) {
	var cfg appmain.Config
	if err := parse(t, &cfg, nil); err != nil {
		t.Fatal(err)
	}
	cache := 10_000
	want := appmain.Config{
		Parallelism: 1, Guarantee: "at-least-once", OnDeserializeError: "fail", OnProcessError: "fail",
		OnProduceError: "fail", LogLevel: "info", LogFormat: "text", ClientLogLevel: "warn", LogSummaryInterval: 2 * time.Minute,
		CacheRecords: &cache, ReplicationFactor: -1, HeapFloorMiB: appmain.DefaultHeapFloorMiB,
	}
	if diff := cmp.Diff(want, cfg, ignoreUnexported); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// TestDevBrokerByName: the development broker runs when no broker setting
// exists or when asked for by name, never for an empty setting.
func TestDevBrokerByName(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want appmain.Config
	}{
		{"flag", nil, []string{"-brokers", "dev", "-dev-port", "19092"}, appmain.Config{DevBroker: true, DevPort: 19092}},
		{"env", map[string]string{"KGEN_BROKERS": "dev"}, nil, appmain.Config{DevBroker: true}},
		{"flag over env", map[string]string{"KGEN_BROKERS": "dev"}, []string{"-brokers", "k:9092"}, appmain.Config{Brokers: []string{"k:9092"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg appmain.Config
			if err := parse(t, &cfg, tc.env, tc.args...); err != nil {
				t.Fatal(err)
			}
			got := appmain.Config{Brokers: cfg.Brokers, DevBroker: cfg.DevBroker, DevPort: cfg.DevPort}
			if diff := cmp.Diff(tc.want, got, ignoreUnexported); diff != "" {
				t.Errorf("brokers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConfigErrors: every setting that does not parse, or needs or excludes
// another, is an error naming the flag and its variable.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want []string // substrings of the error
	}{
		{"bool env", map[string]string{"KGEN_TLS": "yes"}, nil, []string{`KGEN_TLS="yes" (flag -tls): want true or false`}},
		{"int env", map[string]string{"KGEN_PARALLELISM": "abc"}, nil, []string{`KGEN_PARALLELISM="abc" (flag -parallelism): want a whole number`}},
		{"int zero", nil, []string{"-parallelism", "0"}, []string{`invalid value "0" for flag -parallelism`, "(env KGEN_PARALLELISM)"}},
		{"guarantee flag", nil, []string{"-guarantee", "exactly_once"}, []string{`flag -guarantee`, `did you mean "exactly-once"?`, "(env KGEN_GUARANTEE)"}},
		{"guarantee env", map[string]string{"KGEN_GUARANTEE": "at-most-once"}, nil, []string{`KGEN_GUARANTEE="at-most-once" (flag -guarantee)`}},
		{"empty brokers flag", nil, []string{"-brokers", ""}, []string{`flag -brokers: empty`, "(env KGEN_BROKERS)"}},
		{"empty brokers env", map[string]string{"KGEN_BROKERS": ""}, nil, []string{`KGEN_BROKERS="" (flag -brokers): empty`}},
		{"broker port", nil, []string{"-brokers", "k:x:1"}, []string{`broker "k:x:1": want host:port`}},
		{"sasl user alone", nil, []string{"-brokers", "k:9092", "-sasl-user", "u"}, []string{"-sasl-user (KGEN_SASL_USER) is set but -sasl-mechanism (KGEN_SASL_MECHANISM) is not"}},
		{"sasl no user", nil, []string{"-brokers", "k:9092", "-sasl-mechanism", "plain", "-sasl-password", "p"}, []string{"needs -sasl-user (KGEN_SASL_USER)"}},
		{"sasl no password", map[string]string{"KGEN_SASL_MECHANISM": "scram-sha-256", "KGEN_SASL_USER": "u"}, []string{"-brokers", "k:9092"}, []string{"needs -sasl-password-file (KGEN_SASL_PASSWORD_FILE) or -sasl-password"}},
		{"sasl two passwords", nil, []string{"-brokers", "k:9092", "-sasl-mechanism", "plain", "-sasl-user", "u", "-sasl-password", "p", "-sasl-password-file", "f"}, []string{"are both set"}},
		{"sasl mechanism", map[string]string{"KGEN_SASL_MECHANISM": "gssapi"}, nil, []string{`KGEN_SASL_MECHANISM="gssapi"`}},
		{"tls key alone", nil, []string{"-brokers", "k:9092", "-tls-key", "k.pem"}, []string{"-tls-key (KGEN_TLS_KEY) is set but -tls-cert (KGEN_TLS_CERT) is not"}},
		{"tls cert alone", nil, []string{"-brokers", "k:9092", "-tls-cert", "c.pem"}, []string{"-tls-cert (KGEN_TLS_CERT) is set but -tls-key (KGEN_TLS_KEY) is not"}},
		{"policy", nil, []string{"-on-process-error", "retry"}, []string{`invalid value "retry" for flag -on-process-error: want fail, continue or dead-letter=TOPIC (env KGEN_ON_PROCESS_ERROR)`}},
		{"dead letter topic", map[string]string{"KGEN_ON_DESERIALIZE_ERROR": "dead-letter"}, nil, []string{`KGEN_ON_DESERIALIZE_ERROR="dead-letter" (flag -on-deserialize-error): dead-letter needs its topic`}},
		{"log format", map[string]string{"KGEN_LOG_FORMAT": "xml"}, nil, []string{`KGEN_LOG_FORMAT="xml" (flag -log-format): want text or json`}},
		{"summary interval", map[string]string{"KGEN_LOG_SUMMARY_INTERVAL": "2 minutes"}, nil, []string{`KGEN_LOG_SUMMARY_INTERVAL="2 minutes" (flag -log-summary-interval): want a duration`}},
		{"log level", nil, []string{"-log-level", "loud"}, []string{"flag -log-level: want debug, info, warn or error"}},
		{"client log level", map[string]string{"KGEN_CLIENT_LOG_LEVEL": "chatty"}, nil, []string{"(flag -client-log-level): want none"}},
		{"dev port with brokers", nil, []string{"-brokers", "k:9092", "-dev-port", "19092"}, []string{"-dev-port (KGEN_DEV_PORT): the development broker's port, but brokers are given"}},
		{"dev port range", nil, []string{"-dev-port", "70000"}, []string{`invalid value "70000" for flag -dev-port`}},
		{"reset on the dev broker", nil, []string{"-reset"}, []string{"-reset (KGEN_RESET): the development broker keeps nothing"}},
		{"reset time alone", nil, []string{"-brokers", "k:9092", "-reset-to-time", "2026-12-01T00:00:00Z"}, []string{"-reset-to-time (KGEN_RESET_TO_TIME) is set but -reset (KGEN_RESET) is not"}},
		{"reset time format", nil, []string{"-brokers", "k:9092", "-reset", "-reset-to-time", "yesterday"}, []string{`flag -reset-to-time: want an RFC 3339 time`}},
		{"metrics addr", map[string]string{"KGEN_METRICS_ADDR": "9090"}, nil, []string{`KGEN_METRICS_ADDR="9090" (flag -metrics-addr): want host:port or :port`}},
		{"registry", nil, []string{"-schema-registry", "registry:8081"}, []string{"flag -schema-registry: want an http:// or https:// URL"}},
		{"commit interval", map[string]string{"KGEN_COMMIT_INTERVAL": "often"}, nil, []string{`KGEN_COMMIT_INTERVAL="often" (flag -commit-interval): want a duration`}},
		{"commit interval negative", nil, []string{"-commit-interval", "-1s"}, []string{`invalid value "-1s" for flag -commit-interval: want a duration such as 30s or 2m, or 0 (env KGEN_COMMIT_INTERVAL)`}},
		{"standby replicas", map[string]string{"KGEN_STANDBY_REPLICAS": "-1"}, nil, []string{`KGEN_STANDBY_REPLICAS="-1" (flag -standby-replicas): -1: want 0 to 1024`}},
		{"cache records", nil, []string{"-cache-records", "10k"}, []string{`invalid value "10k" for flag -cache-records: want a whole number, 0 to 1073741824 (env KGEN_CACHE_RECORDS)`}},
		{"max task idle", map[string]string{"KGEN_MAX_TASK_IDLE": "1"}, nil, []string{`KGEN_MAX_TASK_IDLE="1" (flag -max-task-idle): want a duration such as 30s or 2m, 0, or a negative one`}},
		{"replication factor zero", nil, []string{"-replication-factor", "0"}, []string{`invalid value "0" for flag -replication-factor: 0: want -1 or 1 to 32767 (env KGEN_REPLICATION_FACTOR)`}},
		{"replication factor env", map[string]string{"KGEN_REPLICATION_FACTOR": "three"}, nil, []string{`KGEN_REPLICATION_FACTOR="three" (flag -replication-factor): want a whole number, -1 or 1 to 32767`}},
		{"startup timeout", map[string]string{"KGEN_STARTUP_TIMEOUT": "-5m"}, nil, []string{`KGEN_STARTUP_TIMEOUT="-5m" (flag -startup-timeout): want a duration`}},
		{"buffer records", nil, []string{"-buffer-records", "0"}, []string{`invalid value "0" for flag -buffer-records: 0: want 1 to 16777216 (env KGEN_BUFFER_RECORDS)`}},
		{"all reported", map[string]string{"KGEN_TLS": "yes", "KGEN_PARALLELISM": "abc"}, nil, []string{"KGEN_TLS=", "KGEN_PARALLELISM="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg appmain.Config
			err := parse(t, &cfg, tc.env, tc.args...)
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

// TestTuningFlags: the runtime's tuning options are flags and variables
// of the generated main, each reaching Config (and from there a
// stream.Option: runOptions, checked by stream.New).
func TestTuningFlags(t *testing.T) {
	var cfg appmain.Config
	err := parse(t, &cfg, map[string]string{
		"KGEN_COMMIT_INTERVAL": "5s", "KGEN_STANDBY_REPLICAS": "1", "KGEN_CACHE_RECORDS": "0",
	}, "-max-task-idle", "-1ms", "-replication-factor", "3", "-startup-timeout", "1m", "-buffer-records", "500")
	if err != nil {
		t.Fatal(err)
	}
	got := []any{cfg.CommitInterval, cfg.StandbyReplicas, *cfg.CacheRecords, cfg.MaxTaskIdle, cfg.ReplicationFactor, cfg.StartupTimeout, cfg.BufferRecords}
	want := []any{5 * time.Second, 1, 0, -time.Millisecond, 3, time.Minute, 500}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tuning (-want +got):\n%s", diff)
	}
	cfg.Brokers = []string{"k:9092"}
	cfg.AppID = "tuning"
	opts, err := cfg.Options()
	if err != nil {
		t.Fatal(err)
	}
	topo, _ := passthrough("in", "out")()
	if _, err := stream.New(topo, opts...); err != nil {
		t.Fatalf("the runtime refused the options: %v", err)
	}
	// Nothing given: only the flags' own defaults, which are the runtime's.
	var def appmain.Config
	if err := parse(t, &def, nil, "-brokers", "k:9092"); err != nil {
		t.Fatal(err)
	}
	if def.CommitInterval != 0 || def.MaxTaskIdle != 0 || *def.CacheRecords != 10_000 || def.ReplicationFactor != -1 {
		t.Errorf("defaults: %+v", def)
	}
}

// TestReplicationFactorAboveBrokers: -replication-factor 2 on a one-broker
// cluster (kfake, or the real single broker) stops Run with an error naming
// the flag and its variable.
func TestReplicationFactorAboveBrokers(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	app := appmain.App{ID: "rf-" + in, Topology: passthrough(in, out)}
	err := appmain.Run(ctx, appmain.Config{Brokers: c.Seeds(), StateDir: t.TempDir(), ReplicationFactor: 2}, app, stream.ExitWhenCaughtUp())
	want := "-replication-factor (KGEN_REPLICATION_FACTOR): 2 is more than the cluster's 1 broker(s): the changelog and repartition topics cannot be created; lower it, or -1 for the broker's default"
	if err == nil || err.Error() != want {
		t.Fatalf("Run = %v\nwant %s", err, want)
	}
}

// TestFlagOverridesBadVariable: a flag given replaces its variable, so the
// variable's bad value is no longer an error.
func TestFlagOverridesBadVariable(t *testing.T) {
	var cfg appmain.Config
	if err := parse(t, &cfg, map[string]string{"KGEN_PARALLELISM": "abc"}, "-parallelism", "2"); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if cfg.Parallelism != 2 {
		t.Errorf("parallelism %d, want 2", cfg.Parallelism)
	}
}

func TestParseErrorPolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want stream.ErrorPolicy
		err  string
	}{
		{"fail", stream.Fail(), ""},
		{"continue", stream.LogAndContinue(), ""},
		{"dead-letter=orders-dlq", stream.DeadLetter("orders-dlq"), ""},
		{"dead-letter=", stream.ErrorPolicy{}, "want a topic name"},
		{"dead-letter", stream.ErrorPolicy{}, "needs its topic"},
		{"Fail", stream.ErrorPolicy{}, "want fail, continue or dead-letter=TOPIC"},
	} {
		got, err := appmain.ParseErrorPolicy(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseErrorPolicy(%q): %v, want an error containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseErrorPolicy(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestProductionPolicy: every policy value reaches the runtime.
func TestProductionPolicy(t *testing.T) {
	for _, p := range []string{"fail", "continue", "dead-letter=dlq"} {
		cfg := appmain.Config{Brokers: []string{"k:9092"}, AppID: "a", OnProduceError: p}
		if _, err := cfg.Options(); err != nil {
			t.Errorf("Options with %s: %v", p, err)
		}
	}
}

func TestSASLPasswordFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "password")
	if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, err string
	}{
		{file, ""},
		{filepath.Join(dir, "missing"), "-sasl-password-file (KGEN_SASL_PASSWORD_FILE): open"},
		{empty, "is empty"},
	} {
		cfg := appmain.Config{Brokers: []string{"k:9092"}, AppID: "a", SASLMechanism: "scram-sha-512", SASLUser: "u", SASLPasswordFile: tc.file}
		_, err := cfg.Options()
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Options with password file %s: %v, want %q", tc.file, err, tc.err)
		}
	}
}

func TestOptionsErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := appmain.Config{Brokers: []string{"x:9092"}, AppID: "a"}
	for _, tc := range []struct {
		name string
		edit func(*appmain.Config)
		want string
	}{
		{"guarantee", func(c *appmain.Config) { c.Guarantee = "at-most-once" }, `guarantee "at-most-once": want at-least-once or exactly-once`},
		{"sasl", func(c *appmain.Config) { c.SASLMechanism = "gssapi" }, `sasl mechanism "gssapi"`},
		{"missing ca", func(c *appmain.Config) { c.TLSCAFile = filepath.Join(dir, "none.pem") }, "tls ca: open"},
		{"ca not pem", func(c *appmain.Config) { c.TLSCAFile = notPEM }, "no PEM certificates"},
		{"client cert", func(c *appmain.Config) { c.TLSCertFile = notPEM; c.TLSKeyFile = notPEM }, "tls client certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			_, err := cfg.Options()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Options: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	for _, mech := range []string{"", "plain", "SCRAM-SHA-256", "scram-sha-512"} {
		cfg := base
		cfg.SASLMechanism, cfg.TLS = mech, true
		if _, err := cfg.Options(); err != nil {
			t.Errorf("Options with SASL %q and TLS: %v", mech, err)
		}
	}
}

// TestOpsHandler follows an app from created to running to stopped through
// /healthz and /readyz, and reads its counters from /metrics.
func TestOpsHandler(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	topo, _ := passthrough(in, out)()
	app, err := stream.New(topo, stream.Brokers(c.Seeds()...), stream.AppID("ops-"+in), stream.StateDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	h, err := appmain.OpsHandler(app)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz of a created app: %d, want 200", code)
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz of a created app: %d, want 503", code)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for app.State() != stream.Running {
		if time.Now().After(deadline) {
			t.Fatalf("app still %v after 30 s", app.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := get("/readyz"); code != http.StatusOK || !strings.Contains(body, "running") {
		t.Errorf("/readyz of a running app: %d %q, want 200 running", code, body)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "kgen_records_processed_total") {
		t.Errorf("/metrics: %d, want 200 with kgen_records_processed_total; body:\n%s", code, body)
	}
}

// TestRunOnTheDevelopmentBroker runs an app with no brokers configured: Run
// starts the embedded broker with the app's topics, and an in-process schema
// registry for an app that registers schemas.
func TestRunOnTheDevelopmentBroker(t *testing.T) {
	registered := false
	app := appmain.App{
		ID:       "dev-app",
		Topics:   map[string]int32{"in": 2, "out": 2},
		Topology: passthrough("in", "out"),
		RegisterSchemas: func(ctx context.Context, cl *sr.Client) error {
			_, err := cl.CreateSchema(ctx, "in-value", sr.Schema{Schema: `"string"`, Type: sr.TypeAvro})
			registered = err == nil
			return err
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := appmain.Config{StateDir: t.TempDir()}
	if err := appmain.Run(ctx, cfg, app, stream.ExitWhenCaughtUp()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !registered {
		t.Error("schemas were not registered with the in-process registry")
	}
}

func TestRunNeedsASchemaRegistryWithRealBrokers(t *testing.T) {
	app := appmain.App{
		ID: "needs-registry", Topology: passthrough("in", "out"),
		RegisterSchemas: func(context.Context, *sr.Client) error { return nil },
	}
	cfg := appmain.Config{Brokers: []string{"127.0.0.1:1"}}
	err := appmain.Run(context.Background(), cfg, app)
	if err == nil || !strings.Contains(err.Error(), "need a schema registry") {
		t.Fatalf("Run: %v, want the missing schema registry named", err)
	}
}

// TestRunUsesTheAppIDAsDefault checks that an empty Config.AppID becomes
// App.ID: the consumer group the app commits under.
func TestRunUsesTheAppIDAsDefault(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 1, nil), c.CreateTopic(t, 1, nil)
	cl := c.Client(t)
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: in, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	app := appmain.App{ID: "default-id-" + in, Topology: passthrough(in, out)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := appmain.Run(ctx, appmain.Config{Brokers: c.Seeds(), StateDir: t.TempDir()}, app, stream.ExitWhenCaughtUp()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	offsets, err := c.Admin(t).FetchOffsets(ctx, app.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offsets.Lookup(in, 0); !ok || o.At != 1 {
		t.Errorf("group %q has offset %+v for %s/0, want 1", app.ID, o, in)
	}
}

// -reset resets the application instead of running it.
func TestResetFlag(t *testing.T) {
	c := kafkatest.New(t)
	in, out := c.CreateTopic(t, 2, nil), c.CreateTopic(t, 2, nil)
	appID := "reset-flag-" + in
	dir := t.TempDir()
	app := appmain.App{ID: appID, Topology: passthrough(in, out)}
	cl := c.Client(t)
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: in, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cfg := appmain.Config{Brokers: c.Seeds(), AppID: appID, StateDir: dir}
	if err := appmain.Run(context.Background(), cfg, app, stream.ExitWhenCaughtUp()); err != nil {
		t.Fatal(err)
	}
	cfg.Reset = true
	if err := appmain.Run(context.Background(), cfg, app); err != nil {
		t.Fatalf("Run with Reset: %v", err)
	}
	offs, err := c.Admin(t).FetchOffsets(context.Background(), appID)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == in {
			moved++
			if o.At != 0 {
				t.Errorf("%s/%d committed at %d after the reset, want 0", o.Topic, o.Partition, o.At)
			}
		}
	})
	if moved != 2 {
		t.Fatalf("%d input partitions with committed offsets after the reset, want 2", moved)
	}
}
