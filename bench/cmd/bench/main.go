// Command bench is kgen's benchmark harness: it loads one source topic on a
// real Kafka broker, runs every workload on every contender (a raw franz-go
// loop, kgen's runtime, Kafka Streams), each as its own process in its own
// consumer group, checks from the broker that each produced all its output,
// and reports throughput, CPU, peak memory and time to first output with the
// ratios kgen/raw and kgen/kstreams from the same run. See bench/README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
)

type options struct {
	records           int64
	restoreEntries    int64
	valueSize         int
	full              bool
	runs              int
	brokers           string
	workloads         []string
	contenders        []string
	guarantees        []string
	parallelism       int
	partitions        int
	keys              int
	zipfS             float64
	commitInterval    time.Duration
	eosCommitInterval time.Duration
	store             string
	javaOpts          string
	runTimeout        time.Duration
	verifyCounts      bool
	out               string
	keep              bool
	replot            string
}

func main() {
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}
	if o.replot != "" {
		if err := replot(o.replot); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func parseFlags() (*options, error) {
	o := &options{}
	var workloads, contenders, guarantee string
	defRecords := int64(1_000_000)
	if v := os.Getenv("BENCH_RECORDS"); v != "" {
		n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("BENCH_RECORDS=%q: want a positive number", v)
		}
		defRecords = n
	}
	flag.Int64Var(&o.records, "records", defRecords, "records in the source topic (10,000,000 with -full; env BENCH_RECORDS sets the default)")
	flag.Int64Var(&o.restoreEntries, "restore-entries", 1_000_000, "changelog entries the restore workloads restore (distinct keys; window store: key × window); default 1,000,000, or -records if fewer")
	flag.IntVar(&o.valueSize, "value-size", 100, "value bytes per record (1024 with -full)")
	flag.BoolVar(&o.full, "full", false, "the long run: 10,000,000 records of 1,024 bytes unless -records/-value-size/BENCH_RECORDS say otherwise")
	flag.IntVar(&o.runs, "runs", 3, "runs of each workload and contender")
	flag.StringVar(&o.brokers, "brokers", "127.0.0.1:9092", "seed brokers, comma separated")
	flag.StringVar(&workloads, "workloads", strings.Join(protocol.Workloads, ","), "workloads to run")
	flag.StringVar(&contenders, "contenders", strings.Join(allContenders, ","), "contenders to run")
	flag.StringVar(&guarantee, "guarantee", protocol.AtLeastOnce, "at-least-once, exactly-once, or both")
	flag.IntVar(&o.parallelism, "parallelism", runtime.NumCPU(), "processing threads of every contender (kgen units, Kafka Streams stream threads, raw loop members)")
	flag.IntVar(&o.partitions, "partitions", 8, "partitions of the source and output topics")
	flag.IntVar(&o.keys, "keys", 10_000, "distinct keys (Zipf-distributed)")
	flag.Float64Var(&o.zipfS, "zipf-s", 1.1, "Zipf exponent s (> 1) of the key distribution")
	flag.DurationVar(&o.commitInterval, "commit-interval", 30*time.Second, "commit interval of every contender, at-least-once (Kafka Streams' and kgen's default)")
	flag.DurationVar(&o.eosCommitInterval, "eos-commit-interval", 100*time.Millisecond, "commit (transaction) interval of every contender, exactly-once (Kafka Streams' and kgen's default)")
	flag.StringVar(&o.store, "store", "persistent", "kv-put and count store of kgen and Kafka Streams: persistent (Pebble / RocksDB) or memory")
	flag.StringVar(&o.javaOpts, "java-opts", os.Getenv("BENCH_JAVA_OPTS"), "JVM flags for the Kafka Streams contender (env BENCH_JAVA_OPTS; default: the JVM's defaults)")
	flag.DurationVar(&o.runTimeout, "run-timeout", 10*time.Minute, "give up on a contender run after this long (1h with -full)")
	flag.BoolVar(&o.verifyCounts, "verify-counts", true, "read the count output back and check every key's final count")
	flag.StringVar(&o.out, "out", "", "results directory (default bench/results under the repository root)")
	flag.BoolVar(&o.keep, "keep", false, "keep the source topic at the end (for debugging)")
	flag.StringVar(&o.replot, "replot", "", "only redraw: read a results JSON file, print its table and rewrite its .md and .svg next to it")
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.full {
		if !set["records"] && os.Getenv("BENCH_RECORDS") == "" {
			o.records = 10_000_000
		}
		if !set["value-size"] {
			o.valueSize = 1024
		}
		if !set["run-timeout"] {
			o.runTimeout = time.Hour
		}
	}
	if !set["restore-entries"] {
		// A smoke-sized run restores a smoke-sized store too.
		o.restoreEntries = min(o.restoreEntries, o.records)
	}
	var errs []error
	o.workloads = splitList(workloads)
	for _, w := range o.workloads {
		if !slices.Contains(protocol.Workloads, w) {
			errs = append(errs, fmt.Errorf("-workloads: unknown %q (have %v)", w, protocol.Workloads))
		}
	}
	o.contenders = splitList(contenders)
	for _, c := range o.contenders {
		if !slices.Contains(allContenders, c) {
			errs = append(errs, fmt.Errorf("-contenders: unknown %q (have %v)", c, allContenders))
		}
	}
	switch guarantee {
	case protocol.AtLeastOnce, protocol.ExactlyOnce:
		o.guarantees = []string{guarantee}
	case "both":
		o.guarantees = []string{protocol.AtLeastOnce, protocol.ExactlyOnce}
	default:
		errs = append(errs, fmt.Errorf("-guarantee %q: want at-least-once, exactly-once or both", guarantee))
	}
	if o.store != "persistent" && o.store != "memory" {
		errs = append(errs, fmt.Errorf("-store %q: want persistent or memory", o.store))
	}
	if o.records <= 0 || o.restoreEntries <= 0 || o.valueSize < 0 || o.runs <= 0 || o.parallelism <= 0 || o.partitions <= 0 || o.keys <= 1 {
		errs = append(errs, errors.New("-records, -restore-entries, -runs, -parallelism, -partitions must be positive, -keys above 1, -value-size not negative"))
	}
	if o.zipfS <= 1 {
		errs = append(errs, errors.New("-zipf-s must be above 1"))
	}
	if len(flag.Args()) > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", flag.Args()))
	}
	return o, errors.Join(errs...)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// repoRoot finds the module root from the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/kgen-dev/kgen\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run bench from inside the kgen repository (go.mod of github.com/kgen-dev/kgen not found above the working directory)")
		}
		dir = parent
	}
}

func run(ctx context.Context, o *options) error {
	started := time.Now().UTC()
	root, err := repoRoot()
	if err != nil {
		return err
	}
	if o.out == "" {
		o.out = filepath.Join(root, "bench", "results")
	}
	runID := fmt.Sprintf("kgenbench-%s-%04x", strings.ToLower(started.Format("20060102t150405")), rand.Uint32N(1<<16))
	logDir := filepath.Join(o.out, runID)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "kgenbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	progs := &programs{root: root, bin: filepath.Join(tmp, "bin"), javaOpts: strings.Fields(o.javaOpts)}
	if err := progs.buildGo(ctx, os.Stderr); err != nil {
		return err
	}
	if slices.Contains(o.contenders, kstreams) {
		if err := progs.buildJava(ctx, os.Stderr); err != nil {
			return err
		}
	}

	c, err := dial(strings.Split(o.brokers, ","))
	if err != nil {
		return err
	}
	defer c.close()

	rep := &report{
		Version:   1,
		RunID:     runID,
		StartedAt: started.Format(time.RFC3339),
		Mode:      map[bool]string{false: "quick", true: "full"}[o.full],
		Machine: machine{
			GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(),
			GoVersion: runtime.Version(), Java: javaVersion(),
		},
		Settings: settings{
			Records: o.records, RestoreEntries: o.restoreEntries, ValueSize: o.valueSize, Runs: o.runs, Parallelism: o.parallelism,
			Partitions: o.partitions, Keys: o.keys, ZipfS: o.zipfS, CommitIntervalMs: o.commitInterval.Milliseconds(), EOSCommitIntervalMs: o.eosCommitInterval.Milliseconds(),
			Store: o.store, JavaOpts: o.javaOpts, Workloads: o.workloads, Contenders: o.contenders,
			Guarantees: o.guarantees, Compression: "none (every producer)",
		},
	}

	// Which guarantees can be measured at all: kgen's runtime is asked.
	var guarantees []string
	for _, g := range o.guarantees {
		unsupported := map[string]string{}
		for _, ct := range o.contenders {
			if why := probe(ctx, progs, ct, g, o, filepath.Join(logDir, fmt.Sprintf("probe-%s-%s.log", ct, g))); why != "" {
				unsupported[ct] = why
			}
		}
		if why, ok := unsupported[kgen]; ok {
			fmt.Fprintf(os.Stderr, "bench: %s pass skipped: kgen does not support it (%s)\n", g, why)
			rep.Skipped = append(rep.Skipped, skipped{Guarantee: g, Reason: "kgen: " + why})
			for _, w := range o.workloads {
				for _, ct := range o.contenders {
					rep.Entries = append(rep.Entries, entry{Workload: w, Contender: ct, Guarantee: g, Status: "n/a", Note: "kgen: " + why})
				}
			}
			continue
		}
		rep.unsupported = mergeUnsupported(rep.unsupported, g, unsupported)
		guarantees = append(guarantees, g)
	}

	var runs []runRecord
	if len(guarantees) > 0 {
		src := &source{Topic: runID + "-source", Records: o.records, Partitions: int32(o.partitions), Keys: o.keys, ZipfS: o.zipfS, ValueSize: o.valueSize}
		fmt.Fprintf(os.Stderr, "bench: loading %d records (%d-byte values, %d keys, Zipf s=%g) into %s (%d partitions)\n",
			src.Records, src.ValueSize, src.Keys, src.ZipfS, src.Topic, src.Partitions)
		if !o.keep {
			defer func() {
				cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := c.cleanup(cctx, src.Topic); err != nil {
					fmt.Fprintf(os.Stderr, "bench: delete the source topic: %v\n", err)
				}
			}()
		}
		lctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
		err := c.load(lctx, src, uint64(started.UnixNano()))
		cancel()
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: loaded %.1f MB in %.1fs\n", float64(src.Bytes)/1e6, src.LoadSec)
		rep.Source = src

		b := &bencher{o: o, c: c, progs: progs, src: src, runID: runID, logDir: logDir, tmp: tmp, unsupported: rep.unsupported}
		for i := 1; i <= o.runs; i++ {
			for _, g := range guarantees {
				for _, w := range o.workloads {
					// Rotate the order so that no contender always goes first.
					for k := range o.contenders {
						ct := o.contenders[(k+i-1)%len(o.contenders)]
						if ctx.Err() != nil {
							return ctx.Err()
						}
						r := b.one(ctx, g, w, ct, i)
						runs = append(runs, r)
						fmt.Fprintf(os.Stderr, "bench: %s\n", r.line())
					}
				}
			}
		}
	}
	rep.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	rep.summarize(runs, o, guarantees)
	table := rep.markdown()
	fmt.Print(table)
	return rep.write(o.out, runID, table)
}

// probe asks a contender whether it supports guarantee g; it returns why
// not, or "".
func probe(ctx context.Context, p *programs, contender, g string, o *options, logFile string) string {
	name, args := p.command(contender, []string{"-probe", "-guarantee", g, "-brokers", o.brokers})
	ex, err := execute(ctx, name, args, logFile, 2*time.Minute)
	if err != nil {
		return "probe failed: " + err.Error()
	}
	if ex.Result.Unsupported {
		return ex.Result.Error
	}
	return ""
}

func mergeUnsupported(m map[string]string, g string, add map[string]string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	for ct, why := range add {
		m[g+"/"+ct] = why
	}
	return m
}

func javaVersion() string {
	out, err := exec.Command("java", "-version").CombinedOutput()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

// replot redraws the table and plot of a results file.
func replot(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	table := rep.markdown()
	fmt.Print(table)
	base := strings.TrimSuffix(path, ".json")
	if err := os.WriteFile(base+".md", []byte(table), 0o644); err != nil {
		return err
	}
	return os.WriteFile(base+".svg", []byte(rep.svg()), 0o644)
}
