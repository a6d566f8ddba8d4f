// Command faultapp is the application the fault-injection driver
// (faults/cmd/faults) runs as separate processes and kills: it reads input
// records key -> (sequence, value), keeps per-key running aggregates in a
// changelogged Pebble store and writes one output record per input. It runs
// until SIGTERM or SIGINT, then closes cleanly. With -reset it resets the
// application from this instance instead (stream.App.Reset) and exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kgen-dev/kgen/faults"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "faultapp:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		brokers   = flag.String("brokers", "127.0.0.1:9092", "comma separated seed brokers")
		appID     = flag.String("app-id", "", "application id (consumer group, prefix of the changelog topic); required")
		input     = flag.String("input", "", "input topic; required")
		output    = flag.String("output", "", "output topic; required")
		stateDir  = flag.String("state-dir", "", "state directory; required")
		instance  = flag.String("instance-id", "", "instance id (default: host name and process id)")
		guarantee = flag.String("guarantee", "at-least-once", "processing guarantee: at-least-once or exactly-once")
		commit    = flag.Duration("commit-interval", 0, "commit interval (0: the runtime's default for the guarantee)")
		parallel  = flag.Int("parallelism", 1, "processing units in this instance")
		session   = flag.Duration("session-timeout", 0, "consumer group session timeout (0: the client's default)")
		standbys  = flag.Int("standbys", 0, "standby replicas of every task's stores on other instances")
		level     = flag.String("log-level", "info", "log level: debug, info, warn or error")
		clientLog = flag.String("client-log-level", "none", "franz-go's log level: none, error, warn, info or debug")
		stdinEOF  = flag.Bool("exit-on-stdin-eof", false, "stop cleanly when standard input closes (the driver holds it open)")
		reset     = flag.Bool("reset", false, "reset the application from this instance instead of running it: delete its internal topics, move its input offsets to the earliest and wipe this instance's state directory")
	)
	flag.Parse()
	var missing []string
	for name, v := range map[string]string{"-app-id": *appID, "-input": *input, "-output": *output, "-state-dir": *stateDir} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing flags: %s", strings.Join(missing, ", "))
	}
	g, err := faults.ParseGuarantee(*guarantee)
	if err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("flag -log-level: %w", err)
	}
	clientLevel, err := parseClientLevel(*clientLog)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if *stdinEOF {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			io.Copy(io.Discard, os.Stdin)
			logger.Info("standard input closed; stopping")
			cancel()
		}()
	}
	began := time.Now()
	run := faults.RunApp
	if *reset {
		run = faults.ResetApp
	}
	err = run(ctx, faults.AppConfig{
		Brokers:        strings.Split(*brokers, ","),
		AppID:          *appID,
		Input:          *input,
		Output:         *output,
		StateDir:       *stateDir,
		InstanceID:     *instance,
		Guarantee:      g,
		CommitInterval: *commit,
		Parallelism:    *parallel,
		SessionTimeout: *session,
		Standbys:       *standbys,
		Logger:         logger,
		ClientLog:      os.Stderr,
		ClientLogLevel: clientLevel,
	})
	logger.Info("faultapp stopped", "instance", *instance, "reset", *reset, "ran", time.Since(began).Round(time.Millisecond), "error", err)
	return err
}

func parseClientLevel(s string) (kgo.LogLevel, error) {
	switch s {
	case "none":
		return kgo.LogLevelNone, nil
	case "error":
		return kgo.LogLevelError, nil
	case "warn":
		return kgo.LogLevelWarn, nil
	case "info":
		return kgo.LogLevelInfo, nil
	case "debug":
		return kgo.LogLevelDebug, nil
	}
	return 0, fmt.Errorf("flag -client-log-level: unknown level %q", s)
}
