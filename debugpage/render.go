package debugpage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// writeJSON and writeHTML render d in full before they write anything, so
// that a failure is a 500, not half a page. An error writing the response
// means the client went away: there is nobody to tell.

func writeJSON(w http.ResponseWriter, d pageData) {
	respond(w, "application/json", func(b *bytes.Buffer) error {
		enc := json.NewEncoder(b)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	})
}

func writeHTML(w http.ResponseWriter, d pageData) {
	respond(w, "text/html; charset=utf-8", func(b *bytes.Buffer) error { return page.Execute(b, d) })
}

// respond writes what render writes, as contentType, or a 500 that says
// what failed if it fails.
func respond(w http.ResponseWriter, contentType string, render func(*bytes.Buffer) error) {
	var b bytes.Buffer
	if err := render(&b); err != nil {
		http.Error(w, "debugpage: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	_, _ = b.WriteTo(w)
}

// Chart sizes, in CSS pixels. The top margin holds the GC marks, the
// bottom one the time axis and the legend.
const (
	chartW  = 560
	chartH  = 200
	marginL = 64
	marginR = 12
	marginT = 16
	marginB = 44
	plotW   = chartW - marginL - marginR
	plotH   = chartH - marginT - marginB
)

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"dueChart":       dueChart,
	"latenessChart":  latenessChart,
	"callbacksChart": callbacksChart,
	"pendingChart":   pendingChart,
	"executorChart":  executorChart,
	"lagChart":       lagChart,
	"shardChart":     shardChart,
	"keysChart":      keysChart,
	"outcomeChart":   outcomeChart,
	"shown":          func(d pageData) string { return dur(axisOf(d).span) },
	"dur":            func(s seconds) string { return dur(time.Duration(s)) },
	"n":              grouped[int],
	"total":          grouped[uint64],
	"lateness":       latenessLine,
	"stamp":          func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="{{.Refresh}}">
<title>timingwheel</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1em 2em; color: #222; }
h2 { margin-top: 1.5em; border-bottom: 1px solid #ccc; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
figure { margin: 0; }
figcaption { font-weight: 600; margin-bottom: .2em; }
figcaption span { font-weight: normal; color: #666; }
svg { background: #fafafa; border: 1px solid #ddd; }
svg text { font-size: 10px; fill: #444; }
.axis { stroke: #999; }
.grid { stroke: #e4e4e4; }
.bar { fill: #4a7ab5; }
.gc { stroke: #d08020; stroke-width: 1.5; }
.line { fill: none; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
td, th { padding: 1px 10px 1px 0; text-align: right; }
th { text-align: left; font-weight: normal; color: #555; }
.empty { fill: #999; font-size: 12px; }
</style>
</head>
<body>
<h1>timingwheel</h1>
<p>As of {{stamp .Time}}. Sampled every {{dur .Interval}} while this page is open; the charts show the last {{shown .}}
(at most {{dur .Window}}). The page refreshes every {{.Refresh}}s. <a href="json">JSON</a> of the same data.</p>
{{- $d := .}}
{{- range .Timers}}
<section class="timer" id="timer-{{.Name}}">
<h2>SystemTimer {{.Name}}</h2>
<table>
<tr><th>pending</th><td data-stat="pending">{{n .Stats.Pending}}</td><th>armed</th><td data-stat="armed">{{total .Stats.Armed}}</td><th>fired</th><td data-stat="fired">{{total .Stats.Fired}}</td><th>stopped</th><td data-stat="stopped">{{total .Stats.Stopped}}</td></tr>
<tr><th>backlog</th><td data-stat="backlog">{{n .Stats.Backlog}}</td><th>workers</th><td>{{n .Stats.Workers}}</td><th>helpers</th><td>{{n .Stats.Helpers}}</td><th>panics</th><td>{{total .Stats.Panics}}</td></tr>
<tr><th>lag</th><td data-stat="lag">{{dur .Stats.Lag}}</td><th>tick</th><td>{{dur .Stats.Tick}}</td><th>levels</th><td>{{n .Stats.Levels}}</td><th>rejected</th><td>{{total .Stats.Rejected}}</td></tr>
<tr><th>lateness since start</th><td colspan="7" style="text-align:left" data-stat="lateness">{{lateness .Stats.Lateness}}</td></tr>
</table>
<div class="charts">
{{latenessChart $d .}}
{{callbacksChart $d .}}
{{executorChart $d .}}
{{lagChart $d .}}
{{pendingChart $d .}}
{{dueChart .}}
{{shardChart .}}
</div>
</section>
{{- end}}
{{- range .Purgatories}}
<section class="purgatory" id="purgatory-{{.Name}}">
<h2>Purgatory {{.Name}}</h2>
<table>
<tr><th>delayed</th><td data-stat="delayed">{{n .Stats.Delayed}}</td><th>watched</th><td data-stat="watched">{{n .Stats.Watched}}</td><th>completed</th><td data-stat="completed">{{total .Stats.Completed}}</td><th>expired</th><td>{{total .Stats.Expired}}</td><th>purged</th><td>{{total .Stats.Purged}}</td></tr>
<tr><th>expiry lateness</th><td colspan="9" style="text-align:left" data-stat="lateness">{{lateness .Stats.Lateness}}</td></tr>
</table>
<div class="charts">
{{keysChart .}}
{{outcomeChart $d .}}
</div>
</section>
{{- end}}
{{- if not (or .Timers .Purgatories)}}
<p>Nothing added: call debugpage.Register or Handler.AddTimer.</p>
{{- end}}
</body>
</html>
`))

// Refresh is for the template.
func (d pageData) Refresh() int { return d.refresh }

// A figure wraps a chart in a figure with a caption, and a note under it.
func figure(id, caption, note string, svg string) template.HTML {
	return template.HTML(fmt.Sprintf(
		`<figure data-chart="%s"><figcaption>%s <span>%s</span></figcaption>`+
			`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">%s</svg></figure>`,
		id, esc(caption), esc(note), chartW, chartH, chartW, chartH, svg))
}

func esc(s string) string { return template.HTMLEscapeString(s) }

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// niceMax returns a round number at or above v: 1, 2 or 5 times a power
// of ten; 1 for v <= 0.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// bars draws vertical bars of values over labels, on a linear axis from 0.
func bars(b *strings.Builder, labels []string, values []float64, titles []string) {
	top := 0.0
	for _, v := range values {
		top = max(top, v)
	}
	top = niceMax(max(top, 1))
	label := countTicks(top/2, top)
	for _, f := range []float64{0, 0.5, 1} {
		y := float64(marginT) + float64(plotH)*(1-f)
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%d" y1="%s" y2="%s"/>`, marginL, marginL+plotW, f1(y), f1(y))
		fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="end">%s</text>`, marginL-4, f1(y+3), label(top*f))
	}
	w := float64(plotW) / float64(len(values))
	step := max(1, int(math.Ceil(28/w))) // a label every 28px at least
	for i, v := range values {
		x := float64(marginL) + w*float64(i)
		h := float64(plotH) * v / top
		fmt.Fprintf(b, `<rect class="bar" data-value="%g" x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`,
			v, f1(x+1), f1(float64(marginT+plotH)-h), f1(max(w-2, 1)), f1(h), esc(titles[i]))
		if i%step == 0 {
			fmt.Fprintf(b, `<text x="%s" y="%d" text-anchor="end" transform="rotate(-40 %s %d)">%s</text>`,
				f1(x+w/2), marginT+plotH+12, f1(x+w/2), marginT+plotH+12, esc(labels[i]))
		}
	}
	fmt.Fprintf(b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, marginL, marginL+plotW, marginT+plotH, marginT+plotH)
}

// short formats d, a bound of the due chart, in its largest unit that
// divides it: 500ms, 30s, 2m, 6h, 10d.
func short(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if d >= u.d && d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	return d.String()
}

// about writes an estimate of timers, rounded to a whole one.
func about(v float64) string { return grouped(int64(math.Round(v))) }

func dueChart(t timerData) template.HTML {
	labels := make([]string, len(t.Due))
	titles := make([]string, len(t.Due))
	for i := range t.Due {
		switch {
		case i == 0:
			labels[i] = "≤" + short(time.Duration(t.DueBounds[0]))
		case i == len(t.DueBounds):
			labels[i] = ">" + short(time.Duration(t.DueBounds[i-1]))
		default:
			labels[i] = short(time.Duration(t.DueBounds[i]))
		}
		titles[i] = fmt.Sprintf("due %s: about %s timers", labels[i], about(t.Due[i]))
		if i > 0 && i < len(t.DueBounds) {
			titles[i] = fmt.Sprintf("due in %s to %s: about %s timers", short(time.Duration(t.DueBounds[i-1])), labels[i], about(t.Due[i]))
		}
	}
	var b strings.Builder
	bars(&b, labels, t.Due, titles)
	return figure("due", "Pending timers by time to due", "(estimated from bucket counters; log axis)", b.String())
}

func shardChart(t timerData) template.HTML {
	labels := make([]string, len(t.Shards))
	values := make([]float64, len(t.Shards))
	titles := make([]string, len(t.Shards))
	for i, n := range t.Shards {
		labels[i] = strconv.Itoa(i)
		values[i] = float64(n)
		titles[i] = fmt.Sprintf("shard %d: %s timers", i, grouped(n))
	}
	var b strings.Builder
	bars(&b, labels, values, titles)
	return figure("shards", "Pending timers per shard", "(exact)", b.String())
}

func keysChart(p purgatoryData) template.HTML {
	var b strings.Builder
	if len(p.TopKeys) == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="%d" text-anchor="middle">no key watched</text>`, chartW/2, chartH/2)
		return figure("keys", "Watch-list entries per key", "(none)", b.String())
	}
	top := niceMax(float64(p.TopKeys[0].Watched))
	const left = 140
	h := min(float64(chartH-marginT-20)/float64(len(p.TopKeys)), 22)
	for i, kc := range p.TopKeys {
		y := float64(marginT) + h*float64(i)
		w := float64(chartW-left-marginR) * float64(kc.Watched) / top
		key := kc.Key
		if r := []rune(key); len(r) > 22 {
			key = string(r[:21]) + "…"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end">%s</text>`, left-4, f1(y+h*0.75), esc(key))
		fmt.Fprintf(&b, `<rect class="bar" data-value="%d" x="%d" y="%s" width="%s" height="%s"><title>%s: %s entries</title></rect>`,
			kc.Watched, left, f1(y+1), f1(w), f1(max(h-2, 1)), esc(kc.Key), grouped(kc.Watched))
	}
	y := chartH - 8
	fmt.Fprintf(&b, `<text x="%d" y="%d">0</text><text x="%d" y="%d" text-anchor="end">%s</text>`, left, y, chartW-marginR, y, countLabel(top))
	return figure("keys", "Watch-list entries per key", fmt.Sprintf("(top %d, stale entries included)", topKeys), b.String())
}

// A series is one line of a lineChart: a value per sample, NaN for none.
type series struct {
	name, color string
	dash        string  // stroke-dasharray; "" for a solid line
	width       float64 // stroke width
	v           []float64
}

// line returns a solid series of width 1.5, the usual.
func line(name, color string, n int) series {
	return series{name: name, color: color, width: 1.5, v: make([]float64, n)}
}

// timeAxis maps sample times to x over the span that ends at now.
type timeAxis struct {
	now  time.Time
	span time.Duration
}

func (a timeAxis) x(t time.Time) float64 {
	f := 1 - float64(a.now.Sub(t))/float64(a.span)
	return float64(marginL) + float64(plotW)*min(max(f, 0), 1)
}

// minSpan is the fewest intervals the time axis spans: the first samples
// show as the start of a history, not as lines across the chart.
const minSpan = 10

// axisOf returns the time axis of d's charts: it spans the history d
// holds, from its oldest sample to d's time, but at least minSpan
// intervals and at most the history's capacity (the window), so that the
// first minute of data fills the chart instead of a sliver of it.
func axisOf(d pageData) timeAxis {
	iv := time.Duration(d.Interval)
	oldest := d.Time
	for _, t := range d.Timers {
		if len(t.History) > 0 && t.History[0].T.Before(oldest) {
			oldest = t.History[0].T
		}
	}
	for _, p := range d.Purgatories {
		if len(p.History) > 0 && p.History[0].T.Before(oldest) {
			oldest = p.History[0].T
		}
	}
	return timeAxis{now: d.Time, span: min(max(d.Time.Sub(oldest), minSpan*iv), time.Duration(d.Window))}
}

// timeSteps are the distances between the time axis's marks.
var timeSteps = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// timeStep returns the smallest of timeSteps that puts at most 5 marks on
// a span, or the largest.
func timeStep(span time.Duration) time.Duration {
	for _, s := range timeSteps {
		if span/s <= 5 {
			return s
		}
	}
	return timeSteps[len(timeSteps)-1]
}

// A yScale is how a lineChart maps values to heights.
type yScale int

const (
	fromZero yScale = iota // linear, from 0 to a round number above the largest value
	fitted                 // linear, from a round number below the smallest count to one above the largest
	logScale               // logarithmic, over the powers of ten around the values
)

// yAxis returns the height of a value, and the ticks, of scale over the
// values lo to hi (lo the smallest above 0 for logScale; lo > hi when
// there are none).
func yAxis(scale yScale, lo, hi float64) (func(float64) float64, []float64) {
	plotY := func(f float64) float64 { return float64(marginT) + float64(plotH)*(1-f) }
	switch scale {
	case logScale:
		if lo > hi {
			lo, hi = 1e-6, 1e-3
		}
		l0, l1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if l1 <= l0 {
			l1 = l0 + 1
		}
		var ticks []float64
		for e := l0; e <= l1; e++ {
			ticks = append(ticks, math.Pow(10, e))
		}
		return func(v float64) float64 {
			return plotY((math.Log10(max(v, math.Pow(10, l0))) - l0) / (l1 - l0))
		}, ticks
	case fitted:
		if lo > hi {
			lo, hi = 0, 1
		}
		step := niceMax(max((hi-lo)/4, math.Abs(hi)*1e-3, 1)) // counts: a step of 1 at least
		bottom, top := math.Floor(lo/step)*step, math.Ceil(hi/step)*step
		if top == bottom {
			top += step
		}
		var ticks []float64
		for v := bottom; v <= top+step/2; v += step {
			ticks = append(ticks, v)
		}
		return func(v float64) float64 { return plotY((v - bottom) / (top - bottom)) }, ticks
	}
	top := niceMax(max(hi, 0))
	return func(v float64) float64 { return plotY(v / top) }, []float64{0, top / 2, top}
}

// A lineSpec is what a lineChart draws besides its series.
type lineSpec struct {
	scale yScale
	// axis labels the value axis, given its ticks; value writes a value
	// for the legend.
	axis  func(ticks []float64) func(float64) string
	value func(float64) string
}

// durations labels a value axis, and legend values, of seconds.
func durations([]float64) func(float64) string { return secs }

func secs(v float64) string { return dur(time.Duration(v * 1e9)) }

// counts labels a linear value axis of counts.
func counts(ticks []float64) func(float64) string {
	return countTicks(ticks[1]-ticks[0], ticks[len(ticks)-1])
}

// lineChart draws the series over the time axis a, each in its colour,
// the first on top, with a legend that gives each series' last value; a GC
// mark goes in the top margin at each sample whose interval saw a GC
// cycle end (gc, nil for none), so that it hides no line.
func lineChart(b *strings.Builder, a timeAxis, ts []time.Time, gc []uint64, ss []series, spec lineSpec) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, v := range s.v {
			if !math.IsNaN(v) && (v > 0 || spec.scale != logScale) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	y, ticks := yAxis(spec.scale, lo, hi)
	label := spec.axis(ticks)
	for _, v := range ticks {
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%d" y1="%s" y2="%s"/>`, marginL, marginL+plotW, f1(y(v)), f1(y(v)))
		fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="end">%s</text>`, marginL-4, f1(y(v)+3), label(v))
	}
	for i, t := range ts {
		if i < len(gc) && gc[i] > 0 {
			x := f1(a.x(t))
			fmt.Fprintf(b, `<line class="gc" x1="%s" x2="%s" y1="3" y2="%d"><title>%d GC cycle(s) ended</title></line>`, x, x, marginT-3, gc[i])
		}
	}
	step := timeStep(a.span)
	for d := step; d <= a.span; d += step {
		fmt.Fprintf(b, `<line class="grid" x1="%s" x2="%s" y1="%d" y2="%d"/>`, f1(a.x(a.now.Add(-d))), f1(a.x(a.now.Add(-d))), marginT, marginT+plotH)
		fmt.Fprintf(b, `<text class="time" x="%s" y="%d" text-anchor="middle">-%s</text>`, f1(a.x(a.now.Add(-d))), marginT+plotH+14, dur(d))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">now</text>`, marginL+plotW, marginT+plotH+14)
	fmt.Fprintf(b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, marginL, marginL+plotW, marginT+plotH, marginT+plotH)
	// The last series first, so that the first is drawn on top.
	for j := len(ss) - 1; j >= 0; j-- {
		s := ss[j]
		var p strings.Builder
		pen := "M"
		n := 0
		for i, v := range s.v {
			if math.IsNaN(v) {
				pen = "M"
				continue
			}
			fmt.Fprintf(&p, "%s%s %s ", pen, f1(a.x(ts[i])), f1(y(v)))
			pen = "L"
			n++
		}
		if n == 1 { // a single point: a dot, as a path would draw nothing
			for i, v := range s.v {
				if !math.IsNaN(v) {
					fmt.Fprintf(b, `<circle class="dot" cx="%s" cy="%s" r="2" fill="%s"/>`, f1(a.x(ts[i])), f1(y(v)), s.color)
				}
			}
		}
		fmt.Fprintf(b, `<path class="line" data-series="%s" data-points="%d" data-last="%g" stroke="%s" stroke-width="%g"%s d="%s"/>`,
			esc(s.name), n, last(s.v), s.color, s.width, dashAttr(s.dash), strings.TrimSpace(p.String()))
	}
	lx := marginL
	for _, s := range ss {
		text := s.name
		if v := last(s.v); !math.IsNaN(v) {
			text += " " + spec.value(v)
		}
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="%g"%s/><text class="legend" x="%d" y="%d">%s</text>`,
			lx, lx+14, chartH-9, chartH-9, s.color, max(s.width, 2), dashAttr(s.dash), lx+17, chartH-6, esc(text))
		lx += 17 + 6*len([]rune(text)) + 12
	}
	if hasGC(gc) {
		fmt.Fprintf(b, `<line class="gc" x1="%d" x2="%d" y1="%d" y2="%d"/><text x="%d" y="%d">GC</text>`, lx+4, lx+4, chartH-13, chartH-4, lx+9, chartH-6)
	}
	if len(ts) == 0 {
		fmt.Fprintf(b, `<text class="empty" x="%d" y="%d" text-anchor="middle">sampling: the history fills in as the page refreshes</text>`, marginL+plotW/2, marginT+plotH/2)
	}
}

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return ` stroke-dasharray="` + dash + `"`
}

// last returns the last value of v, NaN if none.
func last(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	return v[len(v)-1]
}

func hasGC(gc []uint64) bool {
	for _, n := range gc {
		if n > 0 {
			return true
		}
	}
	return false
}

// timerSeries returns the times and GC counts of t's history, and the
// series ss with the figures f picks of each sample.
func timerSeries(t timerData, ss []series, f func(p timerPoint) []float64) ([]time.Time, []uint64, []series) {
	ts := make([]time.Time, len(t.History))
	gc := make([]uint64, len(t.History))
	for i, p := range t.History {
		ts[i], gc[i] = p.T, p.GC
		for j, v := range f(p) {
			ss[j].v[i] = v
		}
	}
	return ts, gc, ss
}

func latenessChart(d pageData, t timerData) template.HTML {
	n := len(t.History)
	// The max dashed and wider, under p99.9, which often equals it: both
	// show where they meet.
	mx := series{name: "max", color: "#c03030", dash: "5 3", width: 3, v: make([]float64, n)}
	ts, gc, ss := timerSeries(t, []series{line("p50", "#3a7d3a", n), line("p99", "#4a7ab5", n), line("p99.9", "#8a4ab5", n), mx},
		func(p timerPoint) []float64 {
			if p.N == 0 {
				none := math.NaN()
				return []float64{none, none, none, none}
			}
			return []float64{time.Duration(p.P50).Seconds(), time.Duration(p.P99).Seconds(), time.Duration(p.P999).Seconds(), time.Duration(p.Max).Seconds()}
		})
	var b strings.Builder
	lineChart(&b, axisOf(d), ts, gc, ss, lineSpec{scale: logScale, axis: durations, value: secs})
	return figure("lateness", "Callback lateness", fmt.Sprintf("(per %s, log axis; marks on top: GC cycles)", dur(time.Duration(d.Interval))), b.String())
}

func callbacksChart(d pageData, t timerData) template.HTML {
	iv := time.Duration(d.Interval).Seconds()
	ts, _, ss := timerSeries(t, []series{line("callbacks/s", "#3a7d3a", len(t.History))},
		func(p timerPoint) []float64 { return []float64{float64(p.N) / iv} })
	var b strings.Builder
	lineChart(&b, axisOf(d), ts, nil, ss, lineSpec{scale: fromZero, axis: counts, value: about})
	return figure("callbacks", "Callbacks per second", fmt.Sprintf("(started, averaged over each %s)", dur(time.Duration(d.Interval))), b.String())
}

func pendingChart(d pageData, t timerData) template.HTML {
	ts, _, ss := timerSeries(t, []series{line("pending", "#4a7ab5", len(t.History))},
		func(p timerPoint) []float64 { return []float64{float64(p.Pending)} })
	var b strings.Builder
	lineChart(&b, axisOf(d), ts, nil, ss, lineSpec{scale: fitted, axis: counts, value: about})
	return figure("pending", "Pending timers", "(axis fitted to the values: a steady climb is a leak)", b.String())
}

func executorChart(d pageData, t timerData) template.HTML {
	n := len(t.History)
	ts, gc, ss := timerSeries(t, []series{line("backlog", "#4a7ab5", n), line("helpers", "#c03030", n)},
		func(p timerPoint) []float64 { return []float64{float64(p.Backlog), float64(p.Helpers)} })
	var b strings.Builder
	lineChart(&b, axisOf(d), ts, gc, ss, lineSpec{scale: fromZero, axis: counts, value: about})
	return figure("executor", "Executor backlog and helpers", fmt.Sprintf("(%s workers)", grouped(t.Stats.Workers)), b.String())
}

func lagChart(d pageData, t timerData) template.HTML {
	ts, gc, ss := timerSeries(t, []series{line("lag", "#8a4ab5", len(t.History))},
		func(p timerPoint) []float64 { return []float64{time.Duration(p.Lag).Seconds()} })
	var b strings.Builder
	lineChart(&b, axisOf(d), ts, gc, ss, lineSpec{scale: fromZero, axis: durations, value: secs})
	return figure("lag", "Driver lag", fmt.Sprintf("(tick %s)", dur(time.Duration(t.Stats.Tick))), b.String())
}

func outcomeChart(d pageData, p purgatoryData) template.HTML {
	n := len(p.History)
	ts := make([]time.Time, n)
	ss := []series{line("completed in time", "#3a7d3a", n), line("expired", "#c03030", n)}
	for i, pt := range p.History {
		ts[i] = pt.T
		ss[0].v[i] = float64(pt.Completed - pt.Expired)
		ss[1].v[i] = float64(pt.Expired)
	}
	var b strings.Builder
	lineChart(&b, axisOf(d), ts, nil, ss, lineSpec{scale: fromZero, axis: counts, value: about})
	return figure("outcomes", "Operations completed and expired", fmt.Sprintf("(per %s)", dur(time.Duration(d.Interval))), b.String())
}
