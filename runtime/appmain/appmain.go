// Package appmain is what a kgen-generated application runs on: its
// configuration (flags and KGEN_* environment variables), TLS and SASL,
// the metrics and health endpoints, the embedded development broker when no
// brokers are given, and a complete main function.
//
// Generated code (kgen_app.gen.go) fills an App with the application's id,
// topics and topology; hand-written mains can use the same pieces.
package appmain

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/kgen-dev/kgen/runtime/embedded"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamprom"
)

// App is what appmain needs to know of one application.
type App struct {
	// ID is the default application id (consumer group and prefix of
	// internal topics), used when Config.AppID is empty.
	ID string
	// Topics maps every topic of the application to its partition count:
	// what the embedded development broker creates.
	Topics map[string]int32
	// Topology builds the application's topology.
	Topology func() (*stream.Topology, error)
	// RegisterSchemas, if set, registers the schemas of the application's
	// avro-confluent topics before it runs; the application then needs a
	// schema registry (Config.SchemaRegistry, or an in-process one with the
	// development broker).
	RegisterSchemas func(context.Context, *sr.Client) error
}

// Config is how an application connects and runs. RegisterFlags fills it
// from command-line flags, whose defaults come from KGEN_* environment
// variables.
type Config struct {
	Brokers     []string // seed brokers; none starts the embedded development broker
	AppID       string   // consumer group and internal topic prefix; empty means App.ID
	StateDir    string   // where persistent stores and checkpoints live
	Parallelism int      // processing goroutines
	Guarantee   string   // at-least-once or exactly-once
	// InstanceID names this instance among the application's instances
	// (e.g. a StatefulSet pod name); empty keeps the id stored in the state
	// directory. StaticMembership makes the instance a static group member
	// (stream.StaticMembership), which needs a stable InstanceID.
	InstanceID       string
	StaticMembership bool

	TLS         bool   // connect with TLS
	TLSCAFile   string // PEM file of the CA to trust; empty means the system pool
	TLSCertFile string // PEM client certificate, for mutual TLS
	TLSKeyFile  string // PEM client key, for mutual TLS

	SASLMechanism string // plain, scram-sha-256 or scram-sha-512; empty for none
	SASLUser      string
	SASLPassword  string

	MetricsAddr string // address of the /metrics (Prometheus), /healthz and /readyz endpoints; empty for none

	// SchemaRegistry is the URL of the schema registry the avro-confluent
	// topics' schemas are registered with; with the development broker,
	// empty starts an in-process registry too.
	SchemaRegistry string
}

// RegisterFlags defines the application's flags on fs, writing into c.
// A flag's default is its KGEN_* environment variable when set, else the
// value c already holds (Parallelism and Guarantee have defaults of their
// own when c holds none).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	env := func(name, def string) string {
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		return def
	}
	envInt := func(name string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
			return v
		}
		return def
	}
	if brokers := splitList(os.Getenv("KGEN_BROKERS")); len(brokers) > 0 {
		c.Brokers = brokers
	}
	fs.Func("brokers", "comma-separated seed brokers; none starts the embedded development broker (env KGEN_BROKERS)", func(s string) error {
		c.Brokers = splitList(s)
		return nil
	})
	fs.StringVar(&c.AppID, "app-id", env("KGEN_APP_ID", c.AppID), "application id: consumer group and prefix of internal topics; empty means the application's name (env KGEN_APP_ID)")
	fs.StringVar(&c.StateDir, "state-dir", env("KGEN_STATE_DIR", c.StateDir), "directory of persistent stores; empty means a directory under the system temp dir (env KGEN_STATE_DIR)")
	fs.IntVar(&c.Parallelism, "parallelism", envInt("KGEN_PARALLELISM", max(c.Parallelism, 1)), "processing goroutines (env KGEN_PARALLELISM)")
	fs.StringVar(&c.Guarantee, "guarantee", env("KGEN_GUARANTEE", cmpOr(c.Guarantee, "at-least-once")), "processing guarantee: at-least-once or exactly-once (env KGEN_GUARANTEE)")
	fs.StringVar(&c.InstanceID, "instance-id", env("KGEN_INSTANCE_ID", c.InstanceID), "name of this instance, stable across restarts; empty keeps the one stored in the state directory (env KGEN_INSTANCE_ID)")
	fs.BoolVar(&c.StaticMembership, "static-membership", env("KGEN_STATIC_MEMBERSHIP", strconv.FormatBool(c.StaticMembership)) == "true", "join as a static group member: a restart within the session timeout causes no rebalance (env KGEN_STATIC_MEMBERSHIP=true)")
	fs.BoolVar(&c.TLS, "tls", env("KGEN_TLS", strconv.FormatBool(c.TLS)) == "true", "connect to the brokers with TLS (env KGEN_TLS=true)")
	fs.StringVar(&c.TLSCAFile, "tls-ca", env("KGEN_TLS_CA", c.TLSCAFile), "PEM file of the CA to trust (env KGEN_TLS_CA)")
	fs.StringVar(&c.TLSCertFile, "tls-cert", env("KGEN_TLS_CERT", c.TLSCertFile), "PEM client certificate (env KGEN_TLS_CERT)")
	fs.StringVar(&c.TLSKeyFile, "tls-key", env("KGEN_TLS_KEY", c.TLSKeyFile), "PEM client key (env KGEN_TLS_KEY)")
	fs.StringVar(&c.SASLMechanism, "sasl-mechanism", env("KGEN_SASL_MECHANISM", c.SASLMechanism), "SASL mechanism: plain, scram-sha-256 or scram-sha-512 (env KGEN_SASL_MECHANISM)")
	fs.StringVar(&c.SASLUser, "sasl-user", env("KGEN_SASL_USER", c.SASLUser), "SASL user (env KGEN_SASL_USER)")
	fs.StringVar(&c.SASLPassword, "sasl-password", env("KGEN_SASL_PASSWORD", c.SASLPassword), "SASL password (env KGEN_SASL_PASSWORD)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", env("KGEN_METRICS_ADDR", c.MetricsAddr), "address of the /metrics (Prometheus), /healthz and /readyz endpoints, e.g. :9090 (env KGEN_METRICS_ADDR)")
	fs.StringVar(&c.SchemaRegistry, "schema-registry", env("KGEN_SCHEMA_REGISTRY", c.SchemaRegistry), "schema registry URL for avro-confluent topics; with no brokers, empty starts an in-process registry (env KGEN_SCHEMA_REGISTRY)")
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// Options turns the configuration into runtime options. Brokers and AppID
// must be set.
func (c Config) Options() ([]stream.Option, error) {
	opts := []stream.Option{stream.Brokers(c.Brokers...), stream.AppID(c.AppID), stream.Parallelism(max(c.Parallelism, 1))}
	if c.StateDir != "" {
		opts = append(opts, stream.StateDir(c.StateDir))
	}
	if c.InstanceID != "" {
		opts = append(opts, stream.InstanceID(c.InstanceID))
	}
	if c.StaticMembership {
		opts = append(opts, stream.StaticMembership())
	}
	switch c.Guarantee {
	case "", "at-least-once":
		opts = append(opts, stream.Guarantee(stream.AtLeastOnce))
	case "exactly-once":
		opts = append(opts, stream.Guarantee(stream.ExactlyOnce))
	default:
		return nil, fmt.Errorf("guarantee %q: want at-least-once or exactly-once", c.Guarantee)
	}
	var client []kgo.Opt
	if c.TLS || c.TLSCAFile != "" || c.TLSCertFile != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.TLSCAFile != "" {
			pem, err := os.ReadFile(c.TLSCAFile)
			if err != nil {
				return nil, fmt.Errorf("tls ca: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("tls ca %s: no PEM certificates", c.TLSCAFile)
			}
		}
		if c.TLSCertFile != "" || c.TLSKeyFile != "" {
			cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
			if err != nil {
				return nil, fmt.Errorf("tls client certificate: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		client = append(client, kgo.DialTLSConfig(cfg))
	}
	switch strings.ToLower(c.SASLMechanism) {
	case "":
	case "plain":
		client = append(client, kgo.SASL(plain.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsMechanism()))
	case "scram-sha-256":
		client = append(client, kgo.SASL(scram.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsSha256Mechanism()))
	case "scram-sha-512":
		client = append(client, kgo.SASL(scram.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsSha512Mechanism()))
	default:
		return nil, fmt.Errorf("sasl mechanism %q: want plain, scram-sha-256 or scram-sha-512", c.SASLMechanism)
	}
	if len(client) > 0 {
		opts = append(opts, stream.ClientOpts(client...))
	}
	return opts, nil
}

// Run runs app until ctx ends (or, with stream.ExitWhenCaughtUp, until the
// input is consumed). With no brokers configured it starts the embedded
// development broker first.
func Run(ctx context.Context, cfg Config, app App, opts ...stream.Option) error {
	if cfg.AppID == "" {
		cfg.AppID = app.ID
	}
	dev := len(cfg.Brokers) == 0
	if dev {
		b, err := embedded.Start(embedded.Config{Topics: app.Topics})
		if err != nil {
			return err
		}
		defer b.Close()
		cfg.Brokers = b.Addrs()
		slog.Info("no brokers given: started the embedded development broker", "addrs", cfg.Brokers)
	}
	if app.RegisterSchemas != nil {
		registry := cfg.SchemaRegistry
		if registry == "" {
			if !dev {
				return errors.New("topics in the avro-confluent format need a schema registry: set -schema-registry or KGEN_SCHEMA_REGISTRY")
			}
			reg := srfake.New()
			defer reg.Close()
			registry = reg.URL()
			slog.Info("no schema registry given: started an in-process one", "url", registry)
		}
		src, err := sr.NewClient(sr.URLs(registry))
		if err != nil {
			return err
		}
		if err := app.RegisterSchemas(ctx, src); err != nil {
			return err
		}
	}
	t, err := app.Topology()
	if err != nil {
		return err
	}
	base, err := cfg.Options()
	if err != nil {
		return err
	}
	a, err := stream.New(t, append(base, opts...)...)
	if err != nil {
		return err
	}
	if cfg.MetricsAddr != "" {
		handler, err := OpsHandler(a)
		if err != nil {
			return err
		}
		srv := &http.Server{Addr: cfg.MetricsAddr, Handler: handler, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				slog.Error("metrics endpoint", "addr", cfg.MetricsAddr, "err", err)
			}
		}()
		defer srv.Close()
	}
	return a.Run(ctx)
}

// OpsHandler serves /metrics (the app's counters for Prometheus), /healthz
// (the app has not failed) and /readyz (it is running).
func OpsHandler(app *stream.App) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(streamprom.NewCollector(app)); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if app.State() == stream.Failed {
			http.Error(w, app.State().String(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, app.State())
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if app.State() != stream.Running {
			http.Error(w, app.State().String(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, app.State())
	})
	return mux, nil
}

// Main is a complete main function: it reads flags and environment, runs
// app until SIGINT or SIGTERM, and exits with status 1 on failure and 2 on
// bad flags.
func Main(app App, opts ...stream.Option) {
	var cfg Config
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	cfg.RegisterFlags(fs)
	fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, cfg, app, opts...); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
		stop()
		os.Exit(1)
	}
}
