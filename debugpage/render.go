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

// Chart sizes, in CSS pixels.
const (
	chartW  = 560
	chartH  = 200
	marginL = 64
	marginR = 12
	marginT = 12
	marginB = 44
	plotW   = chartW - marginL - marginR
	plotH   = chartH - marginT - marginB
)

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"dueChart":      dueChart,
	"latenessChart": latenessChart,
	"executorChart": executorChart,
	"lagChart":      lagChart,
	"shardChart":    shardChart,
	"keysChart":     keysChart,
	"outcomeChart":  outcomeChart,
	"window":        func(d pageData) time.Duration { return time.Duration(d.Interval) * samples },
	"dur":           func(s seconds) time.Duration { return time.Duration(s) },
	"lateness": func(h histogram) string {
		if h.Count == 0 {
			return "empty"
		}
		return fmt.Sprintf("n=%d p50=%v p99=%v p99.9=%v max=%v", h.Count,
			time.Duration(h.P50), time.Duration(h.P99), time.Duration(h.P999), time.Duration(h.Max))
	},
	"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
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
.gc { stroke: #d08020; stroke-dasharray: 3 2; }
.line { fill: none; stroke-width: 1.5; }
table { border-collapse: collapse; }
td, th { padding: 1px 10px 1px 0; text-align: right; }
th { text-align: left; font-weight: normal; color: #555; }
.empty { fill: #999; font-size: 12px; }
</style>
</head>
<body>
<h1>timingwheel</h1>
<p>As of {{stamp .Time}}. Sampled every {{dur .Interval}} while this page is open, over the last {{window .}};
the page refreshes every {{.Refresh}}s. <a href="json">JSON</a> of the same data.</p>
{{- $d := .}}
{{- range .Timers}}
<section class="timer" id="timer-{{.Name}}">
<h2>SystemTimer {{.Name}}</h2>
<table>
<tr><th>pending</th><td data-stat="pending">{{.Stats.Pending}}</td><th>armed</th><td>{{.Stats.Armed}}</td><th>fired</th><td>{{.Stats.Fired}}</td><th>stopped</th><td>{{.Stats.Stopped}}</td></tr>
<tr><th>backlog</th><td data-stat="backlog">{{.Stats.Backlog}}</td><th>workers</th><td>{{.Stats.Workers}}</td><th>helpers</th><td>{{.Stats.Helpers}}</td><th>panics</th><td>{{.Stats.Panics}}</td></tr>
<tr><th>lag</th><td>{{dur .Stats.Lag}}</td><th>tick</th><td>{{dur .Stats.Tick}}</td><th>levels</th><td>{{.Stats.Levels}}</td><th>rejected</th><td>{{.Stats.Rejected}}</td></tr>
<tr><th>lateness since start</th><td colspan="7" style="text-align:left">{{lateness .Stats.Lateness}}</td></tr>
</table>
<div class="charts">
{{dueChart .}}
{{latenessChart $d .}}
{{executorChart $d .}}
{{lagChart $d .}}
{{shardChart .}}
</div>
</section>
{{- end}}
{{- range .Purgatories}}
<section class="purgatory" id="purgatory-{{.Name}}">
<h2>Purgatory {{.Name}}</h2>
<table>
<tr><th>delayed</th><td data-stat="delayed">{{.Stats.Delayed}}</td><th>watched</th><td data-stat="watched">{{.Stats.Watched}}</td><th>completed</th><td>{{.Stats.Completed}}</td><th>expired</th><td>{{.Stats.Expired}}</td><th>purged</th><td>{{.Stats.Purged}}</td></tr>
<tr><th>expiry lateness</th><td colspan="9" style="text-align:left">{{lateness .Stats.Lateness}}</td></tr>
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

// countLabel formats a count for an axis: 1500 as 1.5k.
func countLabel(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// bars draws vertical bars of values over labels, on a linear axis from 0.
func bars(b *strings.Builder, labels []string, values []float64, titles []string) {
	top := 0.0
	for _, v := range values {
		top = max(top, v)
	}
	top = niceMax(max(top, 1))
	for _, f := range []float64{0, 0.5, 1} {
		y := float64(marginT) + float64(plotH)*(1-f)
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%d" y1="%s" y2="%s"/>`, marginL, marginL+plotW, f1(y), f1(y))
		fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="end">%s</text>`, marginL-4, f1(y+3), countLabel(top*f))
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

// short formats d, a bound of the due chart, in its largest unit: 500ms,
// 30s, 2m, 6h, 10d.
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
		titles[i] = fmt.Sprintf("due %s: about %.0f timers", labels[i], t.Due[i])
		if i > 0 && i < len(t.DueBounds) {
			titles[i] = fmt.Sprintf("due in %s to %s: about %.0f timers", short(time.Duration(t.DueBounds[i-1])), labels[i], t.Due[i])
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
		titles[i] = fmt.Sprintf("shard %d: %d timers", i, n)
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
		fmt.Fprintf(&b, `<rect class="bar" data-value="%d" x="%d" y="%s" width="%s" height="%s"><title>%s: %d entries</title></rect>`,
			kc.Watched, left, f1(y+1), f1(w), f1(max(h-2, 1)), esc(kc.Key), kc.Watched)
	}
	y := chartH - 8
	fmt.Fprintf(&b, `<text x="%d" y="%d">0</text><text x="%d" y="%d" text-anchor="end">%s</text>`, left, y, chartW-marginR, y, countLabel(top))
	return figure("keys", "Watch-list entries per key", fmt.Sprintf("(top %d, stale entries included)", topKeys), b.String())
}

// A series is one line of a lineChart: a value per sample, NaN for none.
type series struct {
	name, color string
	v           []float64
}

// timeAxis maps sample times to x over the window that ends at now.
type timeAxis struct {
	now    time.Time
	window time.Duration
}

func (a timeAxis) x(t time.Time) float64 {
	f := 1 - float64(a.now.Sub(t))/float64(a.window)
	return float64(marginL) + float64(plotW)*min(max(f, 0), 1)
}

// lineChart draws the series over the window on a linear axis from 0, or a
// log one if log; label formats the axis; a GC mark goes at each sample
// whose interval saw a GC cycle end.
func lineChart(b *strings.Builder, a timeAxis, ts []time.Time, gc []uint64, ss []series, log bool, label func(float64) string) {
	lo, hi := math.Inf(1), 0.0
	for _, s := range ss {
		for _, v := range s.v {
			if !math.IsNaN(v) {
				hi = max(hi, v)
				if v > 0 {
					lo = min(lo, v)
				}
			}
		}
	}
	var y func(float64) float64
	var ticks []float64
	if log {
		if math.IsInf(lo, 1) {
			lo, hi = 1e-6, 1e-3
		}
		l0, l1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if l1 <= l0 {
			l1 = l0 + 1
		}
		y = func(v float64) float64 {
			f := (math.Log10(max(v, math.Pow(10, l0))) - l0) / (l1 - l0)
			return float64(marginT) + float64(plotH)*(1-f)
		}
		for e := l0; e <= l1; e++ {
			ticks = append(ticks, math.Pow(10, e))
		}
	} else {
		top := niceMax(hi)
		y = func(v float64) float64 { return float64(marginT) + float64(plotH)*(1-v/top) }
		ticks = []float64{0, top / 2, top}
	}
	for _, v := range ticks {
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%d" y1="%s" y2="%s"/>`, marginL, marginL+plotW, f1(y(v)), f1(y(v)))
		fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="end">%s</text>`, marginL-4, f1(y(v)+3), label(v))
	}
	for i, t := range ts {
		if gc[i] > 0 {
			x := f1(a.x(t))
			fmt.Fprintf(b, `<line class="gc" x1="%s" x2="%s" y1="%d" y2="%d"><title>%d GC cycle(s) ended</title></line>`, x, x, marginT, marginT+plotH, gc[i])
		}
	}
	for _, m := range []int{5, 4, 3, 2, 1} {
		d := a.window * time.Duration(m) / 5
		x := a.x(a.now.Add(-d))
		fmt.Fprintf(b, `<text x="%s" y="%d" text-anchor="middle">-%v</text>`, f1(x), marginT+plotH+14, d.Round(time.Second))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">now</text>`, marginL+plotW, marginT+plotH+14)
	fmt.Fprintf(b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, marginL, marginL+plotW, marginT+plotH, marginT+plotH)
	lx := marginL
	for _, s := range ss {
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
		last := math.NaN()
		if len(s.v) > 0 {
			last = s.v[len(s.v)-1]
		}
		if n == 1 { // a single point: a dot, as a path would draw nothing
			fmt.Fprintf(b, `<circle class="dot" cx="%s" cy="%s" r="2" fill="%s"/>`, f1(a.x(ts[len(ts)-1])), f1(y(last)), s.color)
		}
		fmt.Fprintf(b, `<path class="line" data-series="%s" data-points="%d" data-last="%g" stroke="%s" d="%s"/>`,
			esc(s.name), n, last, s.color, strings.TrimSpace(p.String()))
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="3" fill="%s"/><text x="%d" y="%d">%s</text>`,
			lx, chartH-10, s.color, lx+13, chartH-6, esc(s.name))
		lx += 13 + 7*len(s.name) + 12
	}
	if hasGC(gc) {
		fmt.Fprintf(b, `<line class="gc" x1="%d" x2="%d" y1="%d" y2="%d"/><text x="%d" y="%d">GC</text>`, lx, lx+10, chartH-8, chartH-8, lx+13, chartH-6)
	}
	if len(ts) == 0 {
		fmt.Fprintf(b, `<text class="empty" x="%d" y="%d" text-anchor="middle">sampling: the history fills in as the page refreshes</text>`, marginL+plotW/2, marginT+plotH/2)
	}
}

func hasGC(gc []uint64) bool {
	for _, n := range gc {
		if n > 0 {
			return true
		}
	}
	return false
}

func durLabel(v float64) string {
	if v == 0 {
		return "0"
	}
	return time.Duration(v * 1e9).String()
}

func axisOf(d pageData) timeAxis {
	return timeAxis{now: d.Time, window: time.Duration(d.Interval) * samples}
}

// timerSeries returns the times and GC counts of t's history, and a
// series of each figure f picks.
func timerSeries(t timerData, names, colors []string, f func(p timerPoint) []float64) ([]time.Time, []uint64, []series) {
	ts := make([]time.Time, len(t.History))
	gc := make([]uint64, len(t.History))
	ss := make([]series, len(names))
	for j := range ss {
		ss[j] = series{name: names[j], color: colors[j], v: make([]float64, len(t.History))}
	}
	for i, p := range t.History {
		ts[i], gc[i] = p.T, p.GC
		for j, v := range f(p) {
			ss[j].v[i] = v
		}
	}
	return ts, gc, ss
}

func latenessChart(d pageData, t timerData) template.HTML {
	ts, gc, ss := timerSeries(t, []string{"p50", "p99", "p99.9", "max"}, []string{"#3a7d3a", "#4a7ab5", "#8a4ab5", "#c03030"},
		func(p timerPoint) []float64 {
			if p.N == 0 {
				n := math.NaN()
				return []float64{n, n, n, n}
			}
			return []float64{time.Duration(p.P50).Seconds(), time.Duration(p.P99).Seconds(), time.Duration(p.P999).Seconds(), time.Duration(p.Max).Seconds()}
		})
	var b strings.Builder
	lineChart(&b, axisOf(d), ts, gc, ss, true, durLabel)
	return figure("lateness", "Callback lateness", fmt.Sprintf("(per %v, log axis; dashed: GC cycles)", time.Duration(d.Interval)), b.String())
}

func executorChart(d pageData, t timerData) template.HTML {
	ts, gc, ss := timerSeries(t, []string{"backlog", "helpers"}, []string{"#4a7ab5", "#c03030"},
		func(p timerPoint) []float64 { return []float64{float64(p.Backlog), float64(p.Helpers)} })
	var b strings.Builder
	lineChart(&b, axisOf(d), ts, gc, ss, false, countLabel)
	return figure("executor", "Executor backlog and helpers", fmt.Sprintf("(%d workers)", t.Stats.Workers), b.String())
}

func lagChart(d pageData, t timerData) template.HTML {
	ts, gc, ss := timerSeries(t, []string{"lag"}, []string{"#8a4ab5"},
		func(p timerPoint) []float64 { return []float64{time.Duration(p.Lag).Seconds()} })
	var b strings.Builder
	lineChart(&b, axisOf(d), ts, gc, ss, false, durLabel)
	return figure("lag", "Driver lag", fmt.Sprintf("(tick %v)", time.Duration(t.Stats.Tick)), b.String())
}

func outcomeChart(d pageData, p purgatoryData) template.HTML {
	ts := make([]time.Time, len(p.History))
	gc := make([]uint64, len(p.History))
	ss := []series{
		{name: "completed in time", color: "#3a7d3a", v: make([]float64, len(p.History))},
		{name: "expired", color: "#c03030", v: make([]float64, len(p.History))},
	}
	for i, pt := range p.History {
		ts[i] = pt.T
		ss[0].v[i] = float64(pt.Completed - pt.Expired)
		ss[1].v[i] = float64(pt.Expired)
	}
	var b strings.Builder
	lineChart(&b, axisOf(d), ts, gc, ss, false, countLabel)
	return figure("outcomes", "Operations completed and expired", fmt.Sprintf("(per %v)", time.Duration(d.Interval)), b.String())
}
