package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
)

// Contender names.
const (
	raw      = "raw"
	kgen     = "kgen"
	kstreams = "kstreams"
	// processorForm is what an operator workload's kgen figures are
	// compared with: kgen on the workload's processor form.
	processorForm = "kgen, processor form"
)

var allContenders = []string{raw, kgen, kstreams}

// programs knows how to start each contender.
type programs struct {
	root     string // repository root
	bin      string // where the Go contenders are built
	javaCP   string
	javaOpts []string
}

// buildGo builds the Go contenders into p.bin.
func (p *programs) buildGo(ctx context.Context, log io.Writer) error {
	for _, name := range []string{"rawloop", "kgenbench"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(p.bin, name), "./bench/cmd/"+name)
		cmd.Dir = p.root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		fmt.Fprintf(log, "bench: go build ./bench/cmd/%s\n", name)
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build ./bench/cmd/%s: %w\n%s", name, err, out.String())
		}
	}
	return nil
}

// buildJava builds the Kafka Streams contender with Maven unless its jar is
// newer than its sources, and reads the runtime classpath Maven wrote.
func (p *programs) buildJava(ctx context.Context, log io.Writer) error {
	dir := filepath.Join(p.root, "bench", "kstreams")
	jar := filepath.Join(dir, "target", "kstreams-bench.jar")
	cpFile := filepath.Join(dir, "target", "classpath.txt")
	stale, err := newerThan(jar, filepath.Join(dir, "pom.xml"), filepath.Join(dir, "src"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(cpFile); err != nil {
		stale = true
	}
	if stale {
		if _, err := exec.LookPath("mvn"); err != nil {
			return errors.New("mvn not found: the Kafka Streams contender is built with Maven (Debian/Ubuntu: apt-get install maven), or leave it out with -contenders raw,kgen")
		}
		fmt.Fprintf(log, "bench: mvn -q package (bench/kstreams)\n")
		cmd := exec.CommandContext(ctx, "mvn", "-B", "-q", "package")
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("mvn package in bench/kstreams: %w\n%s", err, out.String())
		}
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		return fmt.Errorf("read the classpath Maven wrote: %w", err)
	}
	p.javaCP = jar + string(os.PathListSeparator) + strings.TrimSpace(string(cp))
	if _, err := exec.LookPath("java"); err != nil {
		return errors.New("java not found: the Kafka Streams contender needs Java 17 or newer")
	}
	return nil
}

// newerThan reports whether any file under paths is newer than target, or
// target is missing.
func newerThan(target string, paths ...string) (bool, error) {
	st, err := os.Stat(target)
	if err != nil {
		return true, nil
	}
	stale := false
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if info, err := d.Info(); err == nil && info.ModTime().After(st.ModTime()) {
				stale = true
			}
			return nil
		})
		if err != nil {
			return false, err
		}
	}
	return stale, nil
}

// command returns the command line of one contender run.
func (p *programs) command(contender string, args []string) (string, []string) {
	switch contender {
	case raw:
		return filepath.Join(p.bin, "rawloop"), args
	case kgen:
		return filepath.Join(p.bin, "kgenbench"), args
	default:
		java := append([]string{}, p.javaOpts...)
		java = append(java,
			"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
			"-Dorg.slf4j.simpleLogger.logFile=System.err",
			"-cp", p.javaCP, "dev.kgen.bench.KStreamsBench")
		return "java", append(java, args...)
	}
}

// execution is what one contender process did.
type execution struct {
	Result   protocol.Result
	StartNs  int64
	WallSec  float64
	UserSec  float64
	SysSec   float64
	MaxRSS   int64 // bytes
	ExitCode int
}

// execute runs one contender process to its end (or kills its process
// group at the deadline) and reads its resource usage from the kernel.
func execute(ctx context.Context, name string, args []string, logFile string, deadline time.Duration) (execution, error) {
	var ex execution
	log, err := os.Create(logFile)
	if err != nil {
		return ex, err
	}
	defer log.Close()
	fmt.Fprintf(log, "$ %s %s\n", name, strings.Join(args, " "))
	var stdout bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout = io.MultiWriter(&stdout, log)
	cmd.Stderr = log
	// Its own process group, so that a timeout takes its children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	ex.StartNs = start.UnixNano()
	if err := cmd.Start(); err != nil {
		return ex, fmt.Errorf("start %s: %w", name, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	select {
	case werr = <-waited:
	case <-timer.C:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		werr = fmt.Errorf("killed after %v", deadline)
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		werr = ctx.Err()
	}
	ex.WallSec = time.Since(start).Seconds()
	if ps := cmd.ProcessState; ps != nil {
		ex.ExitCode = ps.ExitCode()
		ex.UserSec = ps.UserTime().Seconds()
		ex.SysSec = ps.SystemTime().Seconds()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			ex.MaxRSS = maxRSSBytes(ru)
		}
	}
	res, perr := protocol.Parse(stdout.Bytes())
	ex.Result = res
	if res.PeakRSSBytes > 0 {
		// ru_maxrss above is at least the harness's own peak (see
		// protocol.Result.PeakRSSBytes); the process's own figure is exact.
		ex.MaxRSS = res.PeakRSSBytes
	}
	switch {
	case werr != nil && perr == nil && res.Error != "":
		return ex, fmt.Errorf("%s: %s", filepath.Base(name), res.Error)
	case werr != nil:
		return ex, fmt.Errorf("%s: %w (log: %s)", filepath.Base(name), werr, logFile)
	case perr != nil:
		return ex, fmt.Errorf("%s: %w (log: %s)", filepath.Base(name), perr, logFile)
	}
	return ex, nil
}

// maxRSSBytes converts ru_maxrss: kilobytes on Linux, bytes on macOS.
func maxRSSBytes(ru *syscall.Rusage) int64 {
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
