package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// Broker is a real Apache Kafka broker the driver starts and stops itself
// through scripts/kafka.sh, on its own ports and cache directory, so that
// stopping it for an outage disturbs nobody else.
type Broker struct {
	Script         string // path of scripts/kafka.sh
	CacheDir       string // KGEN_CACHE_DIR: the broker's jars, data and logs
	Port           int    // KAFKA_PORT
	ControllerPort int    // KAFKA_CONTROLLER_PORT
	Log            io.Writer
}

// Addr is the broker's address.
func (b *Broker) Addr() string { return "127.0.0.1:" + strconv.Itoa(b.Port) }

// Start starts the broker, or finds it running, and returns when it answers.
func (b *Broker) Start(ctx context.Context) error { return b.run(ctx, "start") }

// Stop stops the broker; its data stays for the next Start.
func (b *Broker) Stop(ctx context.Context) error { return b.run(ctx, "stop") }

// Logs returns the last lines of the broker's log.
func (b *Broker) Logs(ctx context.Context, lines int) string {
	cmd := b.command(ctx, "logs")
	cmd.Env = append(cmd.Env, "KAFKA_LOG_LINES="+strconv.Itoa(lines))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(broker logs: %v)", err)
	}
	return string(out)
}

func (b *Broker) command(ctx context.Context, verb string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, b.Script, verb)
	cmd.Env = append(os.Environ(),
		"KGEN_CACHE_DIR="+b.CacheDir,
		"KAFKA_PORT="+strconv.Itoa(b.Port),
		"KAFKA_CONTROLLER_PORT="+strconv.Itoa(b.ControllerPort),
	)
	return cmd
}

func (b *Broker) run(ctx context.Context, verb string) error {
	cmd := b.command(ctx, verb)
	if b.Log != nil {
		cmd.Stdout, cmd.Stderr = b.Log, b.Log
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s broker on port %d: %s %s: %w", verb, b.Port, b.Script, verb, err)
	}
	return nil
}

// FindScript looks for scripts/kafka.sh in dir and its parents, so the
// driver finds it from the repository root and from the package directory
// go test runs in.
func FindScript(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("find scripts/kafka.sh: %w", err)
	}
	for {
		p := filepath.Join(dir, "scripts", "kafka.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find scripts/kafka.sh: not in the working directory or any parent")
		}
		dir = parent
	}
}
