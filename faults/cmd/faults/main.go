// Command faults is kgen's fault-injection driver: it produces a known input,
// runs several instances of faultapp as child processes, kills them with
// SIGKILL at random moments and restarts them with and without their state,
// optionally stops the broker for a while, then reads the output with
// read_committed and checks that the processing guarantee held. Its last
// line reads "faults: K kills, D duplicates, L losses, guarantee G"; it exits
// 0 when the guarantee held, 1 when it did not, 2 when the run failed.
//
// Against a running broker:
//
//	go run ./faults/cmd/faults -brokers 127.0.0.1:9092 -guarantee at-least-once
//
// With a private broker it starts on its own port, which a broker outage
// needs:
//
//	go run ./faults/cmd/faults -own-broker -outage -guarantee exactly-once
//
// With -scenario reset it runs the reset sequence instead (faults.RunReset):
// two instances count 10,000 records, stop, the first resets the
// application, both count the same input again, and both rounds must be
// exact. Its last line reads "faults: reset from one instance, D
// duplicates, L losses after the reset, guarantee G"; the exit codes are
// the same.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kgen-dev/kgen/faults"
)

func main() {
	os.Exit(run())
}

func run() int {
	var (
		brokers     = flag.String("brokers", "", "seed brokers of a running cluster (default: $KGEN_TEST_BROKERS, else 127.0.0.1:9092)")
		ownBroker   = flag.Bool("own-broker", false, "start a private broker with scripts/kafka.sh on -broker-port and stop it at the end")
		brokerPort  = flag.Int("broker-port", 19092, "port of the private broker (its controller takes the next one)")
		brokerDir   = flag.String("broker-dir", "", "KGEN_CACHE_DIR of the private broker (default: .cache/faults in the repository)")
		outage      = flag.Bool("outage", false, "stop the private broker in the middle of the run (needs -own-broker)")
		outageMin   = flag.Duration("outage-min", 10*time.Second, "shortest outage")
		outageMax   = flag.Duration("outage-max", 20*time.Second, "longest outage")
		guarantee   = flag.String("guarantee", "at-least-once", "processing guarantee: at-least-once or exactly-once")
		records     = flag.Int("records", 200_000, "input records")
		keys        = flag.Int("keys", 1000, "distinct keys")
		skew        = flag.Float64("skew", 1.1, "Zipf exponent of the key distribution (> 1)")
		partitions  = flag.Int("partitions", 8, "partitions of the input and output topics")
		instances   = flag.Int("instances", 3, "app instances")
		kills       = flag.Int("kills", 10, "instances killed with SIGKILL over the run")
		seed        = flag.Uint64("seed", 0, "random seed of the input and the faults (0: pick one; it is printed)")
		produceTime = flag.Duration("produce-time", time.Minute, "how long producing the input takes; the kills happen meanwhile (default 2m with -outage)")
		restartMax  = flag.Duration("restart-delay", 3*time.Second, "longest pause between a kill and the restart")
		commit      = flag.Duration("commit-interval", -1, "instances' commit interval (0: the runtime's default; default: 1s under at-least-once, the runtime's under exactly-once)")
		session     = flag.Duration("session-timeout", 10*time.Second, "instances' group session timeout: how soon a killed member is noticed")
		parallelism = flag.Int("parallelism", 1, "processing units per instance")
		settle      = flag.Duration("settle", 5*time.Minute, "how long the instances may take to finish the input after the last fault")
		appLog      = flag.String("app-log-level", "info", "instances' log level: debug, info, warn or error")
		app         = flag.String("app", "", "a built faultapp program (default: go build it into the work directory)")
		workDir     = flag.String("work-dir", "", "directory for state and logs (default: a new temporary directory)")
		keep        = flag.Bool("keep", false, "keep the run's topics, group and work directory even when the guarantee held")
		scenario    = flag.String("scenario", "kills", "kills: SIGKILLs and an optional outage while producing; reset: the reset-from-one-instance sequence (default 10,000 records, 2 instances, 1 standby; -kills and -outage do not apply)")
		standbys    = flag.Int("standbys", 1, "with -scenario reset, each instance's standby replicas")
	)
	flag.Parse()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 2
	}
	g, err := faults.ParseGuarantee(*guarantee)
	if err != nil {
		return fail(err)
	}
	explicit := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	switch *scenario {
	case "kills":
	case "reset":
		if *outage {
			return fail(errors.New("-outage does not apply to -scenario reset"))
		}
		if !explicit["records"] {
			*records = 10_000
		}
		if !explicit["instances"] {
			*instances = 2
		}
	default:
		return fail(fmt.Errorf("-scenario %q: want kills or reset", *scenario))
	}
	if *outage && !explicit["produce-time"] {
		// Room for the kills away from the outage.
		*produceTime = 2 * time.Minute
	}
	if *commit < 0 {
		*commit = faults.DefaultCommitInterval(g)
	}
	if *seed == 0 {
		*seed = rand.Uint64N(1<<31) + 1
	}
	fmt.Printf("faults: seed %d (rerun with -seed %d)\n", *seed, *seed)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir := *workDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "kgen-faults-"); err != nil {
			return fail(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	binary := *app
	if binary == "" {
		fmt.Println("faults: building faultapp")
		if binary, err = faults.Build(ctx, dir); err != nil {
			return fail(err)
		}
	}

	cfg := faults.Config{
		Guarantee:      g,
		Workload:       faults.Workload{Records: *records, Keys: *keys, Skew: *skew, Seed: *seed},
		Partitions:     int32(*partitions),
		Instances:      *instances,
		Kills:          *kills,
		Outage:         *outage,
		OutageMin:      *outageMin,
		OutageMax:      *outageMax,
		ProduceTime:    *produceTime,
		RestartDelay:   *restartMax,
		CommitInterval: *commit,
		SessionTimeout: *session,
		Parallelism:    *parallelism,
		AppLogLevel:    *appLog,
		AppBinary:      binary,
		WorkDir:        dir,
		Settle:         *settle,
		Keep:           *keep,
		Log:            os.Stdout,
	}
	switch {
	case *ownBroker:
		script, err := faults.FindScript(".")
		if err != nil {
			return fail(err)
		}
		cache := *brokerDir
		if cache == "" {
			cache = filepath.Join(filepath.Dir(filepath.Dir(script)), ".cache", "faults")
		}
		b := &faults.Broker{Script: script, CacheDir: cache, Port: *brokerPort, ControllerPort: *brokerPort + 1, Log: os.Stdout}
		if err := b.Start(ctx); err != nil {
			return fail(err)
		}
		cfg.Broker = b
		cfg.Brokers = []string{b.Addr()}
	case *outage:
		return fail(errors.New("-outage needs -own-broker: the driver stops only a broker it started"))
	default:
		seeds := *brokers
		if seeds == "" {
			seeds = os.Getenv("KGEN_TEST_BROKERS")
		}
		if seeds == "" {
			seeds = "127.0.0.1:9092"
		}
		cfg.Brokers = strings.Split(seeds, ",")
	}

	if *scenario == "reset" {
		return runReset(ctx, cfg, *standbys, dir, *workDir == "" && !*keep)
	}
	sum, err := faults.Run(ctx, cfg)
	if cfg.Broker != nil {
		// Before the summary, so that its last line stays last.
		if err := cfg.Broker.Stop(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "faults:", err)
		}
	}
	if sum != nil {
		sum.Write(os.Stdout)
	}
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "faults:", err)
		fmt.Fprintln(os.Stderr, "faults: instance logs in", dir)
		return 2
	case !sum.Held():
		fmt.Fprintln(os.Stderr, "faults: instance logs in", dir)
		return 1
	}
	if *workDir == "" && !*keep {
		os.RemoveAll(dir)
	}
	return 0
}

// runReset runs the reset sequence with the settings of cfg and returns the
// exit code.
func runReset(ctx context.Context, cfg faults.Config, standbys int, dir string, removeDir bool) int {
	sum, err := faults.RunReset(ctx, faults.ResetConfig{
		Brokers:        cfg.Brokers,
		Guarantee:      cfg.Guarantee,
		Workload:       cfg.Workload,
		Partitions:     cfg.Partitions,
		Instances:      cfg.Instances,
		Standbys:       standbys,
		CommitInterval: cfg.CommitInterval,
		SessionTimeout: cfg.SessionTimeout,
		AppLogLevel:    cfg.AppLogLevel,
		AppBinary:      cfg.AppBinary,
		WorkDir:        dir,
		Settle:         cfg.Settle,
		Keep:           cfg.Keep,
		Log:            os.Stdout,
	})
	if cfg.Broker != nil {
		if err := cfg.Broker.Stop(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "faults:", err)
		}
	}
	if sum != nil {
		sum.Write(os.Stdout)
	}
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "faults:", err)
		fmt.Fprintln(os.Stderr, "faults: instance logs in", dir)
		return 2
	case !sum.Held():
		fmt.Fprintln(os.Stderr, "faults: instance logs in", dir)
		return 1
	}
	if removeDir {
		os.RemoveAll(dir)
	}
	return 0
}
