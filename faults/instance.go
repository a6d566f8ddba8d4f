package faults

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// instance is one app process slot: the driver starts, kills and restarts
// the process in it, always with the same instance id and state directory.
type instance struct {
	id       int
	name     string
	stateDir string
	logPath  string
	args     []string // flags common to every start

	cmd     *exec.Cmd
	stdin   io.WriteCloser
	exited  chan struct{} // closed when the current process has exited
	waitErr error         // the process's exit, once exited is closed
	killed  bool          // the driver killed or stopped the current process
	starts  int
}

// running reports whether the instance's process runs.
func (in *instance) running() bool {
	if in.cmd == nil {
		return false
	}
	select {
	case <-in.exited:
		return false
	default:
		return true
	}
}

// start starts a process in the slot; wipe removes its state directory first.
func (in *instance) start(binary string, wipe bool) error {
	if wipe {
		if err := os.RemoveAll(in.stateDir); err != nil {
			return fmt.Errorf("instance %s: wipe state directory: %w", in.name, err)
		}
	}
	if err := os.MkdirAll(in.stateDir, 0o755); err != nil {
		return fmt.Errorf("instance %s: create state directory: %w", in.name, err)
	}
	logf, err := os.OpenFile(in.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("instance %s: open log: %w", in.name, err)
	}
	in.starts++
	fmt.Fprintf(logf, "==== faults: start %d of %s at %s (state directory %s)\n",
		in.starts, in.name, time.Now().UTC().Format(time.RFC3339Nano), map[bool]string{true: "wiped", false: "kept"}[wipe])
	cmd := exec.Command(binary, append(in.args, "-exit-on-stdin-eof")...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The child stops when this pipe closes: when the driver exits, even
	// by a crash, no instance is left running.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return fmt.Errorf("instance %s: stdin pipe: %w", in.name, err)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("instance %s: start %s: %w", in.name, binary, err)
	}
	in.cmd, in.stdin, in.killed = cmd, stdin, false
	exited := make(chan struct{})
	in.exited = exited
	go func() {
		err := cmd.Wait()
		logf.Close()
		in.waitErr = err
		close(exited)
	}()
	return nil
}

// kill sends SIGKILL and waits until the process is gone.
func (in *instance) kill() error {
	if !in.running() {
		return fmt.Errorf("kill instance %s: not running", in.name)
	}
	in.killed = true
	if err := in.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill instance %s: %w", in.name, err)
	}
	<-in.exited
	in.stdin.Close()
	return nil
}

// stop sends SIGTERM and waits up to timeout for a clean exit, then kills.
// It returns an error when the process did not exit cleanly in time.
func (in *instance) stop(timeout time.Duration) error {
	if !in.running() {
		return nil
	}
	in.killed = true
	if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop instance %s: %w", in.name, err)
	}
	select {
	case <-in.exited:
		in.stdin.Close()
		if in.waitErr != nil {
			return fmt.Errorf("stop instance %s: exited with %v", in.name, in.waitErr)
		}
		return nil
	case <-time.After(timeout):
		// SIGQUIT makes a Go program print every goroutine's stack and
		// exit: the log then shows where it hung.
		in.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-in.exited:
		case <-time.After(5 * time.Second):
			in.cmd.Process.Signal(syscall.SIGKILL)
			<-in.exited
		}
		in.stdin.Close()
		return fmt.Errorf("stop instance %s: still running %v after SIGTERM; its goroutines are dumped at the end of %s",
			in.name, timeout, in.logPath)
	}
}

// crashed reports whether the process exited without the driver asking.
func (in *instance) crashed() bool {
	return in.cmd != nil && !in.running() && !in.killed
}

// lastError returns the error faultapp printed last ("faultapp: ..."), or
// the last line of the log when there is none.
func (in *instance) lastError() string {
	b, err := os.ReadFile(in.logPath)
	if err != nil {
		return fmt.Sprintf("(read log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if bytes.HasPrefix(lines[i], []byte("faultapp: ")) {
			return string(lines[i])
		}
	}
	return string(lines[len(lines)-1])
}

func newInstance(id int, workDir string, args []string) *instance {
	name := "i" + strconv.Itoa(id)
	return &instance{
		id:       id,
		name:     name,
		stateDir: filepath.Join(workDir, "state", name),
		logPath:  filepath.Join(workDir, "logs", name+".log"),
		args:     append(slices.Clone(args), "-instance-id", name, "-state-dir", filepath.Join(workDir, "state", name)),
	}
}
