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
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/kgen-dev/kgen/runtime/embedded"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// App is what appmain needs to know of one application.
type App struct {
	// ID is the default application id (consumer group and prefix of
	// internal topics), used when Config.AppID is empty.
	ID string
	// Topics maps every topic of the application to its partition count:
	// what the embedded development broker creates.
	Topics map[string]int32
	// TopicConfigs are the configs kgen.yaml gives some of Topics
	// (configs:), by topic: the development broker creates them with
	// these, as kgen topics does on a cluster.
	TopicConfigs map[string]map[string]string
	// Topology builds the application's topology.
	Topology func() (*stream.Topology, error)
	// RegisterSchemas, if set, registers the schemas of the application's
	// avro-confluent topics before it runs; the application then needs a
	// schema registry (Config.SchemaRegistry, or an in-process one with the
	// development broker).
	RegisterSchemas func(context.Context, *sr.Client) error
	// Queries, if set, returns the HTTP handlers of the application's
	// queryable stores by store name (queryapi.KeyValue), served on the ops
	// endpoints (Config.MetricsAddr) under /v1/stores/{store}/, each seeing
	// the path after the store. forward is the client to reach other
	// instances with (their -advertised-address), set up for the ops TLS.
	Queries func(a *stream.App, forward *http.Client) (map[string]http.Handler, error)
	// OpenAPI, if set, is the OpenAPI document of the query endpoints,
	// served at /v1/openapi.json.
	OpenAPI []byte
}

// Run runs app until ctx ends (or, with stream.ExitWhenCaughtUp, until the
// input is consumed). It checks the whole configuration (Validate) and reads
// its files before it starts anything; with no brokers configured it then
// starts the embedded development broker. Options in opts apply after the
// configuration's.
func Run(ctx context.Context, cfg Config, app App, opts ...stream.Option) error {
	logger := slog.Default()
	if cfg.LogLevel != "" || cfg.LogFormat != "" || cfg.ClientLogLevel != "" {
		l, err := cfg.NewLogger(os.Stderr)
		if err != nil {
			return err
		}
		logger = l
	}
	return run(ctx, cfg, app, logger, opts)
}

func run(ctx context.Context, cfg Config, app App, logger *slog.Logger, opts []stream.Option) error {
	if cfg.AppID == "" {
		cfg.AppID = app.ID
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	base, err := cfg.runOptions()
	if err != nil {
		return err
	}
	if level, _ := parseClientLevel(cfg.ClientLogLevel); level != kgo.LogLevelNone {
		base = append(base, stream.ClientOpts(kgo.WithLogger(clientLogger(logger, level))))
	}
	base = append(base, stream.Logger(logger))

	dev := cfg.dev()
	if dev && cfg.StateDir == "" {
		// The development broker forgets everything at exit: state kept
		// from an earlier run would describe topics that no longer
		// exist, and two local instances must not share an instance id.
		dir, err := os.MkdirTemp("", "kgen-dev-"+cfg.AppID+"-")
		if err != nil {
			return fmt.Errorf("state directory for the development broker: %w", err)
		}
		defer os.RemoveAll(dir)
		base = append(base, stream.StateDir(dir))
		if cfg.InstanceID == "" {
			// What the runtime would pick in a fresh directory, but
			// known here, so every line can name it.
			id := "dev-" + strings.TrimPrefix(filepath.Base(dir), "kgen-dev-"+cfg.AppID+"-")
			base = append(base, stream.InstanceID(id))
			setLoggerInstance(logger, id)
		}
	}

	// The ops endpoints bind first: an address in use stops the app before
	// it joins the group, rather than leaving it running unobserved.
	var ops net.Listener
	var tc *tls.Config
	var reg *prometheus.Registry
	if cfg.MetricsAddr != "" {
		ops, err = net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("%s: %w", setting("metrics-addr"), err)
		}
		defer ops.Close()
		if err := checkOpsExposure(cfg, ops.Addr(), app.Queries != nil); err != nil {
			return err
		}
		if tc, err = opsTLS(cfg); err != nil {
			return err
		}
		if tc != nil {
			ops = tls.NewListener(ops, tc)
		}
		logger.Info("ops endpoints listening", "addr", ops.Addr().String(), "paths", "/ (the live page) /v1/status /metrics /healthz /readyz")
		if app.Queries != nil && cfg.HeapFloorMiB > 0 {
			SetHeapFloor(cfg.HeapFloorMiB)
			defer SetHeapFloor(0)
			logger.Info("store queries served: Go's heap kept at least this large, so the collector runs seldom", "heap_floor_mib", cfg.HeapFloorMiB)
		}
		if reg, err = newRegistry(); err != nil {
			return err
		}
		base = append(base, stream.ClientOpts(kgo.WithHooks(kafkaClientMetrics(reg))))
	}

	if dev {
		b, err := embedded.Start(embedded.Config{Topics: devTopics(app.Topics, cfg), TopicConfigs: app.TopicConfigs, Port: cfg.DevPort})
		if err != nil {
			if cfg.DevPort != 0 {
				return fmt.Errorf("%s: %w", setting("dev-port"), err)
			}
			return err
		}
		defer b.Close()
		cfg.Brokers = b.Addrs()
		logger.Info("started the embedded development broker (in memory, gone at exit)", "addrs", strings.Join(cfg.Brokers, ","))
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
			logger.Info("no schema registry given: started an in-process one", "url", registry)
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
	all := append([]stream.Option{stream.Brokers(cfg.Brokers...), stream.AppID(cfg.AppID)}, base...)
	a, err := stream.New(t, append(all, opts...)...)
	if err != nil {
		return err
	}
	if x, ok := any(a).(interface{ InstanceID() string }); ok {
		setLoggerInstance(logger, x.InstanceID())
	}
	if cfg.Reset {
		var ro stream.ResetOptions
		if cfg.ResetToTime != "" {
			ro.ToTime, _ = time.Parse(time.RFC3339Nano, cfg.ResetToTime) // checked by Validate
		}
		return a.Reset(ctx, ro)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if ops != nil {
		if err := registerApp(reg, a); err != nil {
			return err
		}
		handler := opsHandler(a, reg)
		var queryable []string
		if app.Queries != nil {
			qs, err := app.Queries(a, forwardClient(tc))
			if err != nil {
				return err
			}
			handler = withQueries(handler, qs, app.OpenAPI)
			for store := range qs {
				queryable = append(queryable, store)
			}
		}
		handler = LivePage(a, t, queryable, handler)
		handler = guardQueries(handler, cfg.OpsToken)
		srv := opsServer(handler)
		served := make(chan struct{})
		go func() {
			defer close(served)
			if err := srv.Serve(ops); err != nil && !errors.Is(err, http.ErrServerClosed) {
				cancel(fmt.Errorf("ops endpoints on %s: %w", ops.Addr(), err))
			}
		}()
		defer func() { srv.Close(); <-served }()
	}
	if cfg.LogSummaryInterval > 0 {
		stopSummary := logSummaries(ctx, a, logger, cfg.LogSummaryInterval)
		defer stopSummary()
	}
	err = a.Run(ctx)
	var rf *stream.ReplicationFactorError
	if errors.As(err, &rf) {
		return fmt.Errorf("%s: %d is more than the cluster's %d broker(s): the changelog and repartition topics cannot be created; lower it, or -1 for the broker's default", setting("replication-factor"), rf.Factor, rf.Brokers)
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && (err == nil || errors.Is(err, context.Canceled)) {
		return cause
	}
	return err
}

// DeadLetterPartitions is the partition count of a dead-letter topic that
// kgen creates (the development broker, kgen topics): dead letters are
// read by people and tools, not by the app's tasks, so one is enough.
const DeadLetterPartitions = 1

// DeadLetterTopics are the dead-letter topics of cfg's error policies
// (-on-*-error dead-letter=TOPIC), sorted, each once, with the flags
// naming them.
func DeadLetterTopics(cfg Config) map[string][]string {
	out := map[string][]string{}
	for _, p := range []struct{ name, value string }{{"on-deserialize-error", cfg.OnDeserializeError}, {"on-process-error", cfg.OnProcessError}, {"on-produce-error", cfg.OnProduceError}} {
		if topic, ok := strings.CutPrefix(p.value, "dead-letter="); ok && topic != "" {
			out[topic] = append(out[topic], "-"+p.name)
		}
	}
	return out
}

// devTopics are the topics the development broker starts with: the
// application's and the dead-letter topics of the error policies, which
// a real cluster needs created too (kgen topics does).
func devTopics(topics map[string]int32, cfg Config) map[string]int32 {
	dlq := DeadLetterTopics(cfg)
	if len(dlq) == 0 {
		return topics
	}
	out := make(map[string]int32, len(topics)+len(dlq))
	for t, n := range topics {
		out[t] = n
	}
	for t := range dlq {
		if _, ok := out[t]; !ok {
			out[t] = DeadLetterPartitions
		}
	}
	return out
}

// withQueries adds the store query handlers to the ops handler: each
// store's under /v1/stores/{store}/, seeing the path after the store; an
// unknown store is 404 naming the known ones.
func withQueries(ops http.Handler, queries map[string]http.Handler, openapi []byte) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", ops)
	names := make([]string, 0, len(queries))
	for store, h := range queries {
		names = append(names, store)
		prefix := "/v1/stores/" + store
		mux.Handle(prefix+"/", http.StripPrefix(prefix, h))
	}
	sort.Strings(names)
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		if store, ok := strings.CutPrefix(r.URL.Path, "/v1/stores/"); ok {
			store, _, _ = strings.Cut(store, "/")
			opsError(w, http.StatusNotFound, fmt.Sprintf("no queryable store %q; the queryable stores are: %s", store, strings.Join(names, ", ")))
			return
		}
		opsError(w, http.StatusNotFound, "no such endpoint: the store queries are under /v1/stores/{store}/, described by /v1/openapi.json")
	})
	if openapi != nil {
		mux.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(openapi)
		})
	}
	return mux
}

// opsIdleTimeout closes a kept-alive ops connection that sends no request
// for that long: without it a scraper or load balancer that keeps
// connections open and then goes away leaves them open forever.
var opsIdleTimeout = 2 * time.Minute

// opsServer serves the ops endpoints with bounds on slow or idle clients.
func opsServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: opsIdleTimeout}
}

// OpsHandler serves /metrics (the app's metrics, the Go runtime's, the
// process's and the build's, for Prometheus), /healthz (the app has not
// failed) and /readyz (it is running). Run's handler also has the Kafka
// client's metrics, which need a hook set before the app is created.
func OpsHandler(app *stream.App) (http.Handler, error) {
	reg, err := newRegistry()
	if err != nil {
		return nil, err
	}
	if err := registerApp(reg, app); err != nil {
		return nil, err
	}
	return opsHandler(app, reg), nil
}

func opsHandler(app *stream.App, reg *prometheus.Registry) http.Handler {
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
	return mux
}

// Main is a complete main function: it reads flags and environment, runs
// app until SIGINT or SIGTERM, and exits with status 1 on failure and 2 on
// bad flags or variables (found before anything starts).
func Main(app App, opts ...stream.Option) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := mainStatus(ctx, os.Args[0], os.Args[1:], os.Stderr, app, opts)
	stop()
	os.Exit(code)
}

// ParseFlags parses args into fs, whose flags are registered, as a
// generated main does. The flag package prints the usage after a bad flag's
// message, which then scrolls off the screen: here the usage (about, a line
// on KGEN_* variables, the exit statuses and the flags) is printed for -h
// only, a bad flag gets its message and one line pointing to -h, and
// arguments that are not flags are refused. done says the program is to
// exit now with code (0 after -h, 2 after a mistake); otherwise it goes on.
func ParseFlags(fs *flag.FlagSet, args []string, stderr io.Writer, about string) (code int, done bool) {
	name := fs.Name()
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "Usage: %s [flags]\n\n%s\n"+
				"Each flag's default comes from its KGEN_* variable; a flag given overrides it.\n"+
				"Exit status: 0 stopped, 1 failed, 2 bad flags or variables.\n\nFlags:\n", name, about)
			fs.PrintDefaults()
			return 0, true
		}
		fmt.Fprintf(stderr, "run %s -h for the flags and their variables\n", name)
		return 2, true // the flag package printed the error
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments: %s (flags only; run with -h for them)\n", name, strings.Join(fs.Args(), " "))
		return 2, true
	}
	return 0, false
}

// mainStatus is Main up to the exit status, with its inputs and output
// given, so tests can run it.
func mainStatus(ctx context.Context, name string, args []string, stderr io.Writer, app App, opts []stream.Option) int {
	var cfg Config
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	about := fmt.Sprintf("Runs the %s stream processing application until SIGINT or SIGTERM.", app.ID)
	if code, done := ParseFlags(fs, args, stderr, about); done {
		return code
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "%s: configuration:\n%s\n", name, indent(err.Error()))
		return 2
	}
	if _, err := cfg.runOptions(); err != nil {
		fmt.Fprintf(stderr, "%s: configuration: %v\n", name, err)
		return 2
	}
	logger, err := cfg.NewLogger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	slog.SetDefault(logger)
	if err := run(ctx, cfg, app, logger, opts); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("stopped with an error", "err", err)
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

func indent(s string) string { return "\t" + strings.ReplaceAll(s, "\n", "\n\t") }
