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

// ratioCell writes v divided by base's figure for the same metric.
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
	case b == 0 || math.Signbit(b) != math.Signbit(v):
		return "—" // no meaningful ratio
	}
	return formatDecimal(v/b) + "×"
}

// formatValue writes v as its kind says.
func formatValue(v float64, k Kind) string {
	switch k {
	case Count:
		return groupDigits(int64(math.Round(v)))
	case Duration:
		return formatNanos(v)
	case Bytes:
		return formatBytes(v)
	}
	return formatDecimal(v)
}

// formatDecimal writes v with about three significant digits, at most two
// decimals.
func formatDecimal(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// formatNanos writes a duration given in nanoseconds with a unit.
func formatNanos(ns float64) string {
	a := math.Abs(ns)
	switch {
	case a < 1e3:
		return strconv.FormatFloat(ns, 'f', 0, 64) + "ns"
	case a < 1e6:
		return formatDecimal(ns/1e3) + "µs"
	case a < 1e9:
		return formatDecimal(ns/1e6) + "ms"
	}
	return formatDecimal(ns/1e9) + "s"
}

// formatBytes writes a byte count with a binary unit.
func formatBytes(b float64) string {
	a := math.Abs(b)
	switch {
	case a < 1<<10:
		return strconv.FormatFloat(b, 'f', 0, 64) + " B"
	case a < 1<<20:
		return formatDecimal(b/(1<<10)) + " KiB"
	case a < 1<<30:
		return formatDecimal(b/(1<<20)) + " MiB"
	}
	return formatDecimal(b/(1<<30)) + " GiB"
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
