package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A CaseResult holds the results of one case, one per implementation, in
// the order of impls.
type CaseResult struct {
	Case    Case
	Results []Result
}

// writeTable writes the table of a workload: one row per case and
// implementation, one column per metric, and after each metric marked Ratio
// a column with its ratio to this library's figure in the same case.
func writeTable(w io.Writer, wl *Workload, cases []CaseResult) {
	// Columns: the metrics in the order they first appear.
	type column struct {
		name  string
		kind  Kind
		ratio bool
	}
	var cols []column
	seen := map[string]bool{}
	for _, cr := range cases {
		for _, r := range cr.Results {
			for _, m := range r.Metrics {
				if !seen[m.Name] {
					seen[m.Name] = true
					cols = append(cols, column{m.Name, m.Kind, m.Ratio})
				}
			}
		}
	}

	header := []string{"case", "implementation"}
	for _, c := range cols {
		header = append(header, c.name)
		if c.ratio {
			header = append(header, "ratio")
		}
	}
	rows := [][]string{header}
	var tails []string // free text after a row: skip reasons, errors
	tails = append(tails, "")
	for _, cr := range cases {
		var base *Result // this library's result in this case
		if len(cr.Results) > 0 && cr.Results[0].Impl == impls[0].Name && cr.Results[0].usable() {
			base = &cr.Results[0]
		}
		for _, r := range cr.Results {
			row := []string{cr.Case.Label, r.Impl}
			tail := ""
			switch {
			case r.Skipped != "":
				tail = "skipped: " + r.Skipped
			case r.Err != nil:
				tail = "FAILED: " + r.Err.Error()
			default:
				for _, c := range cols {
					v, ok := r.metric(c.name)
					if !ok {
						row = append(row, "")
					} else {
						row = append(row, formatValue(v, c.kind))
					}
					if c.ratio {
						row = append(row, ratioCell(v, ok, base, c.name))
					}
				}
				if len(r.Warnings) > 0 {
					tail = "warning: " + strings.Join(r.Warnings, "; ")
				}
			}
			rows = append(rows, row)
			tails = append(tails, tail)
		}
	}

	// Widths, from the cells only: a tail is written after its row.
	var width []int
	for _, row := range rows {
		for i, cell := range row {
			n := utf8.RuneCountInString(cell)
			if i == len(width) {
				width = append(width, n)
			}
			width[i] = max(width[i], n)
		}
	}
	fmt.Fprintf(w, "%s: %s\n\n", wl.Name, wl.Title)
	for i, row := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for j, cell := range row {
			pad := strings.Repeat(" ", width[j]-utf8.RuneCountInString(cell))
			if j > 0 {
				b.WriteString("  ")
			}
			if j < 2 { // labels to the left, figures to the right
				b.WriteString(cell + pad)
			} else {
				b.WriteString(pad + cell)
			}
		}
		if tails[i] != "" {
			b.WriteString("  " + tails[i])
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	if len(wl.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range wl.Notes {
			for i, line := range wrap(n, 100) {
				indent := "  "
				if i > 0 {
					indent = "    "
				}
				fmt.Fprintf(w, "%s%s\n", indent, line)
			}
		}
	}
	fmt.Fprintln(w)
}

func (r *Result) usable() bool { return r.Skipped == "" && r.Err == nil }

// metric returns the value of the metric called name.
func (r *Result) metric(name string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// ratioCell writes base's figure for the same metric divided by v: this
// library's figure ÷ the row's, the one direction of every ratio that
// wheelbench prints.
func ratioCell(v float64, ok bool, base *Result, name string) string {
	if !ok || base == nil {
		return ""
	}
	b, ok := base.metric(name)
	if !ok {
		return ""
	}
	switch {
	case b == v:
		return "1.00×"
	case v == 0 || math.Signbit(b) != math.Signbit(v):
		return "—" // no meaningful ratio
	}
	return formatDecimal(b/v) + "×"
}

// formatValue writes v as its kind says.
func formatValue(v float64, k Kind) string {
	s, _ := formatShown(v, k, 0)
	return s
}

// formatDecimal writes v with about three significant digits, at most two
// decimals.
func formatDecimal(v float64) string {
	s, _ := formatShown(v, Decimal, 0)
	return s
}

// formatNanos writes a duration given in nanoseconds with a unit.
func formatNanos(ns float64) string {
	s, _ := formatShown(ns, Duration, 0)
	return s
}

// formatBytes writes a byte count with a binary unit.
func formatBytes(b float64) string {
	s, _ := formatShown(b, Bytes, 0)
	return s
}

// formatShown writes v as its kind says, with extra decimals beyond the
// usual (none for a Count), and returns the value the text shows, in v's
// unit: what a reader compares with a bound.
func formatShown(v float64, k Kind, extra int) (string, float64) {
	scale, unit := 1.0, ""
	a := math.Abs(v)
	switch k {
	case Count:
		n := math.Round(v)
		return groupDigits(int64(n)), n
	case Duration:
		switch {
		case a < 1e3:
			unit = "ns"
		case a < 1e6:
			scale, unit = 1e3, "µs"
		case a < 1e9:
			scale, unit = 1e6, "ms"
		default:
			scale, unit = 1e9, "s"
		}
	case Bytes:
		switch {
		case a < 1<<10:
			unit = " B"
		case a < 1<<20:
			scale, unit = 1<<10, " KiB"
		case a < 1<<30:
			scale, unit = 1<<20, " MiB"
		default:
			scale, unit = 1<<30, " GiB"
		}
	}
	x := v / scale
	decimals := 2 // about three significant digits
	switch a := math.Abs(x); {
	case scale == 1 && unit != "": // ns and B are whole
		decimals = 0
	case a >= 100:
		decimals = 0
	case a >= 10:
		decimals = 1
	}
	num := strconv.FormatFloat(x, 'f', decimals+extra, 64)
	shown, _ := strconv.ParseFloat(num, 64)
	return num + unit, shown * scale
}

// maxExtra is the most decimals formatJudged adds: enough for any two
// float64s that differ.
const maxExtra = 17

// formatJudged writes v, a figure that a target judged met or missed, as
// formatValue does, or with as many more decimals as it takes for the
// figure as printed to get the same verdict: meets, given the value the
// text shows, returns met. A miss of a bound of 48 by 0.1 prints its
// ratio as 1.002×, not as 1.00×, which reads as a tie.
func formatJudged(v float64, k Kind, met bool, meets func(shown float64) bool) string {
	var s string
	for extra := 0; extra <= maxExtra; extra++ {
		var shown float64
		if s, shown = formatShown(v, k, extra); meets(shown) == met || k == Count {
			break
		}
	}
	return s
}

// groupDigits writes n with commas between groups of three digits.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
