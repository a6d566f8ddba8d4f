package streamprom_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/kgen-dev/kgen/runtime/streamprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fakeApp struct{ stats stream.Stats }

func (fakeApp) AppID() string         { return "wc" }
func (fakeApp) State() stream.State   { return stream.Running }
func (f fakeApp) Stats() stream.Stats { return f.stats }

func TestCollector(t *testing.T) {
	app := fakeApp{stream.Stats{
		Processed: 42, Commits: 3, CommitTime: 1500 * time.Millisecond, Generation: 5,
		Tasks: map[stream.TaskID]stream.TaskStats{
			{Subtopology: 0, Partition: 1}: {Processed: 40, Lag: 7, ProcessorCount: map[string]uint64{"split": 40, "count": 120}},
		},
	}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(streamprom.NewCollector(app))
	want := `
# HELP kgen_commit_seconds_total Time spent committing.
# TYPE kgen_commit_seconds_total counter
kgen_commit_seconds_total{app="wc"} 1.5
# HELP kgen_group_generation Newest consumer group generation the app's members joined; it grows with every rebalance.
# TYPE kgen_group_generation gauge
kgen_group_generation{app="wc"} 5
# HELP kgen_processor_records_total Records each processor handled without error.
# TYPE kgen_processor_records_total counter
kgen_processor_records_total{app="wc",processor="count",task="0_1"} 120
kgen_processor_records_total{app="wc",processor="split",task="0_1"} 40
# HELP kgen_records_processed_total Records processed.
# TYPE kgen_records_processed_total counter
kgen_records_processed_total{app="wc"} 42
# HELP kgen_task_lag_records Records known to exist past what the task processed (consumer lag).
# TYPE kgen_task_lag_records gauge
kgen_task_lag_records{app="wc",task="0_1"} 7
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"kgen_commit_seconds_total", "kgen_group_generation", "kgen_processor_records_total", "kgen_records_processed_total", "kgen_task_lag_records"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(streamprom.NewCollector(app)); n != 39 {
		t.Fatalf("collected %d metrics, want 39: 27 per app (5 of them dropped records by reason), 6 states, 4 for the task, 1 per processor", n)
	}
	wantState := `
# HELP kgen_app_state 1 for the app's current state, 0 for every other state (one series per state, as Kafka Streams' client-state).
# TYPE kgen_app_state gauge
kgen_app_state{app="wc",state="closing"} 0
kgen_app_state{app="wc",state="created"} 0
kgen_app_state{app="wc",state="failed"} 0
kgen_app_state{app="wc",state="rebalancing"} 0
kgen_app_state{app="wc",state="running"} 1
kgen_app_state{app="wc",state="stopped"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantState), "kgen_app_state"); err != nil {
		t.Fatal(err)
	}
}

// Dropped records come out by reason: every known reason has its series,
// zero or not, and a task's only for the reasons that happened.
func TestDroppedRecords(t *testing.T) {
	app := fakeApp{stream.Stats{
		Dropped: map[stream.DropReason]uint64{stream.DropNullKey: 3, "custom": 1},
		Tasks: map[stream.TaskID]stream.TaskStats{
			{Subtopology: 1, Partition: 0}: {Dropped: map[stream.DropReason]uint64{stream.DropNullKey: 3}},
		},
	}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(streamprom.NewCollector(app))
	want := `
# HELP kgen_records_dropped_total Records dropped by an operator or a source, by reason (null-key, null-value, late-record, expired-window, expired-version), as Kafka Streams' dropped-records.
# TYPE kgen_records_dropped_total counter
kgen_records_dropped_total{app="wc",reason="custom"} 1
kgen_records_dropped_total{app="wc",reason="expired-version"} 0
kgen_records_dropped_total{app="wc",reason="expired-window"} 0
kgen_records_dropped_total{app="wc",reason="late-record"} 0
kgen_records_dropped_total{app="wc",reason="null-key"} 3
kgen_records_dropped_total{app="wc",reason="null-value"} 0
# HELP kgen_task_records_dropped_total Records dropped per task and reason, since the task was assigned to this instance (only reasons that happened).
# TYPE kgen_task_records_dropped_total counter
kgen_task_records_dropped_total{app="wc",reason="null-key",task="1_0"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kgen_records_dropped_total", "kgen_task_records_dropped_total"); err != nil {
		t.Fatal(err)
	}
}

// The runtime's latency histograms (a count per bucket) come out as
// Prometheus histograms (cumulative, in seconds).
func TestLatencyHistograms(t *testing.T) {
	bounds := []time.Duration{time.Millisecond, 10 * time.Millisecond}
	app := fakeApp{stream.Stats{
		CommitLatency: stream.Histogram{Bounds: bounds, Counts: []uint64{2, 3, 1}, Count: 6, Sum: 80 * time.Millisecond},
	}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(streamprom.NewCollector(app))
	want := `
# HELP kgen_commit_latency_seconds Time of a commit (a transaction under exactly-once).
# TYPE kgen_commit_latency_seconds histogram
kgen_commit_latency_seconds_bucket{app="wc",le="0.001"} 2
kgen_commit_latency_seconds_bucket{app="wc",le="0.01"} 5
kgen_commit_latency_seconds_bucket{app="wc",le="+Inf"} 6
kgen_commit_latency_seconds_sum{app="wc"} 0.08
kgen_commit_latency_seconds_count{app="wc"} 6
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kgen_commit_latency_seconds"); err != nil {
		t.Fatal(err)
	}
}
