package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A Chart draws a workload's results into image files in a directory (PNG,
// or SVG with -chart-format svg) and returns their paths.
type Chart interface {
	Draw(dir, format string, wl *Workload, cases []CaseResult) ([]string, error)
}

// A CDFChart draws, for each case, the cumulative distribution of a sample
// kept with Env.AddSamples, one line per implementation, on a log axis of
// durations: how many of the events had happened by each delay.
type CDFChart struct {
	Sample string // the samples' name; values in nanoseconds
	Title  string // "%s" in it is replaced by the case label
	XLabel string
	// Floor is the least value drawn, in ns: values below it (negative
	// ones too, which a log axis cannot show) are drawn at Floor, and the
	// legend counts the negative ones as Negative ("early").
	Floor    float64
	Negative string
}

// Draw implements Chart.
func (c CDFChart) Draw(dir, format string, wl *Workload, cases []CaseResult) ([]string, error) {
	var files []string
	for _, cr := range cases {
		p := plot.New()
		p.Title.Text = fmt.Sprintf(c.Title, cr.Case.Label)
		p.Title.Padding = vg.Points(8)
		p.X.Label.Text = c.XLabel
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = durationTicks{}
		p.Y.Label.Text = "fraction of events"
		p.Y.Min, p.Y.Max = 0, 1
		p.Y.Tick.Marker = plot.ConstantTicks(fractionTicks())
		p.Add(plotter.NewGrid())
		legend := plot.NewLegend()
		lines := 0
		for i, r := range cr.Results {
			s := r.Samples[c.Sample]
			if !r.usable() || len(s) == 0 {
				continue
			}
			s = slices.Clone(s)
			slices.Sort(s)
			neg, _ := slices.BinarySearch(s, 0)
			line, err := plotter.NewLine(cdfPoints(s, c.Floor, 2000))
			if err != nil {
				return files, err
			}
			line.Color = plotutil.Color(i)
			line.Width = vg.Points(1.5)
			line.Dashes = plotutil.Dashes(i)
			p.Add(line)
			label := fmt.Sprintf("%s: p50 %s, p99 %s, max %s", r.Impl,
				formatNanos(quantile(s, 0.50)), formatNanos(quantile(s, 0.99)), formatNanos(s[len(s)-1]))
			if c.Negative != "" {
				label += fmt.Sprintf(", %d %s", neg, c.Negative)
			}
			legend.Add(label, line)
			lines++
		}
		if lines == 0 {
			continue
		}
		name := filepath.Join(dir, fileName(wl.Name, c.Sample, cr.Case.Label)+"."+format)
		if err := save(p, legend, 8*vg.Inch, 5*vg.Inch, format, name); err != nil {
			return files, err
		}
		files = append(files, name)
	}
	return files, nil
}

// save writes p to a file, w by h, with the legend under the plot rather
// than on it, where it would hide lines.
func save(p *plot.Plot, legend plot.Legend, w, h vg.Length, format, name string) error {
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	legend.Top, legend.Left = true, true
	legend.XOffs = vg.Points(40)
	legendH := legend.Rectangle(dc).Size().Y + vg.Points(12)
	above := dc
	above.Min.Y += legendH
	p.Draw(above)
	below := dc
	below.Max.Y = dc.Min.Y + legendH
	legend.Draw(below)

	return createFile(name, c)
}

// createFile writes what w holds to a new file, name.
func createFile(name string, w io.WriterTo) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// quantile returns the q-quantile (0 < q <= 1) of sorted by nearest rank.
func quantile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// fractionTicks marks 0 to 1 every 0.1, labelled every 0.2.
func fractionTicks() []plot.Tick {
	var ticks []plot.Tick
	for i := 0; i <= 10; i++ {
		t := plot.Tick{Value: float64(i) / 10}
		if i%2 == 0 {
			t.Label = strconv.FormatFloat(t.Value, 'f', -1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// cdfPoints returns at most n points of the empirical CDF of sorted, with
// x clamped to floor; the last point is always the maximum.
func cdfPoints(sorted []float64, floor float64, n int) plotter.XYs {
	total := len(sorted)
	n = min(n, total)
	xys := make(plotter.XYs, 0, n+1)
	for j := range n {
		i := j * (total - 1) / max(n-1, 1) // int: total*n fits easily
		if j == 0 {
			// Start the line at the floor, at the fraction below it.
			xys = append(xys, plotter.XY{X: floor, Y: 0})
		}
		xys = append(xys, plotter.XY{X: max(sorted[i], floor), Y: float64(i+1) / float64(total)})
	}
	return xys
}

// A SizeChart draws a metric against the size of the cases (Case.X), one
// line per implementation, on log axes. It needs two cases or more.
type SizeChart struct {
	Metric string // the metric's name
	Title  string
	XLabel string
	YLabel string
	// Match, when not nil, selects the cases drawn by their label: for a
	// workload with a chart per kind of case.
	Match func(label string) bool
	// File names the file instead of the metric, for such charts.
	File string
	// XTicks marks the x axis; nil: counts at powers of ten.
	XTicks plot.Ticker
}

// Draw implements Chart.
func (c SizeChart) Draw(dir, format string, wl *Workload, cases []CaseResult) ([]string, error) {
	if c.Match != nil {
		cases = slices.DeleteFunc(slices.Clone(cases), func(cr CaseResult) bool { return !c.Match(cr.Case.Label) })
	}
	if len(cases) < 2 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = c.Title
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = c.XLabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = countTicks{}
	if c.XTicks != nil {
		p.X.Tick.Marker = c.XTicks
	}
	p.Y.Label.Text = c.YLabel
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = ticks125{}
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	lines := 0
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, spec := range impls {
		var xys plotter.XYs
		for _, cr := range cases {
			for _, r := range cr.Results {
				if v, ok := r.metric(c.Metric); r.Impl == spec.Name && r.usable() && ok && v > 0 {
					xys = append(xys, plotter.XY{X: cr.Case.X, Y: v})
				}
			}
		}
		if len(xys) == 0 {
			continue
		}
		for _, xy := range xys {
			minX, maxX = min(minX, xy.X), max(maxX, xy.X)
			minY, maxY = min(minY, xy.Y), max(maxY, xy.Y)
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		legend.Add(spec.Name, line, points)
		lines++
	}
	if lines == 0 {
		return nil, nil
	}
	// Room around the points.
	p.X.Min, p.X.Max = minX/1.5, maxX*1.5
	p.Y.Min, p.Y.Max = minY/1.5, maxY*1.5
	file := c.File
	if file == "" {
		file = c.Metric
	}
	name := filepath.Join(dir, fileName(wl.Name, file)+"."+format)
	if err := save(p, legend, 7*vg.Inch, 5*vg.Inch, format, name); err != nil {
		return nil, err
	}
	return []string{name}, nil
}

// logTicks marks a log axis from lo to hi at 1 to 9 times the powers of
// ten; label names the marks it returns a label for (m is the 1 to 9).
func logTicks(lo, hi float64, label func(v float64, m int) string) []plot.Tick {
	var ticks []plot.Tick
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow10(e)
			if v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v, Label: label(v, m)})
			}
		}
	}
	return ticks
}

// durationTicks labels a log axis of nanoseconds at powers of ten: 1µs,
// 10µs, ... 1s.
type durationTicks struct{}

func (durationTicks) Ticks(lo, hi float64) []plot.Tick {
	return logTicks(lo, hi, func(v float64, m int) string {
		if m != 1 {
			return ""
		}
		return shortNanos(v)
	})
}

// shortNanos writes a round number of nanoseconds: 1µs, 10ms, 1s.
func shortNanos(ns float64) string {
	for _, u := range []struct {
		unit string
		ns   float64
	}{{"s", 1e9}, {"ms", 1e6}, {"µs", 1e3}} {
		if ns >= u.ns {
			return strconv.FormatFloat(ns/u.ns, 'g', 4, 64) + u.unit
		}
	}
	return strconv.FormatFloat(ns, 'g', 4, 64) + "ns"
}

// ticks125 labels a log axis at 1, 2 and 5 times the powers of ten.
type ticks125 struct{}

func (ticks125) Ticks(lo, hi float64) []plot.Tick {
	return logTicks(lo, hi, func(v float64, m int) string {
		if m != 1 && m != 2 && m != 5 {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	})
}

// countTicks labels a log axis of counts at powers of ten: 1k, 10k, 1M.
type countTicks struct{}

func (countTicks) Ticks(lo, hi float64) []plot.Tick {
	return logTicks(lo, hi, func(v float64, m int) string {
		if m != 1 || v < 1 {
			return ""
		}
		return formatCount(int(math.Round(v)))
	})
}

// powersOfTwo labels a log axis at the powers of two: 1, 2, 4, 8, 16.
type powersOfTwo struct{}

func (powersOfTwo) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for v := 1.0; v <= hi; v *= 2 {
		if v >= lo {
			ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
		}
	}
	return ticks
}

// fileName joins parts into a file name of letters, digits and dashes.
func fileName(parts ...string) string {
	s := strings.ToLower(strings.Join(parts, "-"))
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s)
	for strings.Contains(s, "--") {
		s = strings.ReplaceAll(s, "--", "-")
	}
	return strings.Trim(s, "-")
}
