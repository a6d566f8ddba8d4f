package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

var contenderColor = map[string]string{raw: "#9e9e9e", kgen: "#1f77b4", kstreams: "#ff7f0e"}

// panel is one bar chart: a value per workload and contender.
type panel struct {
	title string
	unit  string
	get   func(*entry) *stat
	scale float64 // divide values by this
}

// svg draws, for each measured guarantee, bar charts of throughput, CPU per
// million records and peak RSS per workload and contender (medians, with
// min–max whiskers).
func (rep *report) svg() string {
	panels := []panel{
		{"Throughput", "records/s", func(e *entry) *stat { return e.RecordsPerSec }, 1},
		{"CPU per million records", "CPU seconds", func(e *entry) *stat { return e.CPUSecPerMillion }, 1},
		{"Peak RSS", "MiB", func(e *entry) *stat { return e.PeakRSSBytes }, 1 << 20},
	}
	var guarantees, workloads, contenders []string
	for _, e := range rep.Entries {
		if e.Status == "n/a" || e.RecordsPerSec == nil {
			continue
		}
		guarantees = appendNew(guarantees, e.Guarantee)
		workloads = appendNew(workloads, e.Workload)
		contenders = appendNew(contenders, e.Contender)
	}
	// Small multiples: one row per guarantee and metric, one column per
	// workload, each chart with its own scale (source-only is far faster
	// than the rest).
	const (
		width  = 1000
		chartH = 200
		top    = 76
		left   = 20
		gap    = 58 // room for each chart's axis labels
		rowGap = 58
	)
	cols := max(len(workloads), 1)
	colW := (width - left) / cols
	rows := len(guarantees) * len(panels)
	height := top + rows*(chartH+rowGap) + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold">kgen benchmark, %s</text>`+"\n", left, html.EscapeString(rep.StartedAt))
	if rep.Source != nil {
		fmt.Fprintf(&b, `<text x="%d" y="42" fill="#555">%s records of %d bytes, %d runs, parallelism %d; bars are medians, whiskers min–max; each chart has its own scale</text>`+"\n",
			left, thousands(float64(rep.Settings.Records)), rep.Settings.ValueSize, rep.Settings.Runs, rep.Settings.Parallelism)
	}
	for i, ct := range contenders {
		x := width - 110*(len(contenders)-i)
		fmt.Fprintf(&b, `<rect x="%d" y="52" width="12" height="12" fill="%s"/><text x="%d" y="62">%s</text>`+"\n", x, contenderColor[ct], x+16, ct)
	}
	row := 0
	for _, g := range guarantees {
		for _, p := range panels {
			y0 := top + row*(chartH+rowGap)
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">%s (%s), %s</text>`+"\n", left, y0+12, p.title, p.unit, g)
			for wi, w := range workloads {
				x0 := left + wi*colW + gap
				plotW := colW - gap - 14
				maxV := 0.0
				for _, ct := range contenders {
					if e := rep.entry(w, ct, g); e != nil && p.get(e) != nil {
						maxV = math.Max(maxV, p.get(e).Max/p.scale)
					}
				}
				maxV = niceCeil(maxV)
				plotTop, plotBottom := float64(y0+28), float64(y0+chartH)
				y := func(v float64) float64 { return plotBottom - (plotBottom-plotTop)*v/maxV }
				for i := 0; i <= 4; i++ {
					v := maxV * float64(i) / 4
					fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", x0, x0+plotW, y(v), y(v))
					fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555" font-size="10">%s</text>`+"\n", x0-4, y(v)+3, short(v))
				}
				barW := float64(plotW) * 0.8 / float64(max(len(contenders), 1))
				for ci, ct := range contenders {
					e := rep.entry(w, ct, g)
					if e == nil || p.get(e) == nil {
						continue
					}
					s := p.get(e)
					x := float64(x0) + float64(plotW)*0.1 + barW*float64(ci)
					m := s.Median / p.scale
					fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s %s</title></rect>`+"\n",
						x, y(m), barW-3, plotBottom-y(m), contenderColor[ct], ct, w, short(m), p.unit)
					cx := x + (barW-3)/2
					fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`+"\n", cx, cx, y(s.Min/p.scale), y(s.Max/p.scale))
					fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n", cx, y(s.Max/p.scale)-3, short(m))
				}
				fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#333"/>`+"\n", x0, x0+plotW, plotBottom, plotBottom)
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", float64(x0)+float64(plotW)/2, plotBottom+16, w)
			}
			row++
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// short formats a number with a k or M suffix.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.3gk", v/1e3)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.2g", v)
}
