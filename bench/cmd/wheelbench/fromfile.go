package main

// -from reads a run back from what it printed (a -results file, or its
// stdout saved), so that the README's table can be written again from a
// run already made, by the command and not by hand.

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

var fromFlag = flag.String("from", "", "with -readme: write the table from this run's output (a -results file) instead of running the workloads")

// readRunFile reads the run whose output the file at path holds.
func readRunFile(path string) (run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return run{}, err
	}
	r, err := parseRun(string(b))
	if err != nil {
		return run{}, fmt.Errorf("%s: %v", path, err)
	}
	return r, nil
}

var (
	headLine = regexp.MustCompile(`^  (date|commit|cpu|go|sizes) {2,}(.*)$`)
	cpuLine  = regexp.MustCompile(`^(.*), (\d+) CPUs, GOMAXPROCS=(\d+)(?:, load average (\S+) at the start)?$`)
	hostLine = regexp.MustCompile(`; host (.*)$`)
	doneLine = regexp.MustCompile(`^wheelbench: done in ([0-9.]+)s$`)
	gap      = regexp.MustCompile(`\s{2,}`)
)

// parseRun parses a run's output: the header, every workload's table and
// the verdicts on the targets. The Markdown a -results file puts around
// the output gives the command and the host.
func parseRun(text string) (run, error) {
	r := run{Profile: Quick}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	header := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if c, ok := strings.CutPrefix(line, "- command: `"); ok {
			r.Command = strings.TrimSuffix(c, "`")
		}
		if m := hostLine.FindStringSubmatch(line); m != nil && strings.HasPrefix(line, "- machine: ") {
			r.Machine.Host = m[1]
		}
		if strings.HasPrefix(line, "wheelbench: github.com/go-timingwheel/timingwheel") {
			header = true
		}
		if m := doneLine.FindStringSubmatch(line); m != nil {
			s, _ := strconv.ParseFloat(m[1], 64)
			r.Elapsed = time.Duration(s * float64(time.Second))
		}
		if strings.HasPrefix(line, "wheelbench: workload ") {
			r.Failed = true
		}
		if header {
			if err := parseHeaderLine(&r, line); err != nil {
				return r, err
			}
		}
		if strings.HasPrefix(line, "targets (bench/README.md") {
			header = false
			for i++; i < len(lines) && !isCountLine(lines[i]); i++ {
				if v, ok := parseVerdict(lines[i]); ok {
					r.Verdicts = append(r.Verdicts, v)
				}
			}
			continue
		}
		name, _, ok := strings.Cut(line, ": ")
		if !ok || !slices.ContainsFunc(workloads, func(w *Workload) bool { return w.Name == name }) {
			continue
		}
		// A workload's title; its table's header is the first line after
		// it that starts with "  case ".
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j == len(lines) || !strings.HasPrefix(lines[j], "  case ") {
			continue
		}
		header = false
		cases, end, err := parseTable(lines, j)
		if err != nil {
			return r, fmt.Errorf("%s's table: %v", name, err)
		}
		for _, cr := range cases {
			for _, res := range cr.Results {
				r.Failed = r.Failed || res.Err != nil
			}
		}
		r.Workloads = append(r.Workloads, workloadCases{name, cases})
		i = end
	}
	if r.Machine.Date.IsZero() {
		return r, errors.New("no wheelbench header (date, cpu, go)")
	}
	if r.Command == "" {
		r.Command = "go -C bench run ./cmd/wheelbench"
		if r.Profile == Full {
			r.Command += " -full"
		}
	}
	return r, nil
}

// isCountLine reports whether line is the count that ends the verdicts:
// "  11 met, 3 missed, ...".
func isCountLine(line string) bool {
	f := strings.Fields(line)
	return len(f) > 1 && f[1] == "met," && unicode.IsDigit([]rune(f[0])[0])
}

func parseHeaderLine(r *run, line string) error {
	m := headLine.FindStringSubmatch(line)
	if m == nil {
		return nil
	}
	key, val := m[1], strings.TrimSpace(m[2])
	switch key {
	case "date":
		d, err := time.Parse("2006-01-02 15:04 MST", val)
		if err != nil {
			return fmt.Errorf("header date: %v", err)
		}
		r.Machine.Date = d.UTC()
	case "commit":
		c, dirty := strings.CutSuffix(val, " with uncommitted changes")
		if !strings.HasPrefix(c, "an unknown commit") {
			r.Machine.Commit, r.Machine.Dirty = c, dirty
		}
	case "cpu":
		m := cpuLine.FindStringSubmatch(val)
		if m == nil {
			return fmt.Errorf("header cpu line %q", val)
		}
		r.Machine.CPU = m[1]
		r.Machine.NumCPU, _ = strconv.Atoi(m[2])
		r.Machine.GOMAXPROCS, _ = strconv.Atoi(m[3])
		r.Machine.Load = m[4]
	case "go":
		r.Machine.Go = val
	case "sizes":
		if strings.HasPrefix(val, "full") {
			r.Profile = Full
		}
	}
	return nil
}

// parseTable parses the table whose header is lines[at], as writeTable
// wrote it: the case and the implementation left-aligned, every figure
// right-aligned under its header, columns two spaces apart. It returns the
// cases and the index of the table's last line.
func parseTable(lines []string, at int) ([]CaseResult, int, error) {
	cols := headerCells([]rune(lines[at]))
	if len(cols) < 3 || cols[0].name != "case" || cols[1].name != "implementation" {
		return nil, at, fmt.Errorf("header %q", lines[at])
	}
	var cases []CaseResult
	end := at
	for i := at + 1; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
		end = i
		row := []rune(lines[i])
		cell := func(a, b int) string {
			a, b = min(a, len(row)), min(b, len(row))
			return strings.TrimSpace(string(row[a:b]))
		}
		label := cell(cols[0].start, cols[1].start)
		rest := cell(cols[1].start, len(row))
		impl, after, _ := strings.Cut(rest, " ")
		after = strings.TrimSpace(after)
		res := Result{Impl: impl}
		switch {
		case strings.HasPrefix(after, "skipped: "):
			res.Skipped = strings.TrimPrefix(after, "skipped: ")
		case strings.HasPrefix(after, "FAILED: "):
			res.Err = errors.New(strings.TrimPrefix(after, "FAILED: "))
		default:
			implEnd := cols[1].start + len([]rune(impl))
			for j := 2; j < len(cols); j++ {
				if cols[j].name == "ratio" {
					continue
				}
				from := implEnd
				if j > 2 {
					from = cols[j-1].end
				}
				text := cell(from, cols[j].end)
				if text == "" {
					continue
				}
				v, k, ok := parseFigure(text)
				if !ok {
					return nil, at, fmt.Errorf("%s %s: figure %q under %q", label, impl, text, cols[j].name)
				}
				res.Metrics = append(res.Metrics, Metric{Name: cols[j].name, Value: v, Kind: k})
			}
		}
		if n := len(cases); n == 0 || cases[n-1].Case.Label != label {
			cases = append(cases, CaseResult{Case: Case{Label: label}})
		}
		cases[len(cases)-1].Results = append(cases[len(cases)-1].Results, res)
	}
	return cases, end, nil
}

// A headerCell is a column's name and where it lies in the header, in
// runes: [start, end).
type headerCell struct {
	name       string
	start, end int
}

// headerCells splits a table's header into its cells: runs of text apart
// by two spaces or more (a name may hold one space: "CPU ns/pair").
func headerCells(head []rune) []headerCell {
	var cells []headerCell
	start := -1
	for i := 0; i <= len(head); i++ {
		// A space is a gap's unless it lies between two letters.
		blank := i == len(head) || head[i] == ' ' && (i == 0 || i+1 == len(head) || head[i-1] == ' ' || head[i+1] == ' ')
		switch {
		case !blank && start < 0:
			start = i
		case blank && start >= 0:
			cells = append(cells, headerCell{string(head[start:i]), start, i})
			start = -1
		}
	}
	return cells
}

// parseFigure returns a value and a kind that formatValue writes as text.
func parseFigure(text string) (float64, Kind, bool) {
	units := []struct {
		suffix string
		scale  float64
		kind   Kind
	}{
		{"ns", 1, Duration}, {"µs", 1e3, Duration}, {"ms", 1e6, Duration}, {"s", 1e9, Duration},
		{" B", 1, Bytes}, {" KiB", 1 << 10, Bytes}, {" MiB", 1 << 20, Bytes}, {" GiB", 1 << 30, Bytes},
		{"", 1, Decimal}, {"", 1, Count},
	}
	for _, u := range units {
		num, ok := strings.CutSuffix(text, u.suffix)
		if !ok {
			continue
		}
		if u.kind == Count {
			num = strings.ReplaceAll(num, ",", "")
		}
		x, err := strconv.ParseFloat(num, 64)
		if err != nil {
			continue
		}
		// The text may be a value just below a place where the digits
		// change (99.96 is "100.0", 100 is "100"): one ulp down finds it.
		for _, v := range []float64{x * u.scale, math.Nextafter(x*u.scale, 0)} {
			if formatValue(v, u.kind) == text {
				return v, u.kind, true
			}
		}
	}
	return 0, 0, false
}

// parseVerdict parses a line of the verdicts writeVerdicts wrote:
// "  ✓ churn  N=1M  ns/pair ≤ 60  58.2 = 0.97× the bound".
func parseVerdict(line string) (Verdict, bool) {
	s := strings.TrimSpace(line)
	mark, rest, ok := strings.Cut(s, " ")
	if !ok || (mark != markMet && mark != markMissed && mark != markNotShown) {
		return Verdict{}, false
	}
	f := gap.Split(strings.TrimSpace(rest), 4)
	if len(f) != 4 {
		return Verdict{}, false
	}
	v := Verdict{Workload: f[0], Case: f[1], What: f[2], Mark: mark, Figure: f[3]}
	if mark == markNotShown {
		switch {
		case strings.Contains(v.Figure, "-full runs") || strings.HasPrefix(v.Figure, "this run's sizes are"):
			v.NotShown = notAtSize
		case strings.HasPrefix(v.Figure, "not measured by wheelbench"):
			v.NotShown = elsewhere
		case strings.HasPrefix(v.Figure, "needs "):
			v.NotShown = notHere
		default:
			v.NotShown = notRun
		}
	}
	return v, true
}
