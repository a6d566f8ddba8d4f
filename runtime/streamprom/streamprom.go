// Package streamprom exports a kgen App's counters as Prometheus metrics.
// It lives apart from runtime/stream so that programs that do not use
// Prometheus do not link it.
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(streamprom.NewCollector(app))
package streamprom

import (
	"slices"
	"sort"

	"github.com/kgen-dev/kgen/runtime/stream"
	"github.com/prometheus/client_golang/prometheus"
)

// Source is what the collector reads; *stream.App implements it.
type Source interface {
	AppID() string
	State() stream.State
	Stats() stream.Stats
}

// Collector is a prometheus.Collector over one App. Each scrape takes one
// Stats snapshot, so the figures of a scrape agree with each other.
type Collector struct {
	src Source
}

// NewCollector returns a collector for app.
func NewCollector(app Source) *Collector { return &Collector{src: app} }

var (
	appLabels  = []string{"app"}
	taskLabels = []string{"app", "task"}
	procLabels = []string{"app", "task", "processor"}

	descProcessed    = prometheus.NewDesc("kgen_records_processed_total", "Records processed.", appLabels, nil)
	descSkipped      = prometheus.NewDesc("kgen_records_skipped_total", "Records that failed and were skipped by the LogAndContinue policy.", appLabels, nil)
	descDropped      = prometheus.NewDesc("kgen_records_dropped_total", "Records dropped by an operator or a source, by reason (null-key, null-value, late-record, expired-window, expired-version), as Kafka Streams' dropped-records.", []string{"app", "reason"}, nil)
	descDeadLettered = prometheus.NewDesc("kgen_records_dead_lettered_total", "Records sent to a dead-letter topic.", appLabels, nil)
	descPunctuations = prometheus.NewDesc("kgen_punctuations_total", "Punctuations fired.", appLabels, nil)
	descCommits      = prometheus.NewDesc("kgen_commits_total", "Commits (transactions under exactly-once).", appLabels, nil)
	descCommitTime   = prometheus.NewDesc("kgen_commit_seconds_total", "Time spent committing.", appLabels, nil)
	descProcessTime  = prometheus.NewDesc("kgen_process_seconds_total", "Time tasks spent processing records; divide by kgen_records_processed_total for the mean latency.", appLabels, nil)
	descRestored     = prometheus.NewDesc("kgen_restored_records_total", "Changelog records applied while restoring stores.", appLabels, nil)
	descEnforced     = prometheus.NewDesc("kgen_enforced_processing_total", "Records processed while another input of their task was empty past its wait (MaxTaskIdle, FetchGrace).", appLabels, nil)
	descInputPauses  = prometheus.NewDesc("kgen_input_pauses_total", "Times an input partition of a task of several inputs was paused for holding more than a megabyte of records waiting for the others.", appLabels, nil)
	descPackedPeak   = prometheus.NewDesc("kgen_input_packed_peak_bytes", "Most bytes one input of a task of several inputs held packed while waiting for the others.", appLabels, nil)
	descGeneration   = prometheus.NewDesc("kgen_group_generation", "Newest consumer group generation the app's members joined; it grows with every rebalance.", appLabels, nil)
	descStandbys     = prometheus.NewDesc("kgen_standby_tasks", "Standby tasks this instance keeps warm.", appLabels, nil)
	descStandbyLag   = prometheus.NewDesc("kgen_standby_lag_records", "Changelog records the standby tasks have yet to apply.", appLabels, nil)
	descState        = prometheus.NewDesc("kgen_app_state", "1 for the app's current state, 0 for every other state (one series per state, as Kafka Streams' client-state).", []string{"app", "state"}, nil)
	descTaskRecords  = prometheus.NewDesc("kgen_task_records_processed_total", "Records processed per task, since the task was assigned to this instance.", taskLabels, nil)
	descTaskLag      = prometheus.NewDesc("kgen_task_lag_records", "Records known to exist past what the task processed (consumer lag).", taskLabels, nil)
	descTaskRestore  = prometheus.NewDesc("kgen_task_restoring", "1 while the task restores its stores.", taskLabels, nil)
	descTaskDropped  = prometheus.NewDesc("kgen_task_records_dropped_total", "Records dropped per task and reason, since the task was assigned to this instance (only reasons that happened).", []string{"app", "task", "reason"}, nil)
	descProcRecords  = prometheus.NewDesc("kgen_processor_records_total", "Records each processor handled without error.", procLabels, nil)

	descTasksCreated     = prometheus.NewDesc("kgen_tasks_created_total", "Active tasks created on this instance.", appLabels, nil)
	descTasksClosed      = prometheus.NewDesc("kgen_tasks_closed_total", "Active tasks closed on this instance.", appLabels, nil)
	descRestoreStalls    = prometheus.NewDesc("kgen_restore_stalls_total", "Active restores that stood still 15 s and read their changelog again.", appLabels, nil)
	descRestoreRemaining = prometheus.NewDesc("kgen_restore_remaining_records", "Changelog records the restoring active tasks have yet to apply.", appLabels, nil)
	descTaskRemaining    = prometheus.NewDesc("kgen_task_restore_remaining_records", "Changelog records the task has yet to restore.", taskLabels, nil)
	descProcessLatency   = prometheus.NewDesc("kgen_process_latency_seconds", "Time to process one record through every processor it reaches (one record in 64 is timed).", appLabels, nil)
	descCommitLatency    = prometheus.NewDesc("kgen_commit_latency_seconds", "Time of a commit (a transaction under exactly-once).", appLabels, nil)
	descPunctLatency     = prometheus.NewDesc("kgen_punctuation_latency_seconds", "Time of a punctuation.", appLabels, nil)
	descE2ELatency       = prometheus.NewDesc("kgen_record_e2e_latency_seconds", "From a record's timestamp to its output at a sink (one record in 64).", appLabels, nil)
)

// states are the states an App goes through, so that each has a series
// and a dashboard's "== 1" query finds a 0 rather than nothing. A current
// state not listed here still gets its series.
var states = []stream.State{stream.Created, stream.Rebalancing, stream.Running, stream.Closing, stream.Stopped, stream.Failed}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descProcessed, descSkipped, descDropped, descDeadLettered, descPunctuations, descCommits,
		descCommitTime, descProcessTime, descRestored, descRestoreStalls, descEnforced, descInputPauses, descPackedPeak, descGeneration, descStandbys, descStandbyLag, descState, descTaskRecords, descTaskLag, descTaskRestore, descTaskDropped, descProcRecords,
		descTasksCreated, descTasksClosed, descRestoreRemaining, descTaskRemaining, descProcessLatency, descCommitLatency, descPunctLatency, descE2ELatency} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	app := c.src.AppID()
	s := c.src.Stats()
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(descProcessed, float64(s.Processed), app)
	counter(descSkipped, float64(s.Skipped), app)
	counter(descDeadLettered, float64(s.DeadLettered), app)
	// Every known reason has a series from the start, so a rate or an alert
	// finds a 0 rather than nothing; others (an operator's own) as they come.
	known := stream.DropReasons()
	for _, r := range known {
		counter(descDropped, float64(s.Dropped[r]), app, string(r))
	}
	for _, r := range sortedReasons(s.Dropped) {
		if !slices.Contains(known, r) {
			counter(descDropped, float64(s.Dropped[r]), app, string(r))
		}
	}
	counter(descPunctuations, float64(s.Punctuations), app)
	counter(descCommits, float64(s.Commits), app)
	counter(descCommitTime, s.CommitTime.Seconds(), app)
	counter(descProcessTime, s.ProcessTime.Seconds(), app)
	counter(descRestored, float64(s.Restored), app)
	counter(descEnforced, float64(s.EnforcedSteps), app)
	counter(descRestoreStalls, float64(s.RestoreStalls), app)
	counter(descInputPauses, float64(s.InputPauses), app)
	gauge(descPackedPeak, float64(s.PackedPeak), app)
	gauge(descGeneration, float64(s.Generation), app)
	gauge(descStandbys, float64(len(s.Standbys)), app)
	gauge(descStandbyLag, float64(s.StandbyLag), app)
	counter(descTasksCreated, float64(s.TasksCreated), app)
	counter(descTasksClosed, float64(s.TasksClosed), app)
	gauge(descRestoreRemaining, float64(s.RestoreRemaining), app)
	for _, h := range []struct {
		d *prometheus.Desc
		h stream.Histogram
	}{{descProcessLatency, s.ProcessLatency}, {descCommitLatency, s.CommitLatency}, {descPunctLatency, s.PunctuationLatency}, {descE2ELatency, s.EndToEndLatency}} {
		ch <- histogram(h.d, h.h, app)
	}
	current := c.src.State()
	listed := false
	for _, st := range states {
		v := 0.0
		if st == current {
			v, listed = 1, true
		}
		gauge(descState, v, app, st.String())
	}
	if !listed {
		gauge(descState, 1, app, current.String())
	}

	ids := make([]stream.TaskID, 0, len(s.Tasks))
	for id := range s.Tasks {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	for _, id := range ids {
		ts := s.Tasks[id]
		task := id.String()
		counter(descTaskRecords, float64(ts.Processed), app, task)
		gauge(descTaskLag, float64(ts.Lag), app, task)
		restoring := 0.0
		if ts.Restoring {
			restoring = 1
		}
		gauge(descTaskRestore, restoring, app, task)
		gauge(descTaskRemaining, float64(ts.RestoreRemaining), app, task)
		for _, r := range sortedReasons(ts.Dropped) {
			counter(descTaskDropped, float64(ts.Dropped[r]), app, task, string(r))
		}
		procs := make([]string, 0, len(ts.ProcessorCount))
		for p := range ts.ProcessorCount {
			procs = append(procs, p)
		}
		sort.Strings(procs)
		for _, p := range procs {
			counter(descProcRecords, float64(ts.ProcessorCount[p]), app, task, p)
		}
	}
}

func sortedReasons(m map[stream.DropReason]uint64) []stream.DropReason {
	rs := make([]stream.DropReason, 0, len(m))
	for r := range m {
		rs = append(rs, r)
	}
	slices.Sort(rs)
	return rs
}

// histogram turns a runtime histogram (a count per bucket) into Prometheus'
// form (cumulative counts per upper bound, in seconds).
func histogram(d *prometheus.Desc, h stream.Histogram, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cum uint64
	for i, b := range h.Bounds {
		if i < len(h.Counts) {
			cum += h.Counts[i]
		}
		buckets[b.Seconds()] = cum
	}
	return prometheus.MustNewConstHistogram(d, h.Count, h.Sum.Seconds(), buckets, labels...)
}
