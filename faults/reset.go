package faults

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ResetConfig configures the reset sequence (issue 22): instances count
// the input exactly, all of them stop, the first one resets the application
// (faultapp -reset: internal topics deleted, input offsets to the earliest,
// its own state wiped), and all of them start again, the others with the
// state of the first round still on disk. They count the same input once
// more, and that second round must be exact too: a store kept from before
// the reset would count every input twice.
type ResetConfig struct {
	Brokers    []string
	Guarantee  stream.GuaranteeKind
	Workload   Workload
	Partitions int32
	Instances  int // at least 2: one resets, the others keep their state
	// Standbys is each instance's -standbys, so the kept state includes
	// standby copies.
	Standbys       int
	CommitInterval time.Duration
	SessionTimeout time.Duration
	AppLogLevel    string
	AppBinary      string
	WorkDir        string
	// Settle bounds each round's wait for the instances to commit every
	// input offset.
	Settle time.Duration
	Keep   bool
	Log    io.Writer
}

// ResetSummary is the outcome of the reset sequence.
type ResetSummary struct {
	Guarantee stream.GuaranteeKind
	Seed      uint64
	AppID     string
	RecordsIn int
	// First and Second verify the output of each round (the second from
	// where the first ended).
	First, Second *Report
	// Crashes, StopErrors, OpenTransactions and Unstable are as in Summary.
	Crashes          []string
	StopErrors       []string
	OpenTransactions []string
	Unstable         []string
	Elapsed          time.Duration
}

// exact reports whether a round without faults was exact: every input
// output once with its true aggregate, under either guarantee.
func exact(r *Report) bool {
	return r != nil && r.Losses() == 0 && r.Duplicates() == 0 && r.AboveOutputs == 0 && r.OutOfOrder == 0 &&
		r.Malformed == 0 && r.FinalWrong == 0
}

// Held reports whether both rounds were exact and the run clean.
func (s *ResetSummary) Held() bool {
	return exact(s.First) && exact(s.Second) && len(s.Crashes) == 0 && len(s.StopErrors) == 0 &&
		len(s.OpenTransactions) == 0 && len(s.Unstable) == 0
}

// LastLine is the summary's last line, for scripts.
func (s *ResetSummary) LastLine() string {
	d, l := 0, 0
	if s.Second != nil {
		d, l = s.Second.Duplicates(), s.Second.Losses()
	}
	return fmt.Sprintf("faults: reset from one instance, %d duplicates, %d losses after the reset, guarantee %s", d, l, s.Guarantee)
}

// Write prints the summary; its last line is LastLine.
func (s *ResetSummary) Write(w io.Writer) {
	fmt.Fprintf(w, "---- faults reset summary (seed %d, app %s, %s)\n", s.Seed, s.AppID, s.Elapsed.Round(time.Second))
	for _, round := range []struct {
		name string
		r    *Report
	}{{"first round", s.First}, {"second round, after the reset", s.Second}} {
		fmt.Fprintf(w, "%s:\n", round.name)
		if round.r == nil {
			fmt.Fprintln(w, "  not verified: the run did not get there")
			continue
		}
		for _, line := range strings.Split(strings.TrimRight(round.r.String(), "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	for _, c := range s.Crashes {
		fmt.Fprintf(w, "CRASH: %s\n", c)
	}
	for _, e := range s.StopErrors {
		fmt.Fprintf(w, "STOP: %s\n", e)
	}
	for _, t := range s.OpenTransactions {
		fmt.Fprintf(w, "OPEN TRANSACTION: %s\n", t)
	}
	for _, u := range s.Unstable {
		fmt.Fprintf(w, "UNSTABLE: %s\n", u)
	}
	verdict := "exact in both rounds"
	if !s.Held() {
		verdict = "NOT EXACT"
	}
	fmt.Fprintf(w, "guarantee %s: %s\n", s.Guarantee, verdict)
	fmt.Fprintln(w, s.LastLine())
}

// RunReset runs the reset sequence once. The error is for a run that could
// not be carried out; counts that were not exact are in the summary.
func RunReset(ctx context.Context, rc ResetConfig) (*ResetSummary, error) {
	if rc.Instances < 2 {
		return nil, fmt.Errorf("faults: config: %d instances: the reset sequence needs at least 2", rc.Instances)
	}
	cfg := Config{
		Brokers: rc.Brokers, Guarantee: rc.Guarantee, Workload: rc.Workload, Partitions: rc.Partitions,
		Instances: rc.Instances, ProduceTime: time.Second, CommitInterval: rc.CommitInterval,
		SessionTimeout: rc.SessionTimeout, AppLogLevel: rc.AppLogLevel, AppBinary: rc.AppBinary,
		WorkDir: rc.WorkDir, Settle: rc.Settle, Keep: rc.Keep, Log: rc.Log,
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	seed := rc.Workload.Seed
	d := &driver{cfg: cfg, began: time.Now(), sum: &Summary{Guarantee: rc.Guarantee, Seed: seed}}
	sum := &ResetSummary{Guarantee: rc.Guarantee, Seed: seed}
	d.logf("reset sequence: seed %d, guarantee %s, %d records over %d keys, %d instances with %d standbys",
		seed, rc.Guarantee, rc.Workload.Records, rc.Workload.Keys, rc.Instances, rc.Standbys)
	recs, truth, err := rc.Workload.Generate()
	if err != nil {
		return nil, err
	}
	if err := d.connect(ctx); err != nil {
		return nil, err
	}
	defer d.cl.Close()
	sum.AppID = d.appID
	for _, in := range d.instances {
		in.args = append(in.args, "-standbys", fmt.Sprint(rc.Standbys))
	}
	defer d.killAll()

	runErr := d.resetSequence(ctx, recs, truth, sum)
	sum.Crashes, sum.StopErrors = d.sum.Crashes, d.sum.StopErrors
	sum.OpenTransactions, sum.Unstable = d.sum.OpenTransactions, d.sum.Unstable
	sum.Elapsed = time.Since(d.began)
	if runErr == nil && sum.Held() && !cfg.Keep {
		d.cleanup()
	} else {
		d.logf("kept topics %s, %s and group %s; instance logs and state in %s", d.input, d.output, d.appID, cfg.WorkDir)
	}
	return sum, runErr
}

func (d *driver) resetSequence(ctx context.Context, recs []Record, truth Truth, sum *ResetSummary) error {
	if err := d.produce(ctx, recs); err != nil {
		return err
	}
	sum.RecordsIn = len(recs)
	d.logf("produced %d records", len(recs))

	// First round.
	if err := d.round(ctx, true, len(recs)); err != nil {
		return err
	}
	outs, err := d.verifiedOutput(ctx)
	if err != nil {
		return err
	}
	sum.First = Verify(truth, outs, d.cfg.Guarantee)
	ends := map[int32]int64{}
	for _, o := range outs {
		ends[o.Partition] = max(ends[o.Partition], o.Offset+1)
	}
	d.logf("first round: %d outputs; exact: %v", len(outs), exact(sum.First))

	// The reset, from the first instance's slot and state directory.
	if err := d.reset(ctx, d.instances[0]); err != nil {
		return err
	}

	// Second round: every instance keeps its state directory.
	if err := d.round(ctx, false, len(recs)); err != nil {
		return err
	}
	all, err := d.verifiedOutput(ctx)
	if err != nil {
		return err
	}
	var second []OutputRecord
	for _, o := range all {
		if o.Offset >= ends[o.Partition] {
			second = append(second, o)
		}
	}
	sum.Second = Verify(truth, second, d.cfg.Guarantee)
	d.logf("second round: %d outputs; exact: %v", len(second), exact(sum.Second))
	return nil
}

// round starts every instance (wiping their state directories when wipe
// is set), waits for them to commit every input offset, and stops them.
func (d *driver) round(ctx context.Context, wipe bool, records int) error {
	for _, in := range d.instances {
		if err := in.start(d.cfg.AppBinary, wipe); err != nil {
			return err
		}
	}
	err := d.settle(ctx, int64(records))
	for _, in := range d.instances {
		if serr := in.stop(time.Minute); serr != nil {
			d.sum.StopErrors = append(d.sum.StopErrors, serr.Error())
		}
	}
	d.logf("stopped the instances")
	return err
}

// verifiedOutput checks the transactions and reads the whole output.
func (d *driver) verifiedOutput(ctx context.Context) ([]OutputRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := d.checkTransactions(ctx); err != nil {
		return nil, err
	}
	return readCommitted(ctx, d.cfg.Brokers, d.output)
}

// reset runs faultapp -reset in in's slot, retrying while the group still
// has members (a stopped instance's leave may take a moment), then waits for
// the changelog topic to be gone, so the next start creates it anew.
func (d *driver) reset(ctx context.Context, in *instance) error {
	deadline := time.Now().Add(time.Minute)
	for {
		cmd := exec.CommandContext(ctx, d.cfg.AppBinary, append(in.args, "-reset")...)
		logf, err := os.OpenFile(in.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("reset: open log: %w", err)
		}
		fmt.Fprintf(logf, "==== faults: reset from %s at %s\n", in.name, time.Now().UTC().Format(time.RFC3339Nano))
		cmd.Stdout, cmd.Stderr = logf, logf
		err = cmd.Run()
		logf.Close()
		if err == nil {
			break
		}
		if !strings.Contains(in.lastError(), "stop every instance first") || time.Now().After(deadline) {
			return fmt.Errorf("reset from %s: %v: %s (log %s)", in.name, err, in.lastError(), in.logPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	changelog := d.appID + "-" + StoreName + "-changelog"
	for {
		topics, err := d.adm.ListTopics(ctx, changelog)
		if err == nil && (!topics.Has(changelog) || topics[changelog].Err != nil) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("reset from %s: changelog %s still listed a minute later", in.name, changelog)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	d.logf("reset from %s: internal topics deleted, input offsets at the earliest, its state wiped", in.name)
	// A new client: the old one's metadata still places the deleted
	// changelog's partitions, which the broker then says it does not host.
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.cfg.Brokers...))
	if err != nil {
		return fmt.Errorf("reset: create client: %w", err)
	}
	d.cl.Close()
	d.cl, d.adm = cl, kadm.NewClient(cl)
	return nil
}
