// Command mutants is the mutation check of the concurrency suite: it puts
// hand-written bugs (mutants) into the state machines, one at a time, in a
// copy of the repository, runs the concurrency tests as CI runs them, and
// prints a table: which test killed each mutant, and how long it took, in
// each of several runs. The tests are those of the CI's commands for the
// root package and the conctest module (scripts/test): the concurrency
// suite plain and with failpoints, and the package's other tests. A mutant is killed when a CI command fails on it;
// every mutant must be killed in every run. Run it as scripts/mutants (see
// there); it is slow, and not part of CI.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// A mutant replaces the one occurrence of old in file by new, and of each
// further pair in more (old, new, old, new, ...), if any.
type mutant struct {
	name, file, old, new, why string
	more                      []string
}

// concurrency is the CI's selection of the concurrency suite (scripts/test).
const concurrency = "Concurrent|Stress|Starvation"

// A stage is part of one of the CI's commands. The stages run in turn and a
// run stops at the first that fails: the delay queue's tests of its
// timerfd first (a second; a timerfd in a synctest bubble stops the
// bubble's time, and the tests after would wait out their timeout), then
// the window tests, since they kill a mutant of their window in a second,
// then the package's other
// tests (deterministic, a minute), those of the internal packages (the
// executor's), the instrumented locality test and the placement tests
// without the race detector (under it, pushers count on the shard), then
// the rest of the suite.
type stage struct {
	name   string
	binary string // plain or failpoints: the package's test binary
	run    string // -test.run
	skip   string // -test.skip
	dir    string // for go test stages: the module to test
	pkgs   string // for go test stages: the packages, if not ./...
	tags   string
	noRace bool // for go test stages: without the race detector
}

var stages = []stage{
	{name: "delay queue's alarm", dir: ".", pkgs: "./delayqueue", run: "TestPollWakesByTheFineAlarm|TestNoTimerfdInABubble|TestTimerfdOfAnUnclosedQueueEnds"},
	{name: "windows, failpoints", binary: "failpoints", run: "Window"},
	{name: "windows", binary: "plain", run: "Window"},
	{name: "unit tests", binary: "plain", run: ".", skip: concurrency},
	{name: "internal packages", dir: ".", pkgs: "./internal/..."},
	{name: "locality", dir: ".", pkgs: ".", tags: "timingwheel_locality", run: "TestLocality", noRace: true},
	{name: "placement", dir: ".", pkgs: ".", run: "TestShardLocality|TestProcCount|TestPushCount", noRace: true},
	{name: "suite, failpoints", binary: "failpoints", run: concurrency},
	{name: "suite", binary: "plain", run: concurrency},
	{name: "conctest, failpoints", dir: "conctest", tags: "timingwheel_failpoints"},
	{name: "conctest", dir: "conctest"},
}

func main() {
	runs := flag.Int("runs", 3, "runs per mutant")
	only := flag.String("only", "", "run only the mutants whose name matches this regexp")
	list := flag.Bool("list", false, "list the mutants and exit")
	build := flag.Bool("build", false, "only check that each mutant compiles (its package's tests, plain and with failpoints), and exit")
	timeout := flag.Duration("timeout", 10*time.Minute, "bound on one stage")
	flag.Parse()
	if *list {
		for _, m := range mutants {
			fmt.Printf("%-28s %-14s %s\n", m.name, m.file, m.why)
		}
		return
	}
	sel := regexp.MustCompile(*only)
	root, err := os.Getwd()
	check(err)
	tmp, err := os.MkdirTemp("", "mutants")
	check(err)
	defer os.RemoveAll(tmp)
	copyTree(root, tmp)

	if *build {
		bad := 0
		for _, m := range mutants {
			if sel.MatchString(m.name) && !builds(tmp, m) {
				bad++
			}
		}
		if bad > 0 {
			fmt.Printf("%d mutant(s) do not build\n", bad)
			os.Exit(1)
		}
		return
	}
	fmt.Printf("| mutant | file | killed | by | time to kill, each run |\n|---|---|---|---|---|\n")
	failed := 0
	for _, m := range mutants {
		if !sel.MatchString(m.name) {
			continue
		}
		row := runMutant(tmp, m, *runs, *timeout)
		fmt.Println(row.String(m))
		if row.killed < *runs {
			failed++
		}
	}
	if failed > 0 {
		fmt.Printf("\n%d mutant(s) survived at least one run\n", failed)
		os.Exit(1)
	}
}

type result struct {
	killed int
	by     []string
	times  []string
}

func (r result) String(m mutant) string {
	by := uniq(r.by)
	return fmt.Sprintf("| %s | %s | %d of %d | %s | %s |", m.name, m.file, r.killed, len(r.times), strings.Join(by, ", "), strings.Join(r.times, ", "))
}

// builds applies m to the copy at dir and reports whether the package of
// its file, tests included, compiles, plain and with the failpoints (as
// the runs build it: no vet); it says why not.
func builds(dir string, m mutant) bool {
	defer apply(dir, m)()
	ok := true
	pkg := "./" + filepath.ToSlash(filepath.Dir(m.file))
	for _, tags := range []string{"", "timingwheel_failpoints"} {
		if out, err := command(context.Background(), dir, "go", "test", "-c", "-o", os.DevNull, "-tags", tags, pkg).CombinedOutput(); err != nil {
			fmt.Printf("mutant %s does not build (tags %q):\n%s\n", m.name, tags, out)
			ok = false
		}
	}
	return ok
}

// apply applies m to the copy at dir, and returns the function that takes
// it out again.
func apply(dir string, m mutant) (restore func()) {
	path := filepath.Join(dir, m.file)
	orig, err := os.ReadFile(path)
	check(err)
	src := orig
	pairs := append([]string{m.old, m.new}, m.more...)
	for i := 0; i+1 < len(pairs); i += 2 {
		if n := bytes.Count(src, []byte(pairs[i])); n != 1 {
			fmt.Fprintf(os.Stderr, "mutant %s: %q occurs %d times in %s, want once\n", m.name, pairs[i], n, m.file)
			os.Exit(2)
		}
		src = bytes.Replace(src, []byte(pairs[i]), []byte(pairs[i+1]), 1)
	}
	check(os.WriteFile(path, src, 0o644))
	return func() { check(os.WriteFile(path, orig, 0o644)) }
}

// runMutant applies m to the copy at dir, builds the package's test
// binaries, and runs the stages runs times.
func runMutant(dir string, m mutant, runs int, timeout time.Duration) result {
	defer apply(dir, m)()

	var r result
	// A mutant that does not compile is no mutant: a mistake in the list.
	for _, b := range []struct{ name, tags string }{{"plain", ""}, {"failpoints", "timingwheel_failpoints"}} {
		args := []string{"test", "-c", "-race", "-o", filepath.Join(dir, b.name+".test")}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		if out, err := command(context.Background(), dir, "go", args...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "mutant %s does not build:\n%s\n", m.name, out)
			os.Exit(2)
		}
	}
	for range runs {
		start := time.Now()
		killed := false
		for _, s := range stages {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			var cmd *exec.Cmd
			if s.dir != "" {
				args := []string{"test", "-count=1", "-failfast"}
				if !s.noRace {
					args = append(args, "-race")
				}
				if s.tags != "" {
					args = append(args, "-tags", s.tags)
				}
				if s.run != "" {
					args = append(args, "-run", s.run)
				}
				pkgs := "./..."
				if s.pkgs != "" {
					pkgs = s.pkgs
				}
				cmd = command(ctx, filepath.Join(dir, s.dir), "go", append(args, pkgs)...)
			} else {
				args := []string{"-test.run=" + s.run, "-test.count=1", "-test.failfast", "-test.v", "-test.timeout=" + timeout.String()}
				if s.skip != "" {
					args = append(args, "-test.skip="+s.skip)
				}
				cmd = command(ctx, dir, filepath.Join(dir, s.binary+".test"), args...)
			}
			out, err := cmd.CombinedOutput()
			cancel()
			if err != nil {
				killed = true
				r.killed++
				r.by = append(r.by, killer(out, s.name))
				r.times = append(r.times, fmt.Sprintf("%.1fs", time.Since(start).Seconds()))
				break
			}
		}
		if !killed {
			r.times = append(r.times, "survived")
		}
	}
	return r
}

// killer names the first test that failed in out, and the stage.
func killer(out []byte, stage string) string {
	re := regexp.MustCompile(`--- FAIL: (\S+)`)
	if m := re.FindSubmatch(out); m != nil {
		name := string(m[1])
		// The parent test of a failing subtest is enough for the table.
		if i := strings.IndexByte(name, '/'); i >= 0 {
			name = name[:i]
		}
		return name + " (" + stage + ")"
	}
	if i := bytes.Index(out, []byte("panic:")); i >= 0 || bytes.Contains(out, []byte("fatal error:")) {
		// A crash ends the binary before it reports the test: name the
		// last test that started (-test.v) before it.
		if i < 0 {
			i = bytes.Index(out, []byte("fatal error:"))
		}
		run := regexp.MustCompile(`=== RUN\s+(\S+)`).FindAllSubmatch(out[:i], -1)
		if len(run) > 0 {
			name := string(run[len(run)-1][1])
			if j := strings.IndexByte(name, '/'); j >= 0 {
				name = name[:j]
			}
			return "a crash in " + name + " (" + stage + ")"
		}
		return "a crash (" + stage + ")"
	}
	return "exit status (" + stage + ")"
}

func command(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// copyTree copies the files git knows of (tracked, or untracked and not
// ignored) from root to dst: the working tree as it is, uncommitted
// changes included.
func copyTree(root, dst string) {
	out, err := command(context.Background(), root, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	check(err)
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		check(err)
		check(os.MkdirAll(filepath.Join(dst, filepath.Dir(f)), 0o755))
		check(os.WriteFile(filepath.Join(dst, f), data, 0o644))
	}
}

func uniq(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(2)
	}
}
