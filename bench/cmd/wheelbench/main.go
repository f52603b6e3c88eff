// Command wheelbench measures github.com/go-timingwheel/timingwheel against
// time.AfterFunc and go-zero's timing wheel on the workloads of bench/README.md
// ("Workloads and targets"), all in one run, and prints a table per workload
// with absolute figures and ratios, timingwheel's figure ÷ each peer's. It
// ends with a line per target of that section (targets.go): met (✓) or
// missed (✗), with the figure or ratio, or not shown (–) by the sizes of
// this run. A missed target makes it exit non-zero only with -check.
//
//	go -C bench run ./cmd/wheelbench              # quick: 1-3 minutes on 2 cores
//	go -C bench run ./cmd/wheelbench -full -check # the sizes of the targets; exit 1 if one is missed
//	go -C bench run ./cmd/wheelbench -workloads storm -charts /tmp/charts
//	go -C bench run ./cmd/wheelbench -workloads tick -impls timingwheel
//	go -C bench run ./cmd/wheelbench -workloads parallel   # scaling over cores
//	go -C bench run ./cmd/wheelbench -readme ../README.md -results results
//
// The last runs the quick workloads, rewrites the top-level README's
// Results section (between <!-- results:begin --> and <!-- results:end -->)
// with this run's table, and writes the whole output to
// bench/results/<date>-<CPUs>cpu-<host>.md; each says the date, the commit
// and the machine, as the command read them (record.go).
//
// Each workload is a file that registers itself (see Register); each
// implementation is an Impl adapter listed in impls.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// quickDuration is how long a run without -full or -workloads takes on the
// reference machine (2 cores), with the build cached: 76 s idle, 3 minutes
// beside other work. The header and the usage say it; the first command of
// the top-level README and "Running it" in bench/README.md say the same.
const quickDuration = "1-3 minutes on 2 cores"

var (
	workloadsFlag = flag.String("workloads", "", "comma-separated workloads to run (default: all but those marked on request, and in a quick run those marked with -full)")
	implsFlag     = flag.String("impls", "", "comma-separated implementations to run, always in the order timingwheel, time.AfterFunc, go-zero (default: all)")
	fullFlag      = flag.Bool("full", false, "run the sizes of the targets (bench/README.md) instead of the quick ones (several minutes)")
	chartsFlag    = flag.String("charts", "", "write charts into this directory")
	chartFormat   = flag.String("chart-format", "png", "chart file format: png or svg")
	quietFlag     = flag.Bool("quiet", false, "show no progress on stderr")
	timeoutFlag   = flag.Duration("timeout", 10*time.Minute, "exit with every goroutine's stack if one case runs this long against one implementation")
	cpuProfile    = flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof); implies -one-process")
	oneProcess    = flag.Bool("one-process", false, "run every workload in this process instead of a fresh child process each")
	childFlag     = flag.Bool("child", false, "internal: run as a child of another wheelbench, printing only the workloads' tables")
	verdictsFlag  = flag.String("verdicts", "", "internal: append the verdicts on the targets to this file, for the parent to print")
	checkFlag     = flag.Bool("check", false, "exit 1 if a target is missed (without it a missed target still exits 0, so that a first run passes as a demo)")
)

func main() {
	flag.Usage = printUsage
	flag.Parse()
	if flag.NArg() > 0 {
		fail("unexpected arguments: %s", strings.Join(flag.Args(), " "))
	}
	prof := Quick
	if *fullFlag {
		prof = Full
	}
	runProfile = prof
	wls, err := selectWorkloads(*workloadsFlag)
	if err != nil {
		fail("%v", err)
	}
	specs, err := selectImpls(*implsFlag)
	if err != nil {
		fail("%v", err)
	}
	if *chartFormat != "png" && *chartFormat != "svg" {
		fail("-chart-format must be png or svg")
	}
	if *chartsFlag != "" {
		if err := os.MkdirAll(*chartsFlag, 0o755); err != nil {
			fail("%v", err)
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fail("%v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail("%v", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	recording := *readmeFlag != "" || *resultsFlag != ""
	if recording && *soakFor > 0 {
		fail("-readme and -results record a run of the workloads: not with -soak")
	}
	if *readmeFlag != "" {
		// Before the run, not after it: a README without its markers
		// would otherwise cost a whole run.
		if err := checkReadme(*readmeFlag); err != nil {
			fail("-readme: %v", err)
		}
	}
	if *fromFlag != "" {
		if *readmeFlag == "" || *resultsFlag != "" {
			fail("-from rewrites the README from a run already made: it takes -readme, and not -results")
		}
		r, err := readRunFile(*fromFlag)
		if err != nil {
			fail("-from: %v", err)
		}
		r.Output = linkFrom(*readmeFlag, *fromFlag)
		if !record(r, nil) {
			os.Exit(1)
		}
		return
	}
	if *soakFor > 0 { // the soak mode (soak.go): a long run instead of the workloads
		code := soakMain()
		pprof.StopCPUProfile() // os.Exit skips the deferred stop
		os.Exit(code)
	}

	// With -readme or -results, what goes to stdout, the children's
	// tables included, is kept for the record too.
	var stdout io.Writer = os.Stdout
	var output bytes.Buffer
	if recording {
		stdout = io.MultiWriter(os.Stdout, &output)
	}
	var mach machine
	if !*childFlag {
		mach = currentMachine()
	}
	out := bufio.NewWriter(stdout)
	if !*childFlag {
		writeHeader(out, prof, specs, mach)
		out.Flush()
	}
	pr := newProgress(os.Stderr, *quietFlag)
	start := time.Now()
	failed := false
	var verdicts []Verdict      // on the targets, for the summary that ends the run
	var figures []workloadCases // every case's figures, for -readme
	if len(wls) > 1 && !*oneProcess && *cpuProfile == "" {
		// A process per workload: what a workload leaves behind in the runtime
		// must not change the garbage collector's pace in the next. Some of it
		// cannot be freed: the runtime never frees a goroutine's g (a storm of
		// 1M time.AfterFunc callbacks, each in a goroutine of its own, keeps
		// ~400 MB) nor shrinks its timer heaps (10M time.AfterFunc timers keep
		// ~180 MB after Stop), and a heap that large sets the next GC goal so
		// high that the purgatory and http workloads would run without a GC.
		dir, err := os.MkdirTemp("", "wheelbench")
		if err != nil {
			fail("%v", err)
		}
		defer os.RemoveAll(dir)
		for i, wl := range wls {
			file := fmt.Sprintf("%s/%d", dir, i)
			figs := fmt.Sprintf("%s/%d.figures", dir, i)
			out.Flush() // the child writes to stdout after what this process wrote
			err := runChild(wl, file, figs, stdout)
			vs, rerr := readVerdicts(file)
			if err == nil && rerr != nil {
				err = fmt.Errorf("reading its verdicts: %v", rerr)
			}
			fs, ferr := readFigures(figs)
			if err == nil && ferr != nil {
				err = fmt.Errorf("reading its figures: %v", ferr)
			}
			figures = append(figures, fs...)
			if err != nil {
				fmt.Fprintf(out, "wheelbench: workload %s: %v\n\n", wl.Name, err)
				failed = true
				vs = failedWorkload(wl)
			}
			verdicts = append(verdicts, vs...)
		}
		wls = nil
	}
	for _, wl := range wls {
		cases := runWorkload(wl, specs, prof, pr)
		pr.clear()
		writeTable(out, wl, cases)
		out.Flush()
		verdicts = append(verdicts, judge(wl, cases)...)
		figures = append(figures, workloadCases{wl.Name, withoutSamples(cases)})
		if *figuresFlag != "" {
			if err := appendFigures(*figuresFlag, wl.Name, cases); err != nil {
				fail("%v", err)
			}
		}
		for _, cr := range cases {
			for _, r := range cr.Results {
				failed = failed || r.Err != nil
			}
		}
		if *chartsFlag != "" {
			for _, c := range wl.Charts {
				files, err := c.Draw(*chartsFlag, *chartFormat, wl, cases)
				for _, f := range files {
					fmt.Fprintf(out, "chart: %s\n", f)
				}
				if err != nil {
					fmt.Fprintf(out, "chart: %v\n", err)
					failed = true
				}
			}
			if len(wl.Charts) > 0 {
				fmt.Fprintln(out)
			}
			out.Flush()
		}
	}
	if *verdictsFlag != "" {
		if err := appendVerdicts(*verdictsFlag, verdicts); err != nil {
			fail("%v", err)
		}
	}
	if !*childFlag {
		writeVerdicts(out, verdicts)
		fmt.Fprintf(out, "wheelbench: done in %.1fs\n", time.Since(start).Seconds())
		if n := missed(verdicts); n > 0 && *checkFlag {
			fmt.Fprintf(out, "wheelbench: %d target(s) missed (-check)\n", n)
			failed = true
		}
	}
	out.Flush()
	if recording {
		r := run{Machine: mach, Command: commandLine(), Profile: prof, SizesGiven: sizesGiven(), Elapsed: time.Since(start),
			Workloads: figures, Verdicts: verdicts, Failed: failed}
		if !record(r, output.Bytes()) {
			failed = true
		}
	}
	if failed {
		pprof.StopCPUProfile() // os.Exit skips the deferred stop
		os.Exit(1)
	}
}

// runChild runs wl in a child process: this command again, with the same
// flags but those that record the run, -workloads wl, -child, -verdicts
// verdicts and -figures figures. Its tables and charts go to stdout, its
// progress to stderr, its verdicts on the targets to the file verdicts,
// and its cases' figures to the file figures.
func runChild(wl *Workload, verdicts, figures string, stdout io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"-child", "-workloads=" + wl.Name, "-verdicts=" + verdicts, "-figures=" + figures}
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "workloads", "child", "verdicts", "figures", "readme", "results":
		default:
			args = append(args, "-"+f.Name+"="+f.Value.String())
		}
	})
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = stdout, os.Stderr
	return cmd.Run()
}

// record writes the run to the file of -results and the README of
// -readme, and says where on stdout. A run in which a workload failed goes
// to -results, which keeps what happened, but not into the README. It
// reports whether all went well.
func record(r run, output []byte) bool {
	ok := true
	if *resultsFlag != "" {
		path, err := writeResults(*resultsFlag, r, output)
		if err != nil {
			fmt.Fprintf(os.Stderr, "wheelbench: -results: %v\n", err)
			ok = false
		} else {
			fmt.Printf("wheelbench: this run's output is in %s\n", path)
			if *readmeFlag != "" {
				r.Output = linkFrom(*readmeFlag, path)
			}
		}
	}
	if *readmeFlag != "" {
		switch {
		case r.Failed:
			fmt.Fprintf(os.Stderr, "wheelbench: -readme: a workload failed; %s left as it was\n", *readmeFlag)
			ok = false
		default:
			if err := rewriteReadme(*readmeFlag, readmeSection(r)); err != nil {
				fmt.Fprintf(os.Stderr, "wheelbench: -readme: %v\n", err)
				ok = false
			} else {
				fmt.Printf("wheelbench: the Results section of %s is this run's\n", *readmeFlag)
			}
		}
	}
	return ok
}

// runWorkload runs every case of wl against every implementation, always
// in the order of specs.
func runWorkload(wl *Workload, specs []*ImplSpec, prof Profile, pr *Progress) []CaseResult {
	var cases []CaseResult
	for _, c := range wl.Cases(prof) {
		cr := CaseResult{Case: c}
		for _, spec := range specs {
			pr.begin(wl.Name, c.Label, spec.Name)
			cr.Results = append(cr.Results, runCase(c, spec, prof, pr, *timeoutFlag))
		}
		cases = append(cases, cr)
	}
	return cases
}

func writeHeader(w io.Writer, prof Profile, specs []*ImplSpec, m machine) {
	fmt.Fprintf(w, "wheelbench: github.com/go-timingwheel/timingwheel and its peers, in one run (a process per workload)\n\n")
	fmt.Fprintf(w, "  date     %s\n", m.Date.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "  commit   %s\n", m.commit())
	fmt.Fprintf(w, "  cpu      %s\n", m.cpus())
	fmt.Fprintf(w, "  go       %s\n", m.Go)
	switch prof {
	case Full:
		fmt.Fprintf(w, "  sizes    full: those of the targets (bench/README.md, \"Workloads and targets\")\n")
	default:
		fmt.Fprintf(w, "  sizes    quick: reduced, so that all the workloads run in %s; -full runs those of the targets\n", quickDuration)
	}
	fmt.Fprintf(w, "  peers\n")
	for _, s := range specs {
		for i, line := range wrap(s.How(), 80) {
			name := ""
			if i == 0 {
				name = s.Name
			}
			fmt.Fprintf(w, "    %-15s %s\n", name, line)
		}
	}
	fmt.Fprintf(w, "\n  ratio: timingwheel's figure ÷ the other's, everywhere: a peer's in the same case of\n")
	fmt.Fprintf(w, "         this run (tables), a target's baseline or bound (targets); below 1.00×\n")
	fmt.Fprintf(w, "         timingwheel's figure is the lower.\n")
	fmt.Fprintf(w, "  CPU:   the whole process's user+system time (getrusage): background goroutines\n")
	fmt.Fprintf(w, "         and the garbage collector count.\n\n")
}

// wrap breaks s into lines of at most width runes, at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// cpuModel returns the processor's model name from /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return "unknown CPU (" + runtime.GOARCH + ")"
}

// selectWorkloads returns the workloads named in list; for an empty list,
// those a run of runProfile runs by default.
func selectWorkloads(list string) ([]*Workload, error) {
	if list == "" {
		var all []*Workload
		for _, w := range workloads {
			if !w.OnRequest && (!w.QuickOnRequest || runProfile == Full) {
				all = append(all, w)
			}
		}
		return all, nil
	}
	var sel []*Workload
	for name := range strings.SplitSeq(list, ",") {
		i := slices.IndexFunc(workloads, func(w *Workload) bool { return w.Name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("unknown workload %q (have %s)", name, workloadNames())
		}
		if !slices.Contains(sel, workloads[i]) {
			sel = append(sel, workloads[i])
		}
	}
	return sel, nil
}

// selectImpls returns the implementations named in list, in the order of
// impls whatever the order of list.
func selectImpls(list string) ([]*ImplSpec, error) {
	if list == "" {
		return impls, nil
	}
	names := strings.Split(list, ",")
	for _, n := range names {
		if !slices.ContainsFunc(impls, func(s *ImplSpec) bool { return s.Name == strings.TrimSpace(n) }) {
			return nil, fmt.Errorf("unknown implementation %q (have %s)", n, implNames())
		}
	}
	var sel []*ImplSpec
	for _, s := range impls {
		if slices.ContainsFunc(names, func(n string) bool { return strings.TrimSpace(n) == s.Name }) {
			sel = append(sel, s)
		}
	}
	return sel, nil
}

func workloadNames() string {
	var s []string
	for _, w := range workloads {
		s = append(s, w.Name)
	}
	return strings.Join(s, ", ")
}

func implNames() string {
	var s []string
	for _, i := range impls {
		s = append(s, i.Name)
	}
	return strings.Join(s, ", ")
}

func printUsage() {
	w := flag.CommandLine.Output()
	fmt.Fprintf(w, "usage: wheelbench [flags]\n\n")
	fmt.Fprintf(w, "Runs each workload against each implementation, a fresh process per workload,\n")
	fmt.Fprintf(w, "and prints a table per workload. Without -full, the sizes are reduced so that\n")
	fmt.Fprintf(w, "all the workloads run in %s. The run ends with a line per target, met,\n", quickDuration)
	fmt.Fprintf(w, "missed or not shown, and exits 1 if a workload failed; a missed target exits 1\n")
	fmt.Fprintf(w, "only with -check, so that a first run, without it, passes as a demo.\n\n")
	fmt.Fprintf(w, "workloads:\n")
	for _, wl := range workloads {
		title := wl.Title
		switch {
		case wl.OnRequest:
			title = "(on request: only when -workloads names it) " + title
		case wl.QuickOnRequest:
			title = "(with -full, or when -workloads names it) " + title
		}
		for i, line := range wrap(title, 66) {
			name := ""
			if i == 0 {
				name = wl.Name
			}
			fmt.Fprintf(w, "  %-10s %s\n", name, line)
		}
	}
	fmt.Fprintf(w, "\nimplementations: %s\n\nflags:\n", implNames())
	flag.PrintDefaults()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "wheelbench: "+format+"\n", args...)
	os.Exit(2)
}
