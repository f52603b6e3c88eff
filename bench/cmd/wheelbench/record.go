package main

// What a run leaves behind besides its stdout: the Results section of the
// top-level README (-readme) and a file of its own under bench/results
// (-results). Both are written by the command, with the machine, the date
// and the commit it read itself, so that no figure is ever typed by hand.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

var (
	readmeFlag  = flag.String("readme", "", "rewrite the Results section of this Markdown file (between "+resultsBegin+" and "+resultsEnd+") with this run's table; from the repository root: -readme ../README.md")
	resultsFlag = flag.String("results", "", "write this run's whole output, with the machine and the commit, to DIR/<date>-<CPUs>cpu-<host>.md; from the repository root: -results results")
	figuresFlag = flag.String("figures", "", "internal: append the cases' figures to this file, for the parent to print")
)

// The markers around the section that -readme rewrites. Everything
// between them belongs to the command; everything outside is left as it
// is, byte for byte.
const (
	resultsBegin = "<!-- results:begin -->"
	resultsEnd   = "<!-- results:end -->"
)

// A machine is where and when a run was made, as the run itself read it.
type machine struct {
	Date       time.Time
	Commit     string // git rev-parse --short HEAD; "" outside a repository
	Dirty      bool   // tracked files differed from Commit when the run began
	CPU        string
	NumCPU     int
	GOMAXPROCS int
	Go         string // runtime.Version, GOOS/GOARCH
	Host       string
	// Load is the 1-minute load average when the run began ("" where
	// /proc/loadavg is not): on a shared machine, what else was running.
	Load string
}

func currentMachine() machine {
	m := machine{
		Date:       time.Now().UTC(),
		CPU:        cpuModel(),
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Go:         runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
	}
	m.Host, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.Load = f[0]
		}
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
			m.Dirty = len(bytes.TrimSpace(st)) > 0
		}
	}
	return m
}

// commit says which source the run measured.
func (m machine) commit() string {
	switch {
	case m.Commit == "":
		return "an unknown commit (no git repository)"
	case m.Dirty:
		return m.Commit + " with uncommitted changes"
	}
	return m.Commit
}

// cpus says what the run had to run on.
func (m machine) cpus() string {
	s := fmt.Sprintf("%s, %d CPUs, GOMAXPROCS=%d", m.CPU, m.NumCPU, m.GOMAXPROCS)
	if m.Load != "" {
		s += ", load average " + m.Load + " at the start"
	}
	return s
}

// A run is what -readme and -results write about: the figures of every
// case of every workload, the verdicts on the targets, and the run's
// circumstances.
type run struct {
	Machine machine
	Command string // the command line that reproduces the run
	Profile Profile
	// SizesGiven: the command line set a workload's parameters, so the
	// sizes are not those of Profile.
	SizesGiven bool
	Elapsed    time.Duration
	Workloads  []workloadCases
	Verdicts   []Verdict
	Failed     bool
	// Output is where the run's whole output is, as a link from the
	// README: the -results file it wrote, or the file -from read.
	Output string
}

type workloadCases struct {
	Name  string
	Cases []CaseResult
}

// withoutSamples returns the cases without their raw samples, which only
// the charts read: a million lateness values per storm need not live to
// the end of the run.
func withoutSamples(cases []CaseResult) []CaseResult {
	out := make([]CaseResult, len(cases))
	for i, cr := range cases {
		out[i] = CaseResult{Case: cr.Case, Results: slices.Clone(cr.Results)}
		for j := range out[i].Results {
			out[i].Results[j].Samples = nil
		}
	}
	return out
}

// commandLine returns the wheelbench command that runs the same workloads
// at the same sizes: the flags given, but those that only say where the
// output goes.
func commandLine() string {
	s := "go -C bench run ./cmd/wheelbench"
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "readme", "results", "figures", "child", "verdicts", "quiet", "charts", "chart-format":
			return
		}
		if f.Value.String() == "true" {
			s += " -" + f.Name
		} else {
			s += " -" + f.Name + "=" + f.Value.String()
		}
	})
	return s
}

// sizesGiven reports whether the command line set a workload parameter.
func sizesGiven() bool {
	given := false
	flag.Visit(func(f *flag.Flag) {
		if p, ok := f.Value.(interface{ given() bool }); ok && p.given() {
			given = true
		}
	})
	return given
}

// A caseRecord is one case of a workload as a child process hands it to
// its parent: the figures, without the raw samples.
type caseRecord struct {
	Workload string
	Case     string
	Results  []resultRecord
}

type resultRecord struct {
	Impl    string
	Metrics []Metric
	Skipped string
	Err     string
}

// appendFigures appends the cases of wl to the file at path, one JSON
// object a line.
func appendFigures(path, wl string, cases []CaseResult) error {
	var recs []caseRecord
	for _, cr := range cases {
		rec := caseRecord{Workload: wl, Case: cr.Case.Label}
		for _, r := range cr.Results {
			rr := resultRecord{Impl: r.Impl, Metrics: r.Metrics, Skipped: r.Skipped}
			if r.Err != nil {
				rr.Err = r.Err.Error()
			}
			rec.Results = append(rec.Results, rr)
		}
		recs = append(recs, rec)
	}
	return appendJSONLines(path, recs)
}

// readFigures reads what appendFigures wrote, workload by workload in the
// order they came. A file that was never written (a child that failed
// first) holds no workload.
func readFigures(path string) ([]workloadCases, error) {
	recs, err := readJSONLines[caseRecord](path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var wls []workloadCases
	for _, rec := range recs {
		if len(wls) == 0 || wls[len(wls)-1].Name != rec.Workload {
			wls = append(wls, workloadCases{Name: rec.Workload})
		}
		cr := CaseResult{Case: Case{Label: rec.Case}}
		for _, rr := range rec.Results {
			r := Result{Impl: rr.Impl, Metrics: rr.Metrics, Skipped: rr.Skipped}
			if rr.Err != "" {
				r.Err = errors.New(rr.Err)
			}
			cr.Results = append(cr.Results, r)
		}
		wl := &wls[len(wls)-1]
		wl.Cases = append(wl.Cases, cr)
	}
	return wls, nil
}

// appendJSONLines appends vs to the file at path, one JSON object a line:
// how a child process hands what it measured and judged to its parent.
func appendJSONLines[T any](path string, vs []T) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// readJSONLines reads what appendJSONLines wrote to path, in order.
func readJSONLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var vs []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, sc.Err()
}

// readmeFigures are the figures of each workload that the README's table
// shows, a row per case and figure; the other figures are in the
// workload's own table (stdout, and -results). A workload not listed
// (tick: options only this library has) has no row.
var readmeFigures = map[string][]string{
	"churn":      {"ns/pair"},
	"memory":     {"B/timer"},
	"storm":      {"early", "p99 late", "max late", "CPU"},
	"idle":       {"CPU"},
	"rearm":      {"ns/Reset", "par ns/Reset"},
	"reuse":      {"ns/pair"},
	"selectloop": {"ns/iter"},
	"parallel":   {"ns/op"},
	"idleconns":  {"CPU/msg", "late max"},
	"purgatory":  {"achieved %", "CPU/req"},
	"http":       {"CPU/req"},
}

// readmeSection writes the Results section: what ran where, one table of
// the figures, each beside the verdicts of the targets stated on it, and
// the count of the verdicts.
func readmeSection(r run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- Written by wheelbench -readme; do not edit: run the command below again. -->\n\n")
	sizes := "the quick sizes"
	switch {
	case r.SizesGiven:
		sizes = "sizes as given"
	case r.Profile == Full:
		sizes = "the sizes of the targets"
	}
	fmt.Fprintf(&b, "`%s` (%s) on %s, at commit %s: %s, %s; %s.",
		r.Command, sizes, r.Machine.Date.Format("2006-01-02 15:04 MST"), r.Machine.commit(),
		r.Machine.cpus(), r.Machine.Go, fmtElapsed(r.Elapsed))
	if r.Output != "" {
		fmt.Fprintf(&b, " Its whole output: [%s](%s).", path.Base(r.Output), r.Output)
	}
	b.WriteString("\n\n")

	var names []string // implementations, in the order of impls, as they ran
	for _, wl := range r.Workloads {
		for _, cr := range wl.Cases {
			for _, res := range cr.Results {
				if !slices.Contains(names, res.Impl) {
					names = append(names, res.Impl)
				}
			}
		}
	}
	slices.SortStableFunc(names, func(a, b string) int { return implIndex(a) - implIndex(b) })

	var notes []string // footnotes: why an implementation did not run
	note := func(text string) string {
		i := slices.Index(notes, text)
		if i < 0 {
			notes = append(notes, text)
			i = len(notes) - 1
		}
		return superscript(i + 1)
	}
	used := make([]bool, len(r.Verdicts))

	b.WriteString("| workload | case | figure |")
	for _, n := range names {
		b.WriteString(" " + n + " |")
	}
	b.WriteString(" target: this run |\n|---|---|---|")
	b.WriteString(strings.Repeat("---|", len(names)+1) + "\n")
	for _, wl := range r.Workloads {
		figs := readmeFigures[wl.Name]
		if len(figs) == 0 {
			continue
		}
		// The rows of the workload, then the verdicts each row carries: a
		// target on the row's figure in the row's case, a target on
		// another figure on the case's first row, and a target this run
		// has no case of on the workload's last row of its figure.
		type row struct {
			cr       CaseResult
			fig      string
			verdicts []string
		}
		var rows []row
		for _, cr := range wl.Cases {
			for _, fig := range figs {
				has := slices.ContainsFunc(cr.Results, func(res Result) bool { _, ok := res.metric(fig); return ok })
				if has || !slices.ContainsFunc(cr.Results, func(res Result) bool { return res.usable() }) {
					rows = append(rows, row{cr: cr, fig: fig})
				}
			}
		}
		for i, v := range r.Verdicts {
			if v.Workload != wl.Name || len(rows) == 0 {
				continue
			}
			at, text := placeVerdict(v, len(rows), func(j int) (string, string) { return rows[j].cr.Case.Label, rows[j].fig })
			used[i] = true
			rows[at].verdicts = append(rows[at].verdicts, text)
		}
		for _, rw := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s |", wl.Name, cell(rw.cr.Case.Label), cell(rw.fig))
			for _, n := range names {
				i := slices.IndexFunc(rw.cr.Results, func(res Result) bool { return res.Impl == n })
				switch {
				case i < 0:
					b.WriteString(" |")
				case rw.cr.Results[i].Skipped != "":
					b.WriteString(" skipped" + note(n+": "+rw.cr.Results[i].Skipped) + " |")
				case rw.cr.Results[i].Err != nil:
					b.WriteString(" failed" + note(n+" failed: "+rw.cr.Results[i].Err.Error()) + " |")
				default:
					res := rw.cr.Results[i]
					v, ok := res.metric(rw.fig)
					s := ""
					if ok {
						s = formatValue(v, metricKind(res, rw.fig))
					}
					b.WriteString(" " + cell(s) + " |")
				}
			}
			fmt.Fprintf(&b, " %s |\n", cell(strings.Join(rw.verdicts, "; ")))
		}
	}
	b.WriteString("\n")

	count := map[string]int{}
	for _, v := range r.Verdicts {
		count[v.Mark]++
		count[v.NotShown]++
	}
	fmt.Fprintf(&b, "Targets ([bench/README.md](bench/README.md#workloads-and-targets)): %d %s met, %d %s missed, %d %s not shown by this run",
		count[markMet], markMet, count[markMissed], markMissed, count[markNotShown], markNotShown)
	if n := count[notAtSize]; n > 0 && r.Profile != Full {
		fmt.Fprintf(&b, " (%d of them stated at sizes only `-full` runs)", n)
	}
	b.WriteString(". A ratio is timingwheel's figure ÷ the baseline's: below 1× timingwheel's is the lower.")
	var rest []string
	for i, v := range r.Verdicts {
		if !used[i] {
			rest = append(rest, fmt.Sprintf("%s %s: %s", v.Mark, v.Workload, verdictCell(v, v.What)))
		}
	}
	if len(rest) > 0 {
		b.WriteString(" Not in the table: " + cell(strings.Join(rest, "; ")) + ".")
	}
	b.WriteString("\n")
	if r.Failed {
		b.WriteString("\n**A workload failed in this run**: see its output.\n")
	}
	for i, n := range notes {
		fmt.Fprintf(&b, "\n%s %s", superscript(i+1), cell(n))
		if i == len(notes)-1 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// placeVerdict returns the row of a workload's n rows that carries v, and
// the text it carries there: on the row of v's case and figure, the mark,
// the bound and the figure; on the case's first row, when the target is
// on a figure without a row, the whole target; and for a target stated at
// a case this run lacks, on the last row of its figure (or the workload's
// last row), the target and where it is stated. row returns the case and
// the figure of row j.
func placeVerdict(v Verdict, n int, row func(j int) (label, fig string)) (int, string) {
	fig, rest := splitWhat(v.What)
	on := func(f string) bool { return fig != "" && (f == fig || strings.HasPrefix(f, fig+" ")) }
	for j := range n {
		if l, f := row(j); l == v.Case && on(f) {
			return j, verdictCell(v, rest)
		}
	}
	for j := range n {
		if l, _ := row(j); l == v.Case {
			return j, verdictCell(v, v.What)
		}
	}
	// Not a case of this run: the last row of the same case at a smaller
	// size (as missedSmaller finds it) and of the target's figure, or the
	// best of those there are.
	same := func(string) bool { return false }
	if i := slices.IndexFunc(targets, func(t Target) bool {
		return t.Workload == v.Workload && t.What == v.What && t.At == v.Case && t.Match != nil
	}); i >= 0 {
		t := targets[i]
		size, _, _ := strings.Cut(t.At, " ")
		size = strings.TrimSuffix(size, ",")
		same = func(l string) bool {
			k := strings.IndexAny(l, " ,")
			if k < 0 {
				k = len(l)
			}
			return t.Match(size + l[k:])
		}
	}
	at, text, best := n-1, v.What, 0
	for j := range n {
		l, f := row(j)
		score := 0
		if same(l) {
			score += 2
		}
		if on(f) {
			score++
		}
		if score >= best && score > 0 {
			at, best = j, score
			if on(f) {
				text = rest
			} else {
				text = v.What
			}
		}
	}
	if v.NotShown == notAtSize {
		return at, verdictCell(v, text+" at "+v.Case)
	}
	return at, verdictCell(v, text+", "+v.Case)
}

// splitWhat splits a target's text into the figure it is stated on and
// the rest: "ns/pair ≤ 60" into "ns/pair" and "≤ 60".
func splitWhat(what string) (fig, rest string) {
	for _, op := range []string{" ≤ ", " < ", " = ", " ≥ ", " ÷ "} {
		if i := strings.Index(what, op); i > 0 {
			return what[:i], strings.TrimSpace(what[i:])
		}
	}
	return "", what
}

// verdictCell writes a verdict as the table shows it: the mark, the
// target (rest: the part the row does not already say), and the figure.
func verdictCell(v Verdict, rest string) string {
	switch {
	case v.Mark != markNotShown:
		return v.Mark + " " + rest + ": " + v.Figure
	case v.NotShown == notAtSize:
		s := v.Mark + " " + rest
		if _, missed, ok := strings.Cut(v.Figure, "; missed at "); ok {
			s += " (missed at " + missed + ")"
		} else if runProfile != Full {
			s += " (-full)"
		}
		return s
	}
	return v.Mark + " " + rest + ": " + v.Figure
}

func metricKind(r Result, name string) Kind {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m.Kind
		}
	}
	return Decimal
}

func implIndex(name string) int {
	i := slices.IndexFunc(impls, func(s *ImplSpec) bool { return s.Name == name })
	if i < 0 {
		return len(impls)
	}
	return i
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

func superscript(n int) string {
	const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	var b strings.Builder
	for _, c := range fmt.Sprint(n) {
		b.WriteString(string([]rune(digits)[c-'0']))
	}
	return b.String()
}

func fmtElapsed(d time.Duration) string {
	return fmt.Sprintf("the run took %.0f s", d.Seconds())
}

// replaceSection returns doc with what lies between the lines of the
// begin and end markers replaced by section. It is an error if either
// marker is missing, or found more than once, or the end comes first: the
// command must never guess where the table goes.
func replaceSection(doc []byte, section string) ([]byte, error) {
	begin, end := []byte(resultsBegin), []byte(resultsEnd)
	switch nb, ne := bytes.Count(doc, begin), bytes.Count(doc, end); {
	case nb == 0 || ne == 0:
		return nil, fmt.Errorf("no %s ... %s markers: put them where the Results table goes", resultsBegin, resultsEnd)
	case nb > 1 || ne > 1:
		return nil, fmt.Errorf("%s or %s found more than once", resultsBegin, resultsEnd)
	}
	i := bytes.Index(doc, begin) + len(begin)
	j := bytes.Index(doc, end)
	if j < i {
		return nil, fmt.Errorf("%s comes before %s", resultsEnd, resultsBegin)
	}
	var out bytes.Buffer
	out.Write(doc[:i])
	out.WriteString("\n")
	out.WriteString(section)
	if !strings.HasSuffix(section, "\n") {
		out.WriteString("\n")
	}
	out.Write(doc[j:])
	return out.Bytes(), nil
}

// linkFrom returns target as a relative link from the Markdown file at
// doc, or "" if there is none.
func linkFrom(doc, target string) string {
	d, err1 := filepath.Abs(filepath.Dir(doc))
	t, err2 := filepath.Abs(target)
	if err1 != nil || err2 != nil {
		return ""
	}
	rel, err := filepath.Rel(d, t)
	if err != nil {
		return ""
	}
	return filepath.ToSlash(rel)
}

// checkReadme returns the error rewriteReadme would return for the file
// at path, but writes nothing.
func checkReadme(path string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if _, err := replaceSection(doc, ""); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// rewriteReadme replaces the Results section of the file at path with
// section. The file is replaced whole, by a rename, so that a failure
// leaves the old one.
func rewriteReadme(path, section string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := replaceSection(doc, section)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return writeFileAtomic(path, out)
}

func writeFileAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".wheelbench-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// writeResults writes the run's whole output (output: what it printed on
// stdout) to a new file in dir, named by the date, the CPUs and the host,
// under a header that says where and when it ran. It returns the file's
// path.
func writeResults(dir string, r run, output []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	base := fmt.Sprintf("%s-%dcpu-%s", r.Machine.Date.Format("2006-01-02"), r.Machine.NumCPU, fileWord(r.Machine.Host))
	var b bytes.Buffer
	fmt.Fprintf(&b, "# wheelbench, %s\n\n", r.Machine.Date.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- command: `%s`\n", r.Command)
	fmt.Fprintf(&b, "- commit: %s\n", r.Machine.commit())
	fmt.Fprintf(&b, "- machine: %s; host %s\n", r.Machine.cpus(), r.Machine.Host)
	fmt.Fprintf(&b, "- go: %s\n", r.Machine.Go)
	fmt.Fprintf(&b, "- %s\n\n", fmtElapsed(r.Elapsed))
	b.WriteString("Written by wheelbench -results: the run's output as it printed it.\n\n```text\n")
	b.Write(bytes.TrimRight(output, "\n"))
	b.WriteString("\n```\n")
	for i := 1; ; i++ {
		name := base + ".md"
		if i > 1 {
			name = fmt.Sprintf("%s-%d.md", base, i)
		}
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if _, err := f.Write(b.Bytes()); err != nil {
			f.Close()
			return "", err
		}
		return path, f.Close()
	}
}

// fileWord keeps the letters, digits and dashes of s, lower case, for a
// file name.
func fileWord(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 {
		return "host"
	}
	return b.String()
}
