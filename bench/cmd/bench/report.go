package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/bench/internal/protocol"
)

type report struct {
	Version    int         `json:"version"`
	RunID      string      `json:"run_id"`
	StartedAt  string      `json:"started_at"`
	FinishedAt string      `json:"finished_at"`
	Mode       string      `json:"mode"`
	Machine    machine     `json:"machine"`
	Settings   settings    `json:"settings"`
	Source     *source     `json:"source,omitempty"`
	Skipped    []skipped   `json:"skipped,omitempty"`
	Entries    []entry     `json:"results"`
	Ratios     []ratios    `json:"ratios"`
	Targets    []target    `json:"targets"`
	Runs       []runRecord `json:"runs"`

	unsupported map[string]string
}

type machine struct {
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
	Java      string `json:"java,omitempty"`
}

type settings struct {
	Records             int64    `json:"records"`
	RestoreEntries      int64    `json:"restore_entries,omitempty"`
	ValueSize           int      `json:"value_size"`
	Runs                int      `json:"runs"`
	Parallelism         int      `json:"parallelism"`
	Partitions          int      `json:"partitions"`
	Keys                int      `json:"keys"`
	ZipfS               float64  `json:"zipf_s"`
	CommitIntervalMs    int64    `json:"commit_interval_ms"`
	EOSCommitIntervalMs int64    `json:"eos_commit_interval_ms"`
	Store               string   `json:"store"`
	JavaOpts            string   `json:"java_opts"`
	Workloads           []string `json:"workloads"`
	Contenders          []string `json:"contenders"`
	Guarantees          []string `json:"guarantees"`
	Compression         string   `json:"compression"`
}

type skipped struct {
	Guarantee string `json:"guarantee"`
	Reason    string `json:"reason"`
}

// stat is the median and spread of one metric over the successful runs.
type stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func statOf(xs []float64) *stat {
	if len(xs) == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return &stat{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// entry is one workload, contender and guarantee over all its runs.
type entry struct {
	Workload  string `json:"workload"`
	Contender string `json:"contender"`
	Guarantee string `json:"guarantee"`
	// Status: ok (every run verified), partial (some runs failed; the
	// figures are of the verified ones), failed, or n/a.
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`
	Store  string `json:"store,omitempty"`
	Runs   int    `json:"runs"`
	OK     int    `json:"ok"`

	RecordsPerSec    *stat `json:"records_per_sec,omitempty"`
	MBPerSec         *stat `json:"mb_per_sec,omitempty"`
	CPUSecPerMillion *stat `json:"cpu_sec_per_million,omitempty"`
	// ProcessingCPUSecPerMillion: CPU from the first record to the end of
	// the work only (see runRecord).
	ProcessingCPUSecPerMillion *stat `json:"processing_cpu_sec_per_million,omitempty"`
	PeakRSSBytes               *stat `json:"peak_rss_bytes,omitempty"`
	FirstOutputMs              *stat `json:"first_output_ms,omitempty"`
}

// ratios compares kgen's medians with another contender's, within one run
// of the harness. Above 1 is better for kgen on throughput and records per
// CPU second; below 1 is better on peak RSS and time to first output.
type ratios struct {
	Workload         string  `json:"workload"`
	Guarantee        string  `json:"guarantee"`
	Versus           string  `json:"versus"` // raw or kstreams
	RecordsPerSec    float64 `json:"records_per_sec"`
	RecordsPerCPUSec float64 `json:"records_per_cpu_sec"`
	// RecordsPerProcessingCPUSec compares CPU spent processing only.
	RecordsPerProcessingCPUSec float64 `json:"records_per_processing_cpu_sec"`
	PeakRSS                    float64 `json:"peak_rss"`
	FirstOutput                float64 `json:"first_output"`
}

// target is one of the goals of issue 6, checked against this run.
type target struct {
	Goal   string  `json:"goal"`
	Value  float64 `json:"value"`
	Met    bool    `json:"met"`
	Detail string  `json:"detail"`
}

func (rep *report) entry(w, ct, g string) *entry {
	for i := range rep.Entries {
		if e := &rep.Entries[i]; e.Workload == w && e.Contender == ct && e.Guarantee == g {
			return e
		}
	}
	return nil
}

func (rep *report) summarize(runs []runRecord, o *options, guarantees []string) {
	rep.Runs = runs
	if rep.Runs == nil {
		rep.Runs = []runRecord{}
	}
	rep.Ratios, rep.Targets = []ratios{}, []target{}
	for _, g := range guarantees {
		for _, w := range o.workloads {
			for _, ct := range o.contenders {
				e := entry{Workload: w, Contender: ct, Guarantee: g}
				var rps, mbs, cpu, pcpu, rss, first []float64
				var errs []string
				for _, r := range runs {
					if r.Workload != w || r.Contender != ct || r.Guarantee != g {
						continue
					}
					e.Runs++
					if r.Store != "" {
						e.Store = r.Store
					}
					switch r.Status {
					case "ok":
						e.OK++
						rps = append(rps, r.RecordsPerSec)
						mbs = append(mbs, r.MBPerSec)
						cpu = append(cpu, r.CPUSecPerMillion)
						if r.ProcessingCPUSecPerMillion > 0 {
							pcpu = append(pcpu, r.ProcessingCPUSecPerMillion)
						}
						rss = append(rss, float64(r.PeakRSSBytes))
						first = append(first, r.FirstOutputMs)
					case "n/a":
						e.Note = r.Error
					default:
						errs = append(errs, fmt.Sprintf("run %d: %s", r.Run, r.Error))
					}
				}
				e.RecordsPerSec, e.MBPerSec, e.CPUSecPerMillion = statOf(rps), statOf(mbs), statOf(cpu)
				e.PeakRSSBytes, e.FirstOutputMs = statOf(rss), statOf(first)
				e.ProcessingCPUSecPerMillion = statOf(pcpu)
				switch {
				case e.Note != "" && e.OK == 0:
					e.Status = "n/a"
				case e.OK == e.Runs && e.Runs > 0:
					e.Status = "ok"
				case e.OK > 0:
					e.Status = "partial"
				default:
					e.Status = "failed"
				}
				if len(errs) > 0 {
					e.Note = strings.Join(errs, "; ")
				}
				rep.Entries = append(rep.Entries, e)
			}
		}
		for _, w := range o.workloads {
			k := rep.entry(w, kgen, g)
			for _, other := range []string{raw, kstreams} {
				x := rep.entry(w, other, g)
				if k == nil || x == nil || k.RecordsPerSec == nil || x.RecordsPerSec == nil {
					continue
				}
				ra := ratios{
					Workload: w, Guarantee: g, Versus: other,
					RecordsPerSec:    k.RecordsPerSec.Median / x.RecordsPerSec.Median,
					RecordsPerCPUSec: x.CPUSecPerMillion.Median / k.CPUSecPerMillion.Median,
					PeakRSS:          k.PeakRSSBytes.Median / x.PeakRSSBytes.Median,
					FirstOutput:      k.FirstOutputMs.Median / x.FirstOutputMs.Median,
				}
				if k.ProcessingCPUSecPerMillion != nil && x.ProcessingCPUSecPerMillion != nil {
					ra.RecordsPerProcessingCPUSec = x.ProcessingCPUSecPerMillion.Median / k.ProcessingCPUSecPerMillion.Median
				}
				rep.Ratios = append(rep.Ratios, ra)
			}
			// An operator workload against its processor form, both kgen.
			if form := protocol.ProcessorForm(w); form != w {
				p := rep.entry(form, kgen, g)
				if k == nil || p == nil || k.RecordsPerSec == nil || p.RecordsPerSec == nil {
					continue
				}
				ra := ratios{
					Workload: w, Guarantee: g, Versus: processorForm,
					RecordsPerSec:    k.RecordsPerSec.Median / p.RecordsPerSec.Median,
					RecordsPerCPUSec: p.CPUSecPerMillion.Median / k.CPUSecPerMillion.Median,
					PeakRSS:          k.PeakRSSBytes.Median / p.PeakRSSBytes.Median,
					FirstOutput:      k.FirstOutputMs.Median / p.FirstOutputMs.Median,
				}
				if k.ProcessingCPUSecPerMillion != nil && p.ProcessingCPUSecPerMillion != nil {
					ra.RecordsPerProcessingCPUSec = p.ProcessingCPUSecPerMillion.Median / k.ProcessingCPUSecPerMillion.Median
				}
				rep.Ratios = append(rep.Ratios, ra)
			}
		}
	}
	for _, ra := range rep.Ratios {
		at := fmt.Sprintf("%s, %s", ra.Workload, ra.Guarantee)
		if ra.Versus == raw && ra.Workload == "passthrough" {
			rep.Targets = append(rep.Targets, target{Goal: "kgen ≥ 0.85× raw throughput on passthrough", Value: ra.RecordsPerSec, Met: ra.RecordsPerSec >= 0.85, Detail: at})
		}
		if ra.Versus == raw && ra.Workload == "repartition-count" {
			rep.Targets = append(rep.Targets, target{Goal: "kgen ≥ 0.5× raw throughput on repartition-count (issue 10)", Value: ra.RecordsPerSec, Met: ra.RecordsPerSec >= 0.5, Detail: at})
		}
		if ra.Versus == processorForm {
			rep.Targets = append(rep.Targets, target{Goal: "operator form ≥ 0.9× the processor form's throughput (issue 11)", Value: ra.RecordsPerSec, Met: ra.RecordsPerSec >= 0.9, Detail: at})
		}
		if ra.Versus == kstreams && protocol.ProcessorForm(ra.Workload) != ra.Workload {
			rep.Targets = append(rep.Targets, target{Goal: "operator form ≥ 5× Kafka Streams' DSL records per CPU second (issue 11)", Value: ra.RecordsPerCPUSec, Met: ra.RecordsPerCPUSec >= 5, Detail: at})
		}
		if ra.Versus == kstreams && protocol.IsWindowed(ra.Workload) {
			rep.Targets = append(rep.Targets, target{Goal: "kgen ≥ 5× Kafka Streams' records per CPU second on the windowed counts (issue 18)", Value: ra.RecordsPerCPUSec, Met: ra.RecordsPerCPUSec >= 5, Detail: at})
		}
		if ra.Versus == kstreams && protocol.IsJoin(ra.Workload) {
			rep.Targets = append(rep.Targets, target{Goal: "kgen ≥ 5× (aim 10×) Kafka Streams' records per CPU second on the joins (issue 19)", Value: ra.RecordsPerCPUSec, Met: ra.RecordsPerCPUSec >= 5, Detail: at})
		}
		if ra.Versus == raw && protocol.IsRestore(ra.Workload) {
			rep.Targets = append(rep.Targets, target{Goal: "kgen restores at ≥ 0.5× a raw franz-go read of the changelog (issue 18)", Value: ra.RecordsPerSec, Met: ra.RecordsPerSec >= 0.5, Detail: at})
		}
		if ra.Versus == kstreams && ra.Workload == "repartition-count" {
			rep.Targets = append(rep.Targets, target{Goal: "kgen ≥ 5× Kafka Streams' records per CPU second on repartition-count (issue 10)", Value: ra.RecordsPerCPUSec, Met: ra.RecordsPerCPUSec >= 5, Detail: at})
		}
		if ra.Versus == kstreams {
			rep.Targets = append(rep.Targets,
				target{Goal: "kgen ≥ 2× Kafka Streams' records per CPU second", Value: ra.RecordsPerCPUSec, Met: ra.RecordsPerCPUSec >= 2, Detail: at},
				target{Goal: "kgen ≤ 1/4 of Kafka Streams' peak RSS", Value: ra.PeakRSS, Met: ra.PeakRSS <= 0.25, Detail: at},
				target{Goal: "kgen's time to first output ≤ 1/10 of Kafka Streams'", Value: ra.FirstOutput, Met: ra.FirstOutput <= 0.1, Detail: at},
			)
		}
	}
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// cell formats a stat as "median (min–max)".
func cell(s *stat, format func(float64) string) string {
	if s == nil {
		return "–"
	}
	if s.Min == s.Max {
		return format(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", format(s.Median), format(s.Min), format(s.Max))
}

func thousands(v float64) string {
	n := int64(math.Round(v))
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (rep *report) markdown() string {
	var b strings.Builder
	st := rep.Settings
	fmt.Fprintf(&b, "\n## kgen benchmark (%s, %s)\n\n", rep.Mode, rep.StartedAt)
	if rep.Source != nil {
		fmt.Fprintf(&b, "%s records (%d-byte values, %d keys, Zipf s=%g, %d partitions, %.1f MB), %d runs each, parallelism %d, commit interval %d ms (exactly-once %d ms), stores %s, no store caches, producer compression none; %d CPUs, %s, %s.\n\n",
			thousands(float64(st.Records)), st.ValueSize, st.Keys, st.ZipfS, st.Partitions, float64(rep.Source.Bytes)/1e6,
			st.Runs, st.Parallelism, st.CommitIntervalMs, st.EOSCommitIntervalMs, st.Store, rep.Machine.CPUs, rep.Machine.GoVersion, rep.Machine.Java)
	}
	if rep.Source != nil && rep.Source.SpanMs > 0 {
		fmt.Fprintf(&b, "Event times span %.0f minutes, evenly spaced in production order; windowed counts: tumbling %v windows, grace %v, %s (key, window) pairs, %s of them close. Restores: %s changelog entries.\n\n",
			float64(rep.Source.SpanMs)/60000, protocol.WindowSize, protocol.WindowGrace, thousands(float64(rep.Source.Windows)), thousands(float64(rep.Source.ClosedWindows)), thousands(float64(st.RestoreEntries)))
	}
	b.WriteString("Median (min–max). Throughput: first input record to last output acknowledged (exactly-once: to the source's offsets seen committed; restores: changelog records restored, from the start of the restore to its end). CPU: user+sys per million records (restores: per million entries), of the whole process (rusage) and of the processing only (first record to done). First output: process start to first output acknowledged (source-only at-least-once: first record processed; restores: restore done).\n\n")
	b.WriteString("| workload | guarantee | contender | records/s | MB/s | CPU s / M (process) | CPU s / M (processing) | peak RSS | first output | runs ok |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, e := range rep.Entries {
		ok := fmt.Sprintf("%d/%d", e.OK, e.Runs)
		if e.Status == "n/a" {
			fmt.Fprintf(&b, "| %s | %s | %s | n/a | | | | | | %s |\n", e.Workload, e.Guarantee, e.Contender, e.Note)
			continue
		}
		if e.Status != "ok" {
			ok += " ⚠"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", e.Workload, e.Guarantee, e.Contender,
			cell(e.RecordsPerSec, thousands),
			cell(e.MBPerSec, func(v float64) string { return fmt.Sprintf("%.1f", v) }),
			cell(e.CPUSecPerMillion, func(v float64) string { return fmt.Sprintf("%.2f", v) }),
			cell(e.ProcessingCPUSecPerMillion, func(v float64) string { return fmt.Sprintf("%.2f", v) }),
			cell(e.PeakRSSBytes, func(v float64) string { return mib(int64(v)) }),
			cell(e.FirstOutputMs, func(v float64) string { return fmt.Sprintf("%.0f ms", v) }),
			ok)
	}
	if len(rep.Ratios) > 0 {
		b.WriteString("\nRatios of medians, kgen / other (throughput and records per CPU second: higher is better for kgen; RSS and first output: lower is better).\n\n")
		b.WriteString("| workload | guarantee | versus | records/s | records per CPU s (process) | records per CPU s (processing) | peak RSS | first output |\n")
		b.WriteString("|---|---|---|---:|---:|---:|---:|---:|\n")
		for _, r := range rep.Ratios {
			fmt.Fprintf(&b, "| %s | %s | kgen / %s | %.2f× | %.2f× | %.2f× | %.2f× | %.2f× |\n",
				r.Workload, r.Guarantee, r.Versus, r.RecordsPerSec, r.RecordsPerCPUSec, r.RecordsPerProcessingCPUSec, r.PeakRSS, r.FirstOutput)
		}
	}
	if len(rep.Targets) > 0 {
		b.WriteString("\nTargets (issues 6, 10, 11, 18):\n\n")
		for _, t := range rep.Targets {
			mark := "MISSED"
			if t.Met {
				mark = "met"
			}
			fmt.Fprintf(&b, "- %s: %.2f× (%s) — %s\n", t.Goal, t.Value, t.Detail, mark)
		}
	}
	var failures []string
	for _, e := range rep.Entries {
		if (e.Status == "failed" || e.Status == "partial") && e.Note != "" {
			failures = append(failures, fmt.Sprintf("- %s / %s / %s: %s", e.Workload, e.Contender, e.Guarantee, e.Note))
		}
	}
	if len(failures) > 0 {
		b.WriteString("\nFailed runs (not in the figures):\n\n" + strings.Join(failures, "\n") + "\n")
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(&b, "\n%s pass: n/a (%s)\n", s.Guarantee, s.Reason)
	}
	return b.String()
}

// write saves the JSON results, the table and the plot under dir, as
// <run id>.* and as latest.*.
func (rep *report) write(dir, runID, table string) error {
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{
		".json": append(js, '\n'),
		".md":   []byte(table),
		".svg":  []byte(rep.svg()),
	}
	for ext, data := range files {
		for _, name := range []string{runID + ext, "latest" + ext} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(os.Stderr, "bench: results in %s (.json, .md, .svg; logs in %s/)\n", filepath.Join(dir, runID), filepath.Join(dir, runID))
	return nil
}
