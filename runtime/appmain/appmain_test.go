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

func TestRegisterFlags(t *testing.T) {
	t.Setenv("KGEN_BROKERS", "a:9092, b:9092")
	t.Setenv("KGEN_PARALLELISM", "3")
	t.Setenv("KGEN_GUARANTEE", "exactly-once")
	t.Setenv("KGEN_STATIC_MEMBERSHIP", "true")
	cfg := appmain.Config{AppID: "preset", StateDir: "/kept"}
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse([]string{"-parallelism", "4", "-sasl-mechanism", "plain", "-instance-id", "pod-0"}); err != nil {
		t.Fatal(err)
	}
	want := appmain.Config{
		Brokers: []string{"a:9092", "b:9092"}, AppID: "preset", StateDir: "/kept", Parallelism: 4,
		Guarantee: "exactly-once", SASLMechanism: "plain", InstanceID: "pod-0", StaticMembership: true,
	}
	if got := cfg; !equalConfig(got, want) {
		t.Errorf("config %+v, want %+v", got, want)
	}
}

func TestRegisterFlagsDefaults(t *testing.T) {
	for _, name := range []string{"KGEN_BROKERS", "KGEN_PARALLELISM", "KGEN_GUARANTEE", "KGEN_APP_ID"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	var cfg appmain.Config
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if cfg.Parallelism != 1 || cfg.Guarantee != "at-least-once" || len(cfg.Brokers) != 0 || cfg.AppID != "" {
		t.Errorf("defaults %+v, want parallelism 1, at-least-once, no brokers, no app id", cfg)
	}
}

func equalConfig(a, b appmain.Config) bool {
	return strings.Join(a.Brokers, ",") == strings.Join(b.Brokers, ",") && a.AppID == b.AppID &&
		a.StateDir == b.StateDir && a.Parallelism == b.Parallelism && a.Guarantee == b.Guarantee &&
		a.SASLMechanism == b.SASLMechanism && a.TLS == b.TLS && a.MetricsAddr == b.MetricsAddr &&
		a.InstanceID == b.InstanceID && a.StaticMembership == b.StaticMembership
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
