package cli

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/kgen-dev/kgen/gen"
	"github.com/kgen-dev/kgen/runtime/appmain"
	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/schema"
)

// recordLine is one record as kgen produce reads it and kgen consume
// prints it: a JSON object per line.
type recordLine struct {
	Topic     string            `json:"topic,omitempty"`
	Partition *int32            `json:"partition,omitempty"`
	Offset    *int64            `json:"offset,omitempty"`
	Timestamp string            `json:"timestamp,omitempty"` // RFC 3339
	Headers   map[string]string `json:"headers,omitempty"`
	Key       json.RawMessage   `json:"key"`
	Value     json.RawMessage   `json:"value"`
	Error     string            `json:"error,omitempty"` // consume: why the record could not be decoded
	// Raw holds what could not be decoded, base64 (consume only).
	RawKey   string `json:"raw_key,omitempty"`
	RawValue string `json:"raw_value,omitempty"`
}

// devLoopFlags are the flags produce and consume share.
type devLoopFlags struct {
	dir      string
	brokers  string
	registry string
	conn     appmain.Config // TLS and SASL only
}

func (f *devLoopFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dir, "dir", ".", "`directory` of the kgen.yaml whose topics and types to use")
	fs.StringVar(&f.registry, "schema-registry", os.Getenv("KGEN_SCHEMA_REGISTRY"), "schema registry `URL`, for avro-confluent topics (env KGEN_SCHEMA_REGISTRY)")
	f.registerConn(fs)
}

// registerConn registers the flags that reach the cluster: the seed
// brokers, TLS and SASL.
func (f *devLoopFlags) registerConn(fs *flag.FlagSet) {
	brokers := os.Getenv("KGEN_BROKERS")
	if brokers == "" {
		brokers = "127.0.0.1:9092"
	}
	fs.StringVar(&f.brokers, "brokers", brokers, "comma-separated seed `brokers`: an app's development broker started with -dev-port, or any cluster (env KGEN_BROKERS)")
	// The connection settings of the app's own flags, with the same
	// variables, so a deployment's environment reaches the same cluster.
	str := func(p *string, name, usage string) {
		env := "KGEN_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		fs.StringVar(p, name, os.Getenv(env), usage+" (env "+env+")")
	}
	tls, _ := strconv.ParseBool(os.Getenv("KGEN_TLS"))
	fs.BoolVar(&f.conn.TLS, "tls", tls, "connect with TLS (env KGEN_TLS)")
	str(&f.conn.TLSCAFile, "tls-ca", "PEM `file` of the CA to trust")
	str(&f.conn.TLSCertFile, "tls-cert", "PEM `file` of the client certificate")
	str(&f.conn.TLSKeyFile, "tls-key", "PEM `file` of the client key")
	str(&f.conn.SASLMechanism, "sasl-mechanism", "SASL `mechanism`: plain, scram-sha-256 or scram-sha-512")
	str(&f.conn.SASLUser, "sasl-user", "SASL `user`")
	str(&f.conn.SASLPasswordFile, "sasl-password-file", "`file` holding the SASL password")
	f.conn.SASLPassword = os.Getenv("KGEN_SASL_PASSWORD")
}

// clientOpts are the seed brokers with the TLS and SASL settings.
func (f *devLoopFlags) clientOpts(more ...kgo.Opt) ([]kgo.Opt, error) {
	if f.conn.SASLPassword != "" && f.conn.SASLPasswordFile != "" {
		f.conn.SASLPassword = "" // the file given on the command line wins
	}
	if err := f.conn.Validate(); err != nil {
		return nil, usageError{err.Error()}
	}
	conn, err := f.conn.ClientOpts()
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return append(append([]kgo.Opt{kgo.SeedBrokers(splitBrokers(f.brokers)...)}, conn...), more...), nil
}

// topicCodecs loads the spec and returns topic's key and value codecs.
// To produce (register), the avro-confluent schemas are registered (or
// found) in the registry for their ids; to consume, the records' ids are
// not checked and no registry is needed: they are decoded with the spec's
// schema.
func (f *devLoopFlags) topicCodecs(ctx context.Context, topic string, register bool) (key, value *sideCodec, err error) {
	p, err := gen.Load(f.dir)
	if err != nil {
		return nil, nil, err
	}
	var tn *gen.TopicNode
	var names []string
	for _, t := range p.Graph.Topics {
		names = append(names, t.Name.Value)
		if t.Name.Value == topic {
			tn = t
		}
	}
	if tn == nil {
		return nil, nil, usageError{fmt.Sprintf("topic %q is not in %s (topics: %s)", topic, p.Spec.File, strings.Join(names, ", "))}
	}
	key = &sideCodec{format: tn.KeyFormat, t: tn.KV.Key.Type}
	value = &sideCodec{format: tn.ValueFormat, t: tn.KV.Value.Type}
	for _, side := range []struct {
		c    *sideCodec
		name string
	}{{key, "key"}, {value, "value"}} {
		if side.c.format != schema.FormatAvroConfluent || !register {
			continue
		}
		if f.registry == "" {
			return nil, nil, usageError{fmt.Sprintf("topic %q has an avro-confluent %s: give -schema-registry (or KGEN_SCHEMA_REGISTRY)", topic, side.name)}
		}
		cl, err := sr.NewClient(sr.URLs(f.registry))
		if err != nil {
			return nil, nil, err
		}
		ss, err := cl.CreateSchema(ctx, topic+"-"+side.name, sr.Schema{Schema: side.c.t.Schema, Type: sr.TypeAvro})
		if err != nil {
			return nil, nil, fmt.Errorf("schema of topic %q %s in %s: %w", topic, side.name, f.registry, err)
		}
		side.c.schemaID = uint32(ss.ID)
	}
	return key, value, nil
}

// usageError is a problem with the command line rather than with the files.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// devLoopStatus prints err and returns the exit status it calls for.
func devLoopStatus(cmd string, stderr io.Writer, err error) int {
	var ue usageError
	var errs schema.Errors
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "kgen %s: %v\n", cmd, err)
		return ExitUsage
	case errors.As(err, &errs):
		fmt.Fprintln(stderr, errs.Error())
		return ExitUser
	}
	fmt.Fprintf(stderr, "kgen %s: %v\n", cmd, err)
	return ExitUser
}

func devLoopFlagSet(cmd string, stderr io.Writer, about string) *flag.FlagSet {
	fs := flag.NewFlagSet("kgen "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: kgen %s\n\n%s\n\nFlags:\n", commandUsage[cmd], about)
		fs.PrintDefaults()
	}
	return fs
}

const produceAbout = `Write records to TOPIC, one JSON object per line of standard input:

	{"key": K, "value": V, "timestamp": "2026-01-02T15:04:05Z", "headers": {"h": "v"}, "partition": 0}

K and V are JSON in the topic's types of kgen.yaml, as encoding/json gives the
generated Go types (Avro records by field name; bytes and fixed as base64; times
RFC 3339; decimals as strings). Only "value" is needed; a null or missing key is
a null key, a null value a tombstone. Each line is checked against the types
before anything is sent; a line that fails stops the command with its line number.`

func cmdProduce(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f devLoopFlags
	fs := devLoopFlagSet("produce", stderr, produceAbout)
	f.register(fs)
	if err := parseInterspersed(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return ExitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	n, err := produce(ctx, f, fs.Arg(0), stdin)
	if err == nil {
		fmt.Fprintf(stderr, "kgen produce: %d record(s) to %s\n", n, fs.Arg(0))
	}
	return devLoopStatus("produce", stderr, err)
}

func produce(ctx context.Context, f devLoopFlags, topic string, stdin io.Reader) (int, error) {
	kc, vc, err := f.topicCodecs(ctx, topic, true)
	if err != nil {
		return 0, err
	}
	// Read and encode everything first: a bad line sends nothing.
	var recs []*kgo.Record
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		r, err := encodeLine([]byte(text), topic, kc, vc)
		if err != nil {
			return 0, fmt.Errorf("stdin:%d: %w", line, err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("stdin: %w", err)
	}
	if len(recs) == 0 {
		return 0, nil
	}
	opts, err := f.clientOpts(kgo.RecordPartitioner(partitioner()))
	if err != nil {
		return 0, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("metadata of %q on %s: %w", topic, f.brokers, err)
	}
	td, ok := topics[topic]
	if !ok || td.Err != nil {
		return 0, fmt.Errorf("topic %q on %s: %v (kgen topics creates the topics of kgen.yaml; with -dev-port, the app's development broker has them)", topic, f.brokers, cmpErr(td.Err, "does not exist"))
	}
	for i, r := range recs {
		if r.Partition >= int32(len(td.Partitions)) {
			return 0, fmt.Errorf("record %d: partition %d, but %q has %d", i+1, r.Partition, topic, len(td.Partitions))
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return 0, fmt.Errorf("produce to %q on %s: %w", topic, f.brokers, err)
	}
	return len(recs), nil
}

// partitioner is the app's own sinks': murmur2 of the key as Kafka's Java
// producer, round robin without a key; a record naming its partition keeps
// it.
func partitioner() kgo.Partitioner {
	return kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
		next := 0
		return func(r *kgo.Record, n int) int {
			switch {
			case r.Partition >= 0:
				return int(r.Partition)
			case r.Key != nil:
				return int(stream.KafkaPartition(r.Key, int32(n)))
			}
			next++
			return (next - 1) % n
		}
	})
}

func encodeLine(text []byte, topic string, kc, vc *sideCodec) (*kgo.Record, error) {
	var in recordLine
	dec := json.NewDecoder(strings.NewReader(string(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("want {\"key\": ..., \"value\": ...}: %v", err)
	}
	if in.Value == nil {
		return nil, errors.New(`no "value" (null for a tombstone)`)
	}
	r := &kgo.Record{Topic: topic, Partition: -1}
	var err error
	if r.Key, err = kc.encode(in.Key); err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	if r.Value, err = vc.encode(in.Value); err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	if in.Partition != nil {
		if *in.Partition < 0 {
			return nil, fmt.Errorf("partition %d", *in.Partition)
		}
		r.Partition = *in.Partition
	}
	if in.Timestamp != "" {
		if r.Timestamp, err = time.Parse(time.RFC3339Nano, in.Timestamp); err != nil {
			return nil, fmt.Errorf("timestamp: %w", err)
		}
	}
	for _, k := range sortedHeaderKeys(in.Headers) {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(in.Headers[k])})
	}
	return r, nil
}

func sortedHeaderKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortStrings(s []string) { sort.Strings(s) }

func cmpErr(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}
	return otherwise
}

func splitBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

const consumeAbout = `Print TOPIC's records as JSON lines, in the topic's types of kgen.yaml (the
form kgen produce reads, with partition, offset and timestamp):

	{"partition": 0, "offset": 7, "timestamp": "...", "key": K, "value": V}

From the start of every partition to the end offsets it had when the command
started, or on and on with -follow. avro-confluent values are decoded with the
spec's schema whatever registry id they carry; no registry is needed. A record that does not decode is printed
with "error" and its raw bytes in base64, and the command exits 1 at the end. A json topic's records are
decoded as strictly as the app does (a member that is no field, a field name in the wrong case, null for a
struct, invalid UTF-8): one the app would refuse is printed as it is, with "error" saying why.`

func cmdConsume(args []string, stdout, stderr io.Writer) int {
	var f devLoopFlags
	fs := devLoopFlagSet("consume", stderr, consumeAbout)
	f.register(fs)
	follow := fs.Bool("follow", false, "keep waiting for new records until interrupted")
	limit := fs.Int("n", 0, "stop after this many records; 0 for no limit")
	if err := parseInterspersed(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return ExitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	bad, err := consume(ctx, f, fs.Arg(0), *follow, *limit, stdout)
	if err == nil && bad > 0 {
		err = fmt.Errorf("%d records did not decode as the app decodes them", bad)
	}
	if errors.Is(err, context.Canceled) {
		return ExitOK
	}
	return devLoopStatus("consume", stderr, err)
}

func consume(ctx context.Context, f devLoopFlags, topic string, follow bool, limit int, stdout io.Writer) (bad int, err error) {
	kc, vc, err := f.topicCodecs(ctx, topic, false)
	if err != nil {
		return 0, err
	}
	var ends map[int32]int64
	if !follow {
		opts, err := f.clientOpts()
		if err != nil {
			return 0, err
		}
		adm, err := kgo.NewClient(opts...)
		if err != nil {
			return 0, err
		}
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		listed, err := kadm.NewClient(adm).ListEndOffsets(lctx, topic)
		cancel()
		adm.Close()
		if err == nil {
			err = listed.Error()
		}
		if err != nil {
			return 0, fmt.Errorf("end offsets of %q on %s: %w", topic, f.brokers, err)
		}
		ends = map[int32]int64{}
		listed.Each(func(o kadm.ListedOffset) {
			if o.Offset > 0 {
				ends[o.Partition] = o.Offset
			}
		})
		if len(ends) == 0 {
			return 0, nil
		}
	}
	opts, err := f.clientOpts(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	n := 0
	for follow || len(ends) > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return bad, err
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return bad, fmt.Errorf("fetch %q: %w", topic, ferr)
		}
		for _, r := range fetches.Records() {
			out, ok := decodeRecord(r, kc, vc)
			if !ok {
				bad++
			}
			if err := enc.Encode(out); err != nil {
				return bad, err
			}
			n++
			if end, ok := ends[r.Partition]; ok && r.Offset+1 >= end {
				delete(ends, r.Partition)
			}
			if limit > 0 && n >= limit {
				return bad, nil
			}
		}
	}
	return bad, nil
}

func decodeRecord(r *kgo.Record, kc, vc *sideCodec) (recordLine, bool) {
	part, off := r.Partition, r.Offset
	out := recordLine{Partition: &part, Offset: &off, Timestamp: r.Timestamp.UTC().Format(time.RFC3339Nano)}
	if len(r.Headers) > 0 {
		out.Headers = map[string]string{}
		for _, h := range r.Headers {
			out.Headers[h.Key] = string(h.Value)
		}
	}
	var problems []string
	side := func(name string, c *sideCodec, b []byte, dst *json.RawMessage, raw *string) {
		v, err := c.decode(b)
		var refused *refusedError
		if errors.As(err, &refused) {
			// Readable JSON: shown as it is, with why the app refuses it.
			problems = append(problems, name+": "+err.Error())
			*dst = v.(json.RawMessage)
			return
		}
		if err == nil {
			var data []byte
			if data, err = json.Marshal(v); err == nil {
				*dst = data
				return
			}
		}
		problems = append(problems, name+": "+err.Error())
		*raw = base64.StdEncoding.EncodeToString(b)
		*dst = json.RawMessage("null")
	}
	side("key", kc, r.Key, &out.Key, &out.RawKey)
	side("value", vc, r.Value, &out.Value, &out.RawValue)
	out.Error = strings.Join(problems, "; ")
	return out, len(problems) == 0
}
