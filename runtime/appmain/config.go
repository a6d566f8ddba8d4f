package appmain

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kgen-dev/kgen/runtime/stream"
)

// DevBrokers is the value of -brokers (or KGEN_BROKERS) that asks for the
// embedded development broker by name.
const DevBrokers = "dev"

// Config is how an application connects and runs. RegisterFlags fills it
// from command-line flags, whose defaults come from KGEN_* environment
// variables; Validate reports every setting that does not make sense, naming
// its flag and variable.
type Config struct {
	// Brokers are the seed brokers. A Config with no brokers and no broker
	// setting runs on the embedded development broker; an explicitly empty
	// setting (-brokers "" or KGEN_BROKERS=) is an error, so a deployment
	// whose variable came out empty does not quietly run on an in-memory
	// broker.
	Brokers []string
	// DevBroker asks for the embedded development broker (-brokers dev).
	DevBroker bool
	// DevPort is the port on 127.0.0.1 the development broker listens on,
	// so other clients (kcat, kgen produce) can reach it; 0 picks a free
	// one. Only with the development broker.
	DevPort int

	AppID    string // consumer group and internal topic prefix; empty means App.ID
	StateDir string // where persistent stores and checkpoints live
	// Parallelism is the number of processing units (stream.Parallelism);
	// 0 means 1, the runtime's default too (Kafka Streams'
	// num.stream.threads).
	Parallelism int
	Guarantee   string // at-least-once (default) or exactly-once

	// The runtime's tuning, each a stream.Option; a zero value keeps the
	// runtime's default.
	//
	// CommitInterval is stream.CommitInterval: 0 means 30 s under
	// at-least-once, 100 ms under exactly-once.
	CommitInterval time.Duration
	// StandbyReplicas is stream.StandbyReplicas (default 0).
	StandbyReplicas int
	// CacheRecords is stream.CacheRecords, each store task's write-back
	// cache in entries; nil keeps the default (10,000), 0 turns the cache
	// off under at-least-once.
	CacheRecords *int
	// MaxTaskIdle is stream.MaxTaskIdle: how long a task with several
	// inputs waits for an empty one fetched to its end (one known to hold
	// records not fetched yet is always waited for); negative never waits.
	MaxTaskIdle time.Duration
	// ReplicationFactor is stream.ReplicationFactor, of the changelog and
	// repartition topics the app creates: -1 (or 0 in a Config) is the
	// broker's default.replication.factor, as Kafka Streams' default.
	ReplicationFactor int
	// StartupTimeout is stream.StartupTimeout: how long to wait for
	// unreachable brokers at start (0: 5 minutes).
	StartupTimeout time.Duration
	// BufferRecords is stream.BufferRecords, records buffered per input
	// partition (0: 1,000).
	BufferRecords int
	// InstanceID names this instance among the application's instances
	// (e.g. a StatefulSet pod name); empty keeps the id stored in the state
	// directory. StaticMembership makes the instance a static group member
	// (stream.StaticMembership), which needs a stable InstanceID.
	InstanceID       string
	StaticMembership bool
	// AdvertisedAddress is the host:port other instances and clients reach
	// this instance's queries at (stream.AdvertisedAddress), told to the
	// whole group; empty advertises none.
	AdvertisedAddress string

	TLS         bool   // connect with TLS
	TLSCAFile   string // PEM file of the CA to trust; empty means the system pool
	TLSCertFile string // PEM client certificate, for mutual TLS; needs TLSKeyFile
	TLSKeyFile  string // PEM client key, for mutual TLS; needs TLSCertFile

	SASLMechanism string // plain, scram-sha-256 or scram-sha-512; empty for none
	SASLUser      string
	SASLPassword  string
	// SASLPasswordFile is a file holding the SASL password (a trailing
	// newline is dropped): unlike a flag, it does not show in ps.
	SASLPasswordFile string

	// OnDeserializeError, OnProcessError and OnProduceError are the error
	// policies for records that fail to decode, to process, or to be
	// produced: "fail" (the default), "continue" (log, count, skip) or
	// "dead-letter=TOPIC". See ParseErrorPolicy.
	OnDeserializeError string
	OnProcessError     string
	OnProduceError     string

	// LogLevel is the level of the application's log: debug, info (the
	// default), warn or error. LogFormat is text (the default) or json.
	// ClientLogLevel is the level of the Kafka client's own log: none (the
	// default of a Config), error, warn, info or debug. Main logs to
	// standard error; with all three empty, Run logs to slog.Default().
	LogLevel       string
	LogFormat      string
	ClientLogLevel string
	// LogSummaryInterval is how often a summary line of the app is logged
	// (records processed and their rate, lag, tasks), as Kafka Streams'
	// log.summary.interval.ms. 0 logs none; RegisterFlags defaults it to 2
	// minutes, Kafka Streams' default.
	LogSummaryInterval time.Duration

	MetricsAddr string // address of the /metrics (Prometheus), /healthz and /readyz endpoints; empty for none

	// HeapFloorMiB is the heap floor (SetHeapFloor) of an instance that
	// serves store queries (an application with queryable stores and a
	// MetricsAddr); 0 sets none. RegisterFlags defaults it to
	// DefaultHeapFloorMiB.
	HeapFloorMiB int

	// OpsTLSCertFile and OpsTLSKeyFile (PEM, both or neither) make the ops
	// endpoints serve HTTPS. OpsToken, when set, is the bearer token every
	// /v1/ request (the store queries) must carry. An application with
	// queryable stores refuses a non-loopback MetricsAddr without both,
	// unless OpsInsecure says the network is trusted: store contents are
	// data, not metrics.
	OpsTLSCertFile string
	OpsTLSKeyFile  string
	OpsToken       string
	OpsInsecure    bool

	// Reset resets the application instead of running it, as Kafka Streams'
	// reset tool (stream.App.Reset): refused while the group has members;
	// internal topics deleted, input offsets to the earliest (or to
	// ResetToTime, RFC 3339), this instance's local state wiped.
	Reset       bool
	ResetToTime string

	// SchemaRegistry is the URL of the schema registry the avro-confluent
	// topics' schemas are registered with; with the development broker,
	// empty starts an in-process registry too.
	SchemaRegistry string

	// envErrs holds, by flag name, the KGEN_* variables whose values did not
	// parse; setting the flag on the command line overrides the variable
	// and clears its error.
	envErrs map[string]error
}

// envName is the environment variable of a flag: KGEN_ and the flag's
// name in capitals with '_' for '-'.
func envName(flagName string) string {
	return "KGEN_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// setting names a flag and its variable, for error messages.
func setting(flagName string) string {
	return fmt.Sprintf("-%s (%s)", flagName, envName(flagName))
}

// RegisterFlags defines the application's flags on fs, writing into c.
// A flag's default is its KGEN_* environment variable when set, else the
// value c already holds. A variable whose value does not parse is reported
// by Validate (unless the flag is given, which overrides it); a flag whose
// value does not parse makes fs.Parse fail, naming the flag and variable.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	if c.envErrs == nil {
		c.envErrs = map[string]error{}
	}
	def := func(name string, v flag.Value, usage string) {
		env := envName(name)
		if s, ok := os.LookupEnv(env); ok {
			if err := v.Set(s); err != nil {
				c.envErrs[name] = fmt.Errorf("%s=%q (flag -%s): %v", env, s, name, err)
			}
		}
		fs.Var(&flagValue{v: v, name: name, errs: c.envErrs}, name, usage+" (env "+env+")")
	}
	str := func(p *string, check func(string) error) flag.Value { return &stringValue{p: p, check: check} }

	def("brokers", &brokersValue{c: c}, "comma-separated seed `brokers` (host:port), or \"dev\" for the embedded development broker; unset starts the development broker, empty is an error")
	def("dev-port", &intValue{p: &c.DevPort, min: 0, max: 65535}, "`port` on 127.0.0.1 for the development broker, so other clients can reach it; 0 picks a free one")
	def("app-id", str(&c.AppID, nil), "application `id`: consumer group and prefix of internal topics; empty means the application's name")
	def("state-dir", str(&c.StateDir, nil), "`directory` of persistent stores; empty means a directory under the system temp dir (a fresh one per run with the development broker)")
	if c.Parallelism == 0 {
		c.Parallelism = 1
	}
	def("parallelism", &intValue{p: &c.Parallelism, min: 1, max: 1 << 16}, "`number` of processing goroutines, each a consumer group member (Kafka Streams' num.stream.threads)")
	def("commit-interval", &durationValue{p: &c.CommitInterval}, "how often to commit progress (commit.interval.ms); 0 for the default: 30s, or 100ms under exactly-once")
	def("standby-replicas", &intValue{p: &c.StandbyReplicas, min: 0, max: 1 << 10}, "`number` of warm copies of each task's stores on other instances (num.standby.replicas)")
	if c.CacheRecords == nil {
		n := 10_000
		c.CacheRecords = &n
	}
	def("cache-records", &intValue{p: c.CacheRecords, min: 0, max: 1 << 30}, "`entries` in each store task's write-back cache; 0 turns it off under at-least-once (statestore.cache.max.bytes, counted in entries)")
	def("max-task-idle", &durationValue{p: &c.MaxTaskIdle, negative: true}, "how long a task with several inputs waits for an empty one fetched to its end before processing the others, possibly out of timestamp order (one known to hold records not fetched yet is always waited for); negative never waits (max.task.idle.ms)")
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	def("replication-factor", &intValue{p: &c.ReplicationFactor, min: -1, max: 32767, not0: true, showAll: true}, "replication `factor` of the changelog and repartition topics the app creates; -1 for the broker's default.replication.factor (replication.factor); checked against the cluster's brokers at start")
	def("startup-timeout", &durationValue{p: &c.StartupTimeout}, "how long to wait at start for brokers that cannot be reached; 0 for the default, 5m")
	def("buffer-records", &intValue{p: &c.BufferRecords, min: 1, max: 1 << 24}, "`records` buffered per input partition; 0 for the default, 1000 (buffered.records.per.partition)")
	if c.Guarantee == "" {
		c.Guarantee = "at-least-once"
	}
	def("guarantee", str(&c.Guarantee, checkGuarantee), "processing `guarantee`: at-least-once or exactly-once")
	def("instance-id", str(&c.InstanceID, nil), "`name` of this instance, stable across restarts; empty keeps the one stored in the state directory")
	def("advertised-address", str(&c.AdvertisedAddress, checkAddr), "`host:port` at which other instances and clients reach this instance's store queries, told to the whole group; empty for none")
	def("static-membership", &boolValue{p: &c.StaticMembership}, "join as a static group member: a restart within the session timeout causes no rebalance")
	def("tls", &boolValue{p: &c.TLS}, "connect to the brokers with TLS")
	def("tls-ca", str(&c.TLSCAFile, nil), "PEM `file` of the CA to trust; empty means the system's")
	def("tls-cert", str(&c.TLSCertFile, nil), "PEM `file` of the client certificate, with -tls-key")
	def("tls-key", str(&c.TLSKeyFile, nil), "PEM `file` of the client key, with -tls-cert")
	def("sasl-mechanism", str(&c.SASLMechanism, checkSASLMechanism), "SASL `mechanism`: plain, scram-sha-256 or scram-sha-512")
	def("sasl-user", str(&c.SASLUser, nil), "SASL `user`")
	def("sasl-password", str(&c.SASLPassword, nil), "SASL `password`; prefer -sasl-password-file, since flags show in ps")
	def("sasl-password-file", str(&c.SASLPasswordFile, nil), "`file` holding the SASL password")
	for _, p := range []struct {
		name string
		dst  *string
		what string
	}{
		{"on-deserialize-error", &c.OnDeserializeError, "a record that cannot be decoded"},
		{"on-process-error", &c.OnProcessError, "a record whose processing fails"},
		{"on-produce-error", &c.OnProduceError, "a record that cannot be produced"},
	} {
		if *p.dst == "" {
			*p.dst = "fail"
		}
		usage := "`policy` for " + p.what + ": fail, continue or dead-letter=TOPIC"
		def(p.name, str(p.dst, checkPolicy), usage)
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.LogFormat == "" {
		c.LogFormat = "text"
	}
	if c.ClientLogLevel == "" {
		c.ClientLogLevel = "warn"
	}
	def("log-level", str(&c.LogLevel, checkLogLevel), "log `level`: debug, info, warn or error")
	def("log-format", str(&c.LogFormat, checkLogFormat), "log `format`: text or json")
	if c.LogSummaryInterval == 0 {
		c.LogSummaryInterval = 2 * time.Minute
	}
	def("log-summary-interval", &durationValue{p: &c.LogSummaryInterval}, "how often to log a summary line (records processed, rate, lag, tasks); 0 for never")
	def("client-log-level", str(&c.ClientLogLevel, checkClientLogLevel), "log `level` of the Kafka client: none, error, warn, info or debug")
	def("reset", &boolValue{p: &c.Reset}, "reset the application instead of running it: delete its internal topics, move its input offsets to the earliest (or -reset-to-time) and wipe this instance's local state; refused while any instance runs")
	def("reset-to-time", str(&c.ResetToTime, checkTime), "with -reset, move the input offsets to the first record at or after this `time` (RFC 3339) instead of the earliest")
	def("metrics-addr", str(&c.MetricsAddr, checkAddr), "`address` of the /metrics (Prometheus), /healthz and /readyz endpoints, e.g. :9090; empty for none")
	if c.HeapFloorMiB == 0 {
		c.HeapFloorMiB = DefaultHeapFloorMiB
	}
	def("heap-floor", &intValue{p: &c.HeapFloorMiB, min: 0, max: 1 << 20}, "`MiB` of Go heap below which the garbage collector does not run, while the instance serves store queries: a query allocates some 5 KB and the live heap is small, so without it the collector runs many times a second and sets the queries' tail; the heap may hold up to this much garbage; 0 for none")
	def("ops-tls-cert", str(&c.OpsTLSCertFile, nil), "PEM `file` of the ops endpoints' certificate, with -ops-tls-key: serve them over HTTPS")
	def("ops-tls-key", str(&c.OpsTLSKeyFile, nil), "PEM `file` of the ops endpoints' key, with -ops-tls-cert")
	def("ops-token", str(&c.OpsToken, nil), "bearer `token` the store query endpoints (/v1/) require; prefer the variable, since flags show in ps")
	def("ops-insecure", &boolValue{p: &c.OpsInsecure}, "serve store queries on a non-loopback -metrics-addr without -ops-tls-cert and -ops-token (a trusted network only)")
	def("schema-registry", str(&c.SchemaRegistry, checkURL), "schema registry `URL` for avro-confluent topics; with the development broker, empty starts an in-process registry")
}

// Validate reports every problem of the configuration at once: variables
// and values that do not parse, and settings that need or exclude others.
// Each message names the flag and its variable. Run calls it before
// starting anything.
func (c Config) Validate() error {
	var errs []error
	names := make([]string, 0, len(c.envErrs))
	for name := range c.envErrs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		errs = append(errs, c.envErrs[name])
	}
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	check := func(name, value string, fn func(string) error) {
		if err := fn(value); err != nil {
			bad("%s: %q: %v", setting(name), value, err)
		}
	}
	if c.DevBroker && len(c.Brokers) > 0 {
		bad("%s: both the development broker and brokers %s", setting("brokers"), strings.Join(c.Brokers, ","))
	}
	if c.DevPort != 0 && !c.dev() {
		bad("%s: the development broker's port, but brokers are given", setting("dev-port"))
	}
	if c.DevPort < 0 || c.DevPort > 65535 {
		bad("%s: %d is not a port", setting("dev-port"), c.DevPort)
	}
	if c.LogSummaryInterval < 0 {
		bad("%s: %v: want 0 (none) or more", setting("log-summary-interval"), c.LogSummaryInterval)
	}
	if c.Parallelism < 0 {
		bad("%s: %d: want at least 1", setting("parallelism"), c.Parallelism)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"commit-interval", c.CommitInterval}, {"startup-timeout", c.StartupTimeout}} {
		if d.v < 0 {
			bad("%s: %v: want 0 (the default) or more", setting(d.name), d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"standby-replicas", c.StandbyReplicas}, {"buffer-records", c.BufferRecords}} {
		if n.v < 0 {
			bad("%s: %d: want 0 (the default) or more", setting(n.name), n.v)
		}
	}
	if c.CacheRecords != nil && *c.CacheRecords < 0 {
		bad("%s: %d: want 0 (off) or more", setting("cache-records"), *c.CacheRecords)
	}
	if c.ReplicationFactor < -1 || c.ReplicationFactor > 32767 {
		bad("%s: %d: want -1 (the broker's default) or 1 to 32767", setting("replication-factor"), c.ReplicationFactor)
	}
	if c.Guarantee != "" {
		check("guarantee", c.Guarantee, checkGuarantee)
	}
	if c.TLSKeyFile != "" && c.TLSCertFile == "" {
		bad("%s is set but %s is not: a client key needs its certificate", setting("tls-key"), setting("tls-cert"))
	}
	if c.TLSCertFile != "" && c.TLSKeyFile == "" {
		bad("%s is set but %s is not: a client certificate needs its key", setting("tls-cert"), setting("tls-key"))
	}
	if c.SASLMechanism == "" {
		for _, s := range []struct{ name, value string }{{"sasl-user", c.SASLUser}, {"sasl-password", c.SASLPassword}, {"sasl-password-file", c.SASLPasswordFile}} {
			if s.value != "" {
				bad("%s is set but %s is not: the client would connect unauthenticated", setting(s.name), setting("sasl-mechanism"))
			}
		}
	} else {
		check("sasl-mechanism", c.SASLMechanism, checkSASLMechanism)
		if c.SASLUser == "" {
			bad("%s %s needs %s", setting("sasl-mechanism"), c.SASLMechanism, setting("sasl-user"))
		}
		switch {
		case c.SASLPassword != "" && c.SASLPasswordFile != "":
			bad("%s and %s are both set: give one", setting("sasl-password"), setting("sasl-password-file"))
		case c.SASLPassword == "" && c.SASLPasswordFile == "":
			bad("%s %s needs %s or %s", setting("sasl-mechanism"), c.SASLMechanism, setting("sasl-password-file"), setting("sasl-password"))
		}
	}
	if (c.OpsTLSCertFile == "") != (c.OpsTLSKeyFile == "") {
		bad("%s and %s go together", setting("ops-tls-cert"), setting("ops-tls-key"))
	}
	if c.ResetToTime != "" {
		check("reset-to-time", c.ResetToTime, checkTime)
		if !c.Reset {
			bad("%s is set but %s is not", setting("reset-to-time"), setting("reset"))
		}
	}
	if c.Reset && c.dev() {
		bad("%s: the development broker keeps nothing between runs: there is nothing to reset", setting("reset"))
	}
	for _, p := range []struct{ name, value string }{{"on-deserialize-error", c.OnDeserializeError}, {"on-process-error", c.OnProcessError}, {"on-produce-error", c.OnProduceError}} {
		if p.value != "" {
			check(p.name, p.value, checkPolicy)
		}
	}
	for _, l := range []struct {
		name, value string
		fn          func(string) error
	}{{"log-level", c.LogLevel, checkLogLevel}, {"log-format", c.LogFormat, checkLogFormat}, {"client-log-level", c.ClientLogLevel, checkClientLogLevel},
		{"metrics-addr", c.MetricsAddr, checkAddr}, {"advertised-address", c.AdvertisedAddress, checkAddr}, {"schema-registry", c.SchemaRegistry, checkURL}} {
		if l.value != "" {
			check(l.name, l.value, l.fn)
		}
	}
	return errors.Join(errs...)
}

// dev reports whether the configuration runs on the development broker.
func (c Config) dev() bool { return c.DevBroker || len(c.Brokers) == 0 }

// Options turns the configuration into runtime options. Brokers and AppID
// must be set. It reads the TLS and password files.
func (c Config) Options() ([]stream.Option, error) {
	opts := []stream.Option{stream.Brokers(c.Brokers...), stream.AppID(c.AppID)}
	more, err := c.runOptions()
	if err != nil {
		return nil, err
	}
	return append(opts, more...), nil
}

// runOptions is Options without the brokers and the application id, which
// Run knows only once the development broker has started.
func (c Config) runOptions() ([]stream.Option, error) {
	opts := []stream.Option{stream.Parallelism(max(c.Parallelism, 1))}
	if c.CommitInterval > 0 {
		opts = append(opts, stream.CommitInterval(c.CommitInterval))
	}
	if c.StandbyReplicas > 0 {
		opts = append(opts, stream.StandbyReplicas(c.StandbyReplicas))
	}
	if c.CacheRecords != nil {
		opts = append(opts, stream.CacheRecords(*c.CacheRecords))
	}
	if c.MaxTaskIdle != 0 {
		opts = append(opts, stream.MaxTaskIdle(c.MaxTaskIdle))
	}
	if c.ReplicationFactor != 0 {
		opts = append(opts, stream.ReplicationFactor(c.ReplicationFactor))
	}
	if c.StartupTimeout > 0 {
		opts = append(opts, stream.StartupTimeout(c.StartupTimeout))
	}
	if c.BufferRecords > 0 {
		opts = append(opts, stream.BufferRecords(c.BufferRecords))
	}
	if c.StateDir != "" {
		opts = append(opts, stream.StateDir(c.StateDir))
	}
	if c.InstanceID != "" {
		opts = append(opts, stream.InstanceID(c.InstanceID))
	}
	if c.StaticMembership {
		opts = append(opts, stream.StaticMembership())
	}
	if c.AdvertisedAddress != "" {
		opts = append(opts, stream.AdvertisedAddress(c.AdvertisedAddress))
	}
	switch c.Guarantee {
	case "", "at-least-once":
		opts = append(opts, stream.Guarantee(stream.AtLeastOnce))
	case "exactly-once":
		opts = append(opts, stream.Guarantee(stream.ExactlyOnce))
	default:
		return nil, fmt.Errorf("guarantee %q: want at-least-once or exactly-once", c.Guarantee)
	}
	for _, p := range []struct {
		name, value string
		opt         func(stream.ErrorPolicy) stream.Option
	}{{"on-deserialize-error", c.OnDeserializeError, stream.OnDeserializeError}, {"on-process-error", c.OnProcessError, stream.OnProcessError}} {
		if p.value == "" {
			continue
		}
		policy, err := ParseErrorPolicy(p.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", setting(p.name), err)
		}
		opts = append(opts, p.opt(policy))
	}
	if c.OnProduceError != "" {
		policy, err := ParseErrorPolicy(c.OnProduceError)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", setting("on-produce-error"), err)
		}
		opt, err := produceErrorOption(c.OnProduceError, policy)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", setting("on-produce-error"), err)
		}
		if opt != nil {
			opts = append(opts, opt)
		}
	}
	client, err := c.clientOpts()
	if err != nil {
		return nil, err
	}
	if len(client) > 0 {
		opts = append(opts, stream.ClientOpts(client...))
	}
	return opts, nil
}

// produceErrorOption is where the production-error policy meets the
// runtime.
func produceErrorOption(_ string, policy stream.ErrorPolicy) (stream.Option, error) {
	return stream.OnProduceError(policy), nil
}

// ClientOpts are the franz-go options of the TLS and SASL settings, for
// other clients of the same cluster (kgen produce and consume use them). It
// reads the certificate and password files.
func (c Config) ClientOpts() ([]kgo.Opt, error) { return c.clientOpts() }

// clientOpts are the franz-go options of the TLS and SASL settings.
func (c Config) clientOpts() ([]kgo.Opt, error) {
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
	pass := c.SASLPassword
	if c.SASLPasswordFile != "" {
		b, err := os.ReadFile(c.SASLPasswordFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", setting("sasl-password-file"), err)
		}
		pass = strings.TrimRight(string(b), "\r\n")
		if pass == "" {
			return nil, fmt.Errorf("%s: %s is empty", setting("sasl-password-file"), c.SASLPasswordFile)
		}
	}
	switch strings.ToLower(c.SASLMechanism) {
	case "":
	case "plain":
		client = append(client, kgo.SASL(plain.Auth{User: c.SASLUser, Pass: pass}.AsMechanism()))
	case "scram-sha-256":
		client = append(client, kgo.SASL(scram.Auth{User: c.SASLUser, Pass: pass}.AsSha256Mechanism()))
	case "scram-sha-512":
		client = append(client, kgo.SASL(scram.Auth{User: c.SASLUser, Pass: pass}.AsSha512Mechanism()))
	default:
		return nil, fmt.Errorf("sasl mechanism %q: want plain, scram-sha-256 or scram-sha-512", c.SASLMechanism)
	}
	return client, nil
}

// ParseErrorPolicy parses an error policy as flags and variables give it:
// "fail", "continue" or "dead-letter=TOPIC".
func ParseErrorPolicy(s string) (stream.ErrorPolicy, error) {
	switch {
	case s == "fail":
		return stream.Fail(), nil
	case s == "continue":
		return stream.LogAndContinue(), nil
	case strings.HasPrefix(s, "dead-letter="):
		topic := strings.TrimPrefix(s, "dead-letter=")
		if topic == "" || strings.ContainsAny(topic, " ,/\\") {
			return stream.ErrorPolicy{}, fmt.Errorf("dead-letter=%s: want a topic name", topic)
		}
		return stream.DeadLetter(topic), nil
	case s == "dead-letter":
		return stream.ErrorPolicy{}, errors.New("dead-letter needs its topic: dead-letter=TOPIC")
	}
	return stream.ErrorPolicy{}, fmt.Errorf("want fail, continue or dead-letter=TOPIC")
}

func checkPolicy(s string) error { _, err := ParseErrorPolicy(s); return err }

func checkTime(s string) error {
	if s == "" {
		return nil
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		return fmt.Errorf("want an RFC 3339 time such as 2026-12-01T00:00:00Z: %w", err)
	}
	return nil
}

func checkGuarantee(s string) error {
	switch s {
	case "at-least-once", "exactly-once":
		return nil
	case "exactly_once", "exactly_once_v2", "exactly-once-v2", "eos":
		return errors.New(`want at-least-once or exactly-once (did you mean "exactly-once"?)`)
	case "at_least_once":
		return errors.New(`want at-least-once or exactly-once (did you mean "at-least-once"?)`)
	}
	return errors.New("want at-least-once or exactly-once")
}

func checkSASLMechanism(s string) error {
	switch strings.ToLower(s) {
	case "plain", "scram-sha-256", "scram-sha-512":
		return nil
	}
	return errors.New("want plain, scram-sha-256 or scram-sha-512")
}

func checkLogLevel(s string) error { _, err := parseLevel(s); return err }

func checkLogFormat(s string) error {
	if s == "text" || s == "json" {
		return nil
	}
	return errors.New("want text or json")
}

func checkClientLogLevel(s string) error { _, err := parseClientLevel(s); return err }

func checkAddr(s string) error {
	if _, port, err := net.SplitHostPort(s); err != nil {
		return errors.New("want host:port or :port")
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q: want 0 to 65535", port)
	}
	return nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an http:// or https:// URL")
	}
	return nil
}

// flagValue wraps a setting's value as the flag it is: setting the flag
// overrides the variable, so it clears the variable's error.
type flagValue struct {
	v    flag.Value
	name string
	errs map[string]error
}

func (f *flagValue) String() string {
	if f == nil || f.v == nil {
		return ""
	}
	return f.v.String()
}

func (f *flagValue) Set(s string) error {
	if err := f.v.Set(s); err != nil {
		return fmt.Errorf("%v (env %s)", err, envName(f.name))
	}
	delete(f.errs, f.name)
	return nil
}

func (f *flagValue) IsBoolFlag() bool {
	b, ok := f.v.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

type stringValue struct {
	p     *string
	check func(string) error
}

func (v *stringValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return *v.p
}

func (v *stringValue) Set(s string) error {
	if v.check != nil && s != "" {
		if err := v.check(s); err != nil {
			return err
		}
	}
	*v.p = s
	return nil
}

type intValue struct {
	p        *int
	min, max int
	not0     bool // 0 is refused (a replication factor)
	showAll  bool // -h shows a negative default too
}

func (v *intValue) String() string {
	if v == nil || v.p == nil || *v.p == 0 || (*v.p < 0 && !v.showAll) {
		return "" // so -h shows no default for a zero
	}
	return strconv.Itoa(*v.p)
}

func (v *intValue) want() string {
	if v.not0 && v.min == -1 {
		return fmt.Sprintf("-1 or 1 to %d", v.max)
	}
	return fmt.Sprintf("%d to %d", v.min, v.max)
}

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("want a whole number, %s", v.want())
	}
	if n < v.min || n > v.max || (v.not0 && n == 0) {
		return fmt.Errorf("%d: want %s", n, v.want())
	}
	*v.p = n
	return nil
}

type durationValue struct {
	p        *time.Duration
	negative bool // a negative duration is a value (max-task-idle: never wait)
}

func (v *durationValue) String() string {
	if v == nil || v.p == nil || *v.p == 0 {
		return ""
	}
	return v.p.String()
}

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || (d < 0 && !v.negative) {
		if v.negative {
			return errors.New("want a duration such as 30s or 2m, 0, or a negative one (-1ms)")
		}
		return errors.New("want a duration such as 30s or 2m, or 0")
	}
	*v.p = d
	return nil
}

// boolValue accepts what strconv.ParseBool does (1, t, true, 0, f, false,
// in any case) and nothing else: KGEN_TLS=yes is an error, not false.
type boolValue struct{ p *bool }

func (v *boolValue) String() string {
	if v == nil || v.p == nil || !*v.p {
		return "" // so -h shows no default for false
	}
	return strconv.FormatBool(*v.p)
}

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return errors.New("want true or false (or 1 or 0)")
	}
	*v.p = b
	return nil
}

func (v *boolValue) IsBoolFlag() bool { return true }

// brokersValue is -brokers: a list of host:port, or "dev".
type brokersValue struct{ c *Config }

func (v *brokersValue) String() string {
	if v == nil || v.c == nil {
		return ""
	}
	if v.c.DevBroker {
		return DevBrokers
	}
	return strings.Join(v.c.Brokers, ",")
}

func (v *brokersValue) Set(s string) error {
	if strings.TrimSpace(s) == DevBrokers {
		v.c.Brokers, v.c.DevBroker = nil, true
		return nil
	}
	list := splitList(s)
	if len(list) == 0 {
		return errors.New(`empty: give host:port[,host:port...], or "dev" for the development broker`)
	}
	for _, b := range list {
		if _, _, err := net.SplitHostPort(b); err != nil {
			if !strings.Contains(b, ":") {
				continue // a host alone: franz-go adds Kafka's port 9092
			}
			return fmt.Errorf("broker %q: want host:port", b)
		}
	}
	v.c.Brokers, v.c.DevBroker = list, false
	return nil
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
