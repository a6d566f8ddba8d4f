// Package protocol is the contract between the benchmark harness
// (bench/cmd/bench) and its contender processes (bench/cmd/rawloop,
// bench/cmd/kgenbench and the Kafka Streams program under bench/kstreams):
// the workloads, the flags every contender takes, what each workload must
// write, and the result line a contender prints last on stdout.
package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// Workload names.
const (
	SourceOnly  = "source-only"
	Passthrough = "passthrough"
	KVPut       = "kv-put"
	Count       = "count"
	// RepartitionCount re-keys each record by a field of its value
	// (Group), sends it through a repartition topic, and counts per new
	// key: Kafka Streams' groupBy(...).count().
	RepartitionCount = "repartition-count"
	// OpsPassthrough is Passthrough written with typed operators:
	// filter (every record passes) then mapValues (the value itself).
	OpsPassthrough = "ops-passthrough"
	// OpsRepartitionCount is RepartitionCount written with typed
	// operators: groupBy(...).count().toStream().
	OpsRepartitionCount = "ops-repartition-count"
	// WindowedCount counts per key in tumbling windows of WindowSize over
	// the records' event time (grace WindowGrace) and forwards every update
	// of a window: Kafka Streams' groupByKey().windowedBy(...).count() with
	// its record cache off.
	WindowedCount = "windowed-count"
	// WindowedCountFinal is WindowedCount emitting each window once, when
	// it closes (Kafka Streams' EmitStrategy.onWindowClose()).
	WindowedCountFinal = "windowed-count-final"
	// RestoreKV times a fresh instance restoring a key-value store from a
	// changelog the harness wrote (-expect entries); the raw loop reads the
	// same changelog to its end.
	RestoreKV = "restore-kv"
	// RestoreWindow is RestoreKV for a window store.
	RestoreWindow = "restore-window"
	// StreamTableJoin joins each source record with the row of its key in
	// a table the harness writes (-other: one row per key, TableRow,
	// stamped before every source record): Kafka Streams'
	// KStream#join(KTable). The output is one record per input, its value
	// JoinValue(value, row).
	StreamTableJoin = "stream-table-join"
	// StreamStreamJoin joins the source (left) with a second stream the
	// harness writes (-other: for every key, one record at each mark of
	// RightMarks, RightValue) in JoinWindows of JoinWindow before and after,
	// no grace: Kafka Streams' KStream#join(KStream, JoinWindows
	// .ofTimeDifferenceWithNoGrace). One output per pair, its value
	// JoinValue(left, right); how many the harness computes (-join-outputs).
	StreamStreamJoin = "stream-stream-join"
)

// JoinWindow is StreamStreamJoin's time difference, before and after.
const JoinWindow = time.Minute

// RightMarks is how many records of each key StreamStreamJoin's right
// stream holds: record j of a key is stamped first + (2j+1) minutes, first
// the source's first timestamp, so that the marks are two windows apart and
// a source record joins one mark, or two when it is exactly a minute from
// both.
const RightMarks = 30

// RightMark is the time of the j-th record of every key in
// StreamStreamJoin's right stream, for a source whose first record is
// stamped first (ms).
func RightMark(first int64, j int) int64 { return first + int64(2*j+1)*JoinWindow.Milliseconds() }

// RightValue is the value of key's records in StreamStreamJoin's right
// stream.
func RightValue(key string) []byte { return []byte("right-" + key) }

// Workloads lists every workload, in the order they are reported.
var Workloads = []string{SourceOnly, Passthrough, KVPut, Count, RepartitionCount, OpsPassthrough, OpsRepartitionCount,
	WindowedCount, WindowedCountFinal, RestoreKV, RestoreWindow, StreamTableJoin, StreamStreamJoin}

// The windows of WindowedCount and WindowedCountFinal, the same for every
// contender (the Kafka Streams contender spells them out too). The grace
// only delays closing: the source's timestamps never go back within a
// partition, so no record is late.
const (
	WindowSize  = time.Minute
	WindowGrace = 10 * time.Second
)

// IsRestore says whether workload measures a restore rather than
// processing.
func IsRestore(workload string) bool { return workload == RestoreKV || workload == RestoreWindow }

// IsWindowed says whether workload is a windowed count.
func IsWindowed(workload string) bool {
	return workload == WindowedCount || workload == WindowedCountFinal
}

// IsJoin says whether workload joins the source with a second input the
// harness writes (-other).
func IsJoin(workload string) bool { return workload == StreamTableJoin || workload == StreamStreamJoin }

// TableStore is the store of StreamTableJoin's table (its changelog
// A-table-changelog, for kgen and Kafka Streams alike).
const TableStore = "table"

// TableRow is the value of key's row in StreamTableJoin's table.
func TableRow(key string) []byte { return []byte("row-" + key) }

// JoinValue is the value the joins output for a source record of value v
// joined with other (a row or a right record): v followed by other (the
// Kafka Streams contender joins the same way).
func JoinValue(v, row []byte) []byte {
	out := make([]byte, 0, len(v)+len(row))
	return append(append(out, v...), row...)
}

// ProcessorForm is the workload an operator workload is the operator form
// of (what it writes, and what a contender without operators runs), or
// the workload itself.
func ProcessorForm(workload string) string {
	switch workload {
	case OpsPassthrough:
		return Passthrough
	case OpsRepartitionCount:
		return RepartitionCount
	}
	return workload
}

// RepartitionName names the repartition step of RepartitionCount: its topic
// is A-by-group-repartition for application A, for every contender.
const RepartitionName = "by-group"

// Group is the new key of a RepartitionCount record: one of 100 groups,
// from the first byte of its value (the Kafka Streams contender computes it
// the same way).
func Group(value []byte) string {
	g := 0
	if len(value) > 0 {
		g = int(value[0]) % 100
	}
	return fmt.Sprintf("g%02d", g)
}

// Store names: the changelog of store S of application A is A-S-changelog,
// for kgen and Kafka Streams alike.
const (
	KVStore    = "kv"
	CountStore = "counts"
	// WindowStore holds the windows of the windowed counts and the entries
	// of RestoreWindow: changelog keys are the key, the window start (8
	// bytes) and a sequence number (4 bytes, 0), values the count (8
	// bytes), as Kafka Streams' window stores log them.
	WindowStore = "windows"
)

// Guarantees.
const (
	AtLeastOnce = "at-least-once"
	ExactlyOnce = "exactly-once"
)

// Expect says what a workload writes for n input records.
type Expect struct {
	Sink      int64  // records in the sink topic
	Changelog int64  // records in the store's changelog topic
	Store     string // the store whose changelog is written (restores: read), or ""
}

// Expected returns what workload must write for n input records: one sink
// record per input for passthrough, count and windowed-count, one changelog
// record per input for kv-put, count and both windowed counts, and for
// windowed-count-final one sink record per window closed (closed, which
// depends on the data: the harness computes it and passes -closed-windows),
// for stream-stream-join one per pair that joins (closed stands for that
// number, passed as -join-outputs).
// Restores write nothing: n is the number of changelog entries to restore.
func Expected(workload string, n, closed int64) (Expect, error) {
	switch ProcessorForm(workload) {
	case SourceOnly:
		return Expect{}, nil
	case Passthrough, StreamTableJoin:
		return Expect{Sink: n}, nil
	case KVPut:
		return Expect{Changelog: n, Store: KVStore}, nil
	case Count, RepartitionCount:
		return Expect{Sink: n, Changelog: n, Store: CountStore}, nil
	case WindowedCount:
		return Expect{Sink: n, Changelog: n, Store: WindowStore}, nil
	case WindowedCountFinal:
		return Expect{Sink: closed, Changelog: n, Store: WindowStore}, nil
	case StreamStreamJoin:
		return Expect{Sink: closed}, nil
	case RestoreKV:
		return Expect{Store: KVStore}, nil
	case RestoreWindow:
		return Expect{Store: WindowStore}, nil
	}
	return Expect{}, fmt.Errorf("unknown workload %q (want one of %v)", workload, Workloads)
}

// Changelog names the changelog topic of store in application app.
func Changelog(app, store string) string { return app + "-" + store + "-changelog" }

// Args are the flags every contender takes.
type Args struct {
	Brokers        string
	Workload       string
	Source         string
	Other          string // the second input of a join workload: its table or right stream
	JoinOutputs    int64  // stream-stream-join: the pairs that join, one sink record each
	Sink           string
	App            string // application id and consumer group
	Expect         int64  // records in the source topic (restores: changelog entries)
	ClosedWindows  int64  // windowed-count-final: windows that close, one sink record each
	Parallelism    int
	StateDir       string
	Guarantee      string
	CommitInterval time.Duration
	Timeout        time.Duration
	Probe          bool // only say whether the guarantee is supported
}

// Register defines the flags on fs.
func (a *Args) Register(fs *flag.FlagSet) {
	fs.StringVar(&a.Brokers, "brokers", "127.0.0.1:9092", "seed brokers, comma separated")
	fs.StringVar(&a.Workload, "workload", "", "workload, one of protocol.Workloads")
	fs.StringVar(&a.Source, "source", "", "source topic")
	fs.StringVar(&a.Other, "other", "", "the join workloads' second input: the table or the right stream")
	fs.Int64Var(&a.JoinOutputs, "join-outputs", 0, "stream-stream-join: pairs that join (one sink record each)")
	fs.StringVar(&a.Sink, "sink", "", "sink topic (passthrough and count)")
	fs.StringVar(&a.App, "app", "", "application id and consumer group")
	fs.Int64Var(&a.Expect, "expect", 0, "records in the source topic (restore workloads: changelog entries to restore)")
	fs.Int64Var(&a.ClosedWindows, "closed-windows", 0, "windowed-count-final: windows that close (one sink record each)")
	fs.IntVar(&a.Parallelism, "parallelism", 2, "processing threads (group members)")
	fs.StringVar(&a.StateDir, "state-dir", "", "state directory")
	fs.StringVar(&a.Guarantee, "guarantee", AtLeastOnce, "at-least-once or exactly-once")
	fs.DurationVar(&a.CommitInterval, "commit-interval", 30*time.Second, "commit interval")
	fs.DurationVar(&a.Timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.BoolVar(&a.Probe, "probe", false, "only report whether the guarantee is supported, then exit")
}

// Check validates the flags of a real run.
func (a *Args) Check() error {
	var errs []error
	exp, err := a.Expected()
	if err != nil {
		errs = append(errs, err)
	}
	if a.Source == "" {
		errs = append(errs, errors.New("-source is required"))
	}
	if (exp.Sink > 0 || a.Workload == WindowedCountFinal || a.Workload == StreamStreamJoin) && a.Sink == "" {
		errs = append(errs, fmt.Errorf("-sink is required for %s", a.Workload))
	}
	if IsJoin(a.Workload) && a.Other == "" {
		errs = append(errs, fmt.Errorf("-other is required for %s", a.Workload))
	}
	if a.App == "" {
		errs = append(errs, errors.New("-app is required"))
	}
	if a.Expect <= 0 {
		errs = append(errs, errors.New("-expect must be positive"))
	}
	if a.ClosedWindows < 0 {
		errs = append(errs, errors.New("-closed-windows must not be negative"))
	}
	if a.Guarantee != AtLeastOnce && a.Guarantee != ExactlyOnce {
		errs = append(errs, fmt.Errorf("-guarantee %q: want %s or %s", a.Guarantee, AtLeastOnce, ExactlyOnce))
	}
	return errors.Join(errs...)
}

// Expected is Expected for the run's workload, records and closed windows.
func (a *Args) Expected() (Expect, error) {
	if a.Workload == StreamStreamJoin {
		return Expected(a.Workload, a.Expect, a.JoinOutputs)
	}
	return Expected(a.Workload, a.Expect, a.ClosedWindows)
}

// Result is what a contender reports, as the last line of its stdout. Times
// are Unix nanoseconds from the contender's clock (the same machine as the
// harness); zero when the event did not happen.
type Result struct {
	Contender string `json:"contender"`
	Workload  string `json:"workload"`
	Guarantee string `json:"guarantee"`
	// Unsupported is set, with Error, when the contender cannot run the
	// workload under the guarantee.
	Unsupported bool   `json:"unsupported,omitempty"`
	Error       string `json:"error,omitempty"`
	// Store describes the store used (kv-put and count), e.g. "pebble,
	// changelogged".
	Store string `json:"store,omitempty"`

	Consumed     int64 `json:"consumed"`      // input records processed
	SinkAcked    int64 `json:"sink_acked"`    // sink records acknowledged by the broker
	ChangelogAck int64 `json:"changelog_ack"` // changelog records acknowledged

	FirstRecordNs int64 `json:"first_record_ns"` // first input record seen by the processing code
	LastRecordNs  int64 `json:"last_record_ns"`  // last input record seen
	FirstOutputNs int64 `json:"first_output_ns"` // first output (sink or changelog) acknowledged
	// LastOutputNs is when the expected output was complete: at-least-once,
	// the acknowledgement that completed it; exactly-once, when the group's
	// committed offsets were seen to reach the source's end (the outputs are
	// committed in the same transactions).
	LastOutputNs int64 `json:"last_output_ns"`
	DoneNs       int64 `json:"done_ns"` // all expected work done (before the clean close)

	// The process's own CPU time (user+sys, nanoseconds) when the first
	// input record was seen and when the work was done: CPU spent
	// processing, without start-up and shutdown.
	CPUAtFirstRecordNs int64 `json:"cpu_at_first_record_ns"`
	CPUAtDoneNs        int64 `json:"cpu_at_done_ns"`

	// PeakRSSBytes is the process's own high-water resident set (Linux
	// VmHWM), read when the result is printed. The kernel's ru_maxrss of a
	// child cannot stand in for it: on Linux it starts at the parent's peak
	// when the child execs, so every contender would weigh at least what
	// the harness does.
	PeakRSSBytes int64 `json:"peak_rss_bytes,omitempty"`
}

// Marker starts the result line, so that it is found among other output.
const Marker = "KGENBENCH-RESULT "

// Print writes r as the result line, with the process's peak RSS unless r
// has one.
func Print(w io.Writer, r Result) {
	if r.PeakRSSBytes == 0 {
		r.PeakRSSBytes = SelfPeakRSS()
	}
	b, _ := json.Marshal(r)
	fmt.Fprintf(w, "%s%s\n", Marker, b)
}

// Parse finds the last result line in out.
func Parse(out []byte) (Result, error) {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if line := sc.Bytes(); bytes.HasPrefix(line, []byte(Marker)) {
			last = append(last[:0], line[len(Marker):]...)
		}
	}
	if last == nil {
		return Result{}, errors.New("no result line in the contender's output")
	}
	var r Result
	if err := json.Unmarshal(last, &r); err != nil {
		return Result{}, fmt.Errorf("result line: %w", err)
	}
	return r, nil
}

// Fail prints a result carrying err and exits with status 1.
func Fail(contender string, a *Args, err error) {
	Print(os.Stdout, Result{Contender: contender, Workload: a.Workload, Guarantee: a.Guarantee, Error: err.Error()})
	fmt.Fprintf(os.Stderr, "%s: %v\n", contender, err)
	os.Exit(1)
}

// CommitWatchInterval is how often, under exactly-once, a contender asks
// the broker whether its group has committed the whole source.
const CommitWatchInterval = 20 * time.Millisecond

// SelfPeakRSS returns this process's peak resident set size in bytes, from
// /proc/self/status, or 0 where that is not available.
func SelfPeakRSS() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	n, _ := parseVmHWM(status)
	return n
}

// parseVmHWM reads the VmHWM line ("VmHWM:    2020 kB") of a
// /proc/<pid>/status file.
func parseVmHWM(status []byte) (int64, error) {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		var kb int64
		var unit string
		if _, err := fmt.Sscan(string(rest), &kb, &unit); err != nil || unit != "kB" {
			return 0, fmt.Errorf("unreadable VmHWM line %q", bytes.TrimSpace(line))
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no VmHWM line")
}
