package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
)

// bencher runs single contender runs against the loaded source.
type bencher struct {
	o           *options
	c           *cluster
	progs       *programs
	src         *source
	runID       string
	logDir      string
	tmp         string
	unsupported map[string]string // guarantee/contender -> why
}

// runRecord is one contender run, measured and verified.
type runRecord struct {
	Workload  string `json:"workload"`
	Contender string `json:"contender"`
	Guarantee string `json:"guarantee"`
	Run       int    `json:"run"`
	// Status is ok, failed (an error or a failed check) or n/a.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	Store  string `json:"store,omitempty"`
	Log    string `json:"log"`

	RecordsPerSec    float64 `json:"records_per_sec"`
	MBPerSec         float64 `json:"mb_per_sec"`
	CPUSecPerMillion float64 `json:"cpu_sec_per_million"`
	// ProcessingCPUSecPerMillion counts only the CPU the process spent
	// between its first input record and the end of the work (its own
	// getrusage / JVM process CPU time), without start-up and shutdown.
	ProcessingCPUSecPerMillion float64 `json:"processing_cpu_sec_per_million"`
	PeakRSSBytes               int64   `json:"peak_rss_bytes"`
	FirstOutputMs              float64 `json:"first_output_ms"`

	ProcessingSec float64 `json:"processing_sec"` // first record to last output acknowledged
	WallSec       float64 `json:"wall_sec"`       // process start to exit
	UserSec       float64 `json:"user_sec"`
	SysSec        float64 `json:"sys_sec"`

	Consumed         int64 `json:"consumed"`
	SinkRecords      int64 `json:"sink_records"`      // end offsets of the sink topic
	ChangelogRecords int64 `json:"changelog_records"` // end offsets of the changelog topic
}

func (r runRecord) line() string {
	s := fmt.Sprintf("%-21s %-8s %-13s run %d: ", r.Workload, r.Contender, r.Guarantee, r.Run)
	switch r.Status {
	case "ok":
		return s + fmt.Sprintf("%.0f records/s, %.1f MB/s, %.2f CPU s/M, peak RSS %s, first output %.0f ms",
			r.RecordsPerSec, r.MBPerSec, r.CPUSecPerMillion, mib(r.PeakRSSBytes), r.FirstOutputMs)
	case "n/a":
		return s + "n/a: " + r.Error
	}
	return s + "FAILED: " + r.Error
}

// one runs contender ct on workload w once and checks its work.
func (b *bencher) one(ctx context.Context, g, w, ct string, i int) (r runRecord) {
	r = runRecord{Workload: w, Contender: ct, Guarantee: g, Run: i, Status: "failed"}
	if why, ok := b.unsupported[g+"/"+ct]; ok {
		r.Status, r.Error = "n/a", why
		return r
	}
	short := map[string]string{protocol.AtLeastOnce: "alo", protocol.ExactlyOnce: "eos"}[g]
	app := fmt.Sprintf("%s-%s-%s-%s-%d", b.runID, short, w, ct, i)
	sink := app + "-sink"
	other := app + "-other"
	restore := protocol.IsRestore(w)
	// A restore restores b.o.restoreEntries changelog entries; a workload
	// processes the source.
	inputs, input := b.src.Records, b.src.Topic
	if restore {
		inputs, input = b.o.restoreEntries, app+"-input"
	}
	outputs := b.src.ClosedWindows
	if w == protocol.StreamStreamJoin {
		outputs = b.src.joinOutputs()
	}
	exp, err := protocol.Expected(w, inputs, outputs)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	changelog := ""
	if exp.Store != "" {
		changelog = protocol.Changelog(app, exp.Store)
	}
	stateDir := filepath.Join(b.tmp, "state", app)
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := b.c.cleanup(cctx, app, sink, changelog); err != nil {
			fmt.Fprintf(os.Stderr, "bench: cleanup after %s: %v\n", app, err)
		}
		_ = os.RemoveAll(stateDir)
	}()

	setup, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if exp.Sink > 0 || w == protocol.WindowedCountFinal {
		if err := b.c.createTopic(setup, sink, b.src.Partitions, nil); err != nil {
			r.Error = err.Error()
			return r
		}
	}
	var restoreBytes int64
	if restore {
		// The store's changelog, filled before the contender starts (not
		// timed), and an empty input topic whose partitions make the tasks.
		if err := b.c.createTopic(setup, input, b.src.Partitions, nil); err != nil {
			r.Error = err.Error()
			return r
		}
		compact := "compact"
		if err := b.c.createTopic(setup, changelog, b.src.Partitions, map[string]*string{"cleanup.policy": &compact}); err != nil {
			r.Error = err.Error()
			return r
		}
		fctx, fcancel := context.WithTimeout(ctx, 10*time.Minute)
		restoreBytes, err = b.c.writeChangelog(fctx, changelog, exp.Store, inputs, b.src.ValueSize, uint64(i))
		fcancel()
		if err != nil {
			r.Error = err.Error()
			return r
		}
	} else if protocol.IsJoin(w) {
		// The table or right stream, written before the contender starts
		// (not timed), co-partitioned with the source.
		if err := b.c.createTopic(setup, other, b.src.Partitions, nil); err != nil {
			r.Error = err.Error()
			return r
		}
		if err := b.c.writeOther(setup, other, w, b.src); err != nil {
			r.Error = err.Error()
			return r
		}
	} else if ct == raw && changelog != "" {
		compact := "compact"
		if err := b.c.createTopic(setup, changelog, b.src.Partitions, map[string]*string{"cleanup.policy": &compact}); err != nil {
			r.Error = err.Error()
			return r
		}
	}

	interval := b.o.commitInterval
	if g == protocol.ExactlyOnce {
		interval = b.o.eosCommitInterval
	}
	args := []string{
		"-brokers", b.o.brokers,
		"-workload", w,
		"-source", input,
		"-sink", sink,
		"-app", app,
		"-expect", strconv.FormatInt(inputs, 10),
		"-closed-windows", strconv.FormatInt(b.src.ClosedWindows, 10),
		"-parallelism", strconv.Itoa(b.o.parallelism),
		"-state-dir", stateDir,
		"-guarantee", g,
		"-commit-interval", fmt.Sprintf("%dms", interval.Milliseconds()),
		"-timeout", fmt.Sprintf("%dms", b.o.runTimeout.Milliseconds()),
	}
	if ct != raw {
		args = append(args, "-store", b.o.store)
	}
	if protocol.IsJoin(w) {
		args = append(args, "-other", other, "-join-outputs", strconv.FormatInt(outputs, 10))
	}
	name, argv := b.progs.command(ct, args)
	r.Log = filepath.Join(b.logDir, app+".log")
	ex, err := execute(ctx, name, argv, r.Log, b.o.runTimeout+2*time.Minute)
	res := ex.Result
	r.Store = res.Store
	r.Consumed = res.Consumed
	r.WallSec, r.UserSec, r.SysSec, r.PeakRSSBytes = ex.WallSec, ex.UserSec, ex.SysSec, ex.MaxRSS
	if res.Unsupported {
		r.Status, r.Error = "n/a", res.Error
		return r
	}
	if err != nil {
		r.Error = err.Error()
		return r
	}

	// The contender's word is not enough: the broker says what was written.
	// At-least-once, every record takes one offset, so end offsets count
	// them. Exactly-once, transaction markers take offsets too, and only
	// committed records count: the topics are read back, read_committed.
	eos := g == protocol.ExactlyOnce
	vctx, vcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer vcancel()
	var problems []error
	switch {
	case restore && res.Consumed != inputs:
		problems = append(problems, fmt.Errorf("restored %d changelog records, want %d", res.Consumed, inputs))
	case restore:
	case !eos && res.Consumed != b.src.Records:
		problems = append(problems, fmt.Errorf("processed %d input records, want %d", res.Consumed, b.src.Records))
	case eos && res.Consumed < b.src.Records:
		// Aborted transactions are processed again: more is fine.
		problems = append(problems, fmt.Errorf("processed %d input records, want at least %d", res.Consumed, b.src.Records))
	}
	count := func(topic string) (int64, bool, error) {
		if eos {
			n, err := b.c.countRecords(vctx, topic, true)
			return n, err == nil, err
		}
		return b.c.endOffsets(vctx, topic)
	}
	if exp.Sink > 0 || w == protocol.WindowedCountFinal {
		n, _, err := count(sink)
		r.SinkRecords = n
		if err != nil {
			problems = append(problems, fmt.Errorf("count sink records: %w", err))
		} else if n != exp.Sink {
			problems = append(problems, fmt.Errorf("sink topic holds %d records, want %d", n, exp.Sink))
		}
	}
	if exp.Changelog > 0 {
		n, ok, err := count(changelog)
		r.ChangelogRecords = n
		// Exactly-once, kgen keeps writes in its store cache until the
		// commit, so a key written twice in a transaction is logged once:
		// at least one record per key, at most one per input. A window
		// that expired before the commit need not be logged at all, but
		// every window still open at the end must be, or a restore would
		// lose it.
		low := exp.Changelog
		switch {
		case eos && protocol.IsWindowed(w):
			low = b.src.Windows - b.src.ClosedWindows
		case eos:
			low = int64(len(b.src.truth))
		}
		switch {
		case err != nil:
			problems = append(problems, fmt.Errorf("count changelog records: %w", err))
		case !ok:
			problems = append(problems, fmt.Errorf("changelog topic %q does not exist", changelog))
		case n < low || n > exp.Changelog:
			if low == exp.Changelog {
				problems = append(problems, fmt.Errorf("changelog topic holds %d records, want %d", n, exp.Changelog))
			} else {
				problems = append(problems, fmt.Errorf("changelog topic holds %d committed records, want between %d (keys, or windows still open) and %d (inputs)", n, low, exp.Changelog))
			}
		}
	}
	if err := b.c.committedMatchesEnds(vctx, app, input); err != nil {
		problems = append(problems, fmt.Errorf("group %q did not commit the whole source: %w", app, err))
	}
	if form := protocol.ProcessorForm(w); (form == protocol.Count || form == protocol.RepartitionCount) && b.o.verifyCounts && len(problems) == 0 {
		truth := b.src.truth
		if form == protocol.RepartitionCount {
			truth = b.src.groups
		}
		if err := b.c.checkCounts(vctx, sink, eos, truth); err != nil {
			problems = append(problems, err)
		}
	}
	if protocol.IsWindowed(w) && b.o.verifyCounts && len(problems) == 0 {
		if err := b.c.checkWindowCounts(vctx, sink, eos, w == protocol.WindowedCountFinal, b.src.windows, b.src.closed); err != nil {
			problems = append(problems, err)
		}
	}
	// A restore's first and last records are the first and last changelog
	// records restored, its first output the moment it was ready.
	end := res.LastOutputNs
	if exp.Sink == 0 && exp.Changelog == 0 && (!eos || restore) {
		end = res.LastRecordNs
	}
	first := res.FirstOutputNs
	switch {
	case restore:
		first = res.LastRecordNs
	case exp.Sink == 0 && exp.Changelog == 0:
		first = res.FirstRecordNs
	}
	if res.FirstRecordNs == 0 || end <= res.FirstRecordNs || first == 0 {
		problems = append(problems, fmt.Errorf("incomplete timings: first record %d, end %d, first output %d", res.FirstRecordNs, end, first))
	}
	if len(problems) > 0 {
		r.Error = errors.Join(problems...).Error()
		return r
	}
	r.Status = "ok"
	bytes := b.src.Bytes
	if restore {
		bytes = restoreBytes
	}
	r.ProcessingSec = float64(end-res.FirstRecordNs) / 1e9
	r.RecordsPerSec = float64(inputs) / r.ProcessingSec
	r.MBPerSec = float64(bytes) / 1e6 / r.ProcessingSec
	r.CPUSecPerMillion = (ex.UserSec + ex.SysSec) / (float64(inputs) / 1e6)
	r.FirstOutputMs = float64(first-ex.StartNs) / 1e6
	if res.CPUAtFirstRecordNs > 0 && res.CPUAtDoneNs > res.CPUAtFirstRecordNs {
		r.ProcessingCPUSecPerMillion = float64(res.CPUAtDoneNs-res.CPUAtFirstRecordNs) / 1e9 / (float64(inputs) / 1e6)
	}
	return r
}
