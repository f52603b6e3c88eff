package main

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestProgramsMigrate is the check that the migration is whole: each
// program under testdata/programs, a service of some size with tests of
// its own, passes its tests on the time package, is rewritten by
// "twmigrate -fix ./..." and passes them again on the wheel, with no hand
// edits. What the command leaves on the time package is reported, each
// with its reason, and must be what the program's table says.
//
// kvserver is a TCP server: an idle timer per connection reset on every
// command, a deadline per command, a debounced save with a channel timer
// and its drains, retries with time.After, a ticker. jobs is a scheduler
// package with a map of time.AfterFunc timers, functions that return
// timers, and an exported method that hands one to its callers, with a
// command that uses it.
func TestProgramsMigrate(t *testing.T) {
	t.Parallel()
	for _, p := range []struct {
		name  string
		stays []string // what twmigrate reports after -fix, a regexp a line
	}{
		{name: "kvserver"},
		{name: "jobs", stays: []string{
			// jobsd's own watchdog variable holds this timer too, but has
			// nothing to rewrite: it is not reported.
			`scheduler/scheduler.go:\d+:\d+: the result of Scheduler.Watchdog, calm: not migrated, stays \*time.Timer: exported method Scheduler.Watchdog may implement an interface, or be called from another package`,
		}},
	} {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			copyTree(t, filepath.Join("testdata", "programs", p.name), dir)
			env := module(t, dir, p.name)

			goCmd(t, dir, env, "test", "-count=1", "./...")
			before := readTree(t, dir)

			twmigrate(t, dir, env, "-fix", "./...")
			after := readTree(t, dir)
			goCmd(t, dir, env, "vet", "./...")
			goCmd(t, dir, env, "test", "-count=1", "./...")

			files, added, removed := 0, 0, 0
			for _, name := range slices.Sorted(maps.Keys(after)) {
				if !strings.HasSuffix(name, ".go") || before[name] == after[name] {
					continue
				}
				a, r := lineDiff(strings.Split(before[name], "\n"), strings.Split(after[name], "\n"))
				files, added, removed = files+1, added+a, removed+r
			}
			t.Logf("%s: -fix changed %d files, +%d -%d lines", p.name, files, added, removed)
			if files == 0 {
				t.Fatal("nothing was rewritten")
			}
			for _, name := range []string{"go.mod"} {
				if !strings.Contains(after[name], wheelPath) {
					t.Errorf("%s lost the requirement of timingwheel", name)
				}
			}

			out := strings.TrimSpace(twmigrate(t, dir, env, "./..."))
			var lines []string
			if out != "" {
				for _, l := range strings.Split(out, "\n") {
					lines = append(lines, strings.TrimPrefix(l, dir+string(filepath.Separator)))
				}
			}
			if len(lines) != len(p.stays) {
				t.Fatalf("after -fix, twmigrate reports:\n%s\nwant %d lines", strings.Join(lines, "\n"), len(p.stays))
			}
			for i, l := range lines {
				if !regexp.MustCompile("^" + p.stays[i] + "").MatchString(l) {
					t.Errorf("after -fix, line %d: %s\nwant %s", i, l, p.stays[i])
				}
			}
		})
	}
}

func goCmd(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readTree returns the content of every file under dir, by relative name.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := make(map[string]string)
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		content, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[rel] = string(content)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// lineDiff counts the lines that b adds to a and removes from it: those
// outside a longest common subsequence.
func lineDiff(a, b []string) (added, removed int) {
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	common := lcs[0][0]
	return len(b) - common, len(a) - common
}

// TestMigrationKeepsBehaviour runs "twmigrate -fix ./..." on small modules,
// each a program that runs (or passes its tests) on the time package, and
// demands that the rewritten one still vets and prints what it printed
// before. Each case was a rewrite that broke the build or the program.
func TestMigrationKeepsBehaviour(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		files map[string]string
		check []string // the go command whose output must not change
	}{
		{
			// a.t gets a time.AfterFunc timer; b, the same layout, gets
			// none, and b(x) converts one into the other.
			name:  "named struct conversion",
			check: []string{"run", "."},
			files: map[string]string{"main.go": `package main

import (
	"fmt"
	"time"
)

type a struct{ t *time.Timer }
type b struct{ t *time.Timer }

func main() {
	x := a{t: time.AfterFunc(time.Hour, func() {})}
	y := b(x)
	fmt.Println(y.t.Stop())
}
`},
		},
		{
			// A value of an unnamed struct type assigned to a variable of a
			// named one with the same underlying type.
			name:  "unnamed struct assigned to named",
			check: []string{"run", "."},
			files: map[string]string{"main.go": `package main

import (
	"fmt"
	"time"
)

type entry struct{ t *time.Timer }

func main() {
	var e entry
	e.t = time.AfterFunc(time.Hour, func() {})
	anon := struct{ t *time.Timer }{}
	e = anon
	fmt.Println(e.t == nil)
}
`},
		},
		{
			// A conversion to a named slice type whose value goes nowhere
			// that holds the named type.
			name:  "conversion to named slice",
			check: []string{"run", "."},
			files: map[string]string{"main.go": `package main

import (
	"fmt"
	"time"
)

type timers []*time.Timer

func main() {
	ts := []*time.Timer{time.NewTimer(time.Hour)}
	fmt.Println(len(timers(ts)))
}
`},
		},
		{
			// An unnamed struct with a timer in it, put in an interface and
			// taken out by a type assertion that names the struct again.
			name:  "unnamed struct through interface",
			check: []string{"run", "."},
			files: map[string]string{"main.go": `package main

import (
	"fmt"
	"time"
)

func main() {
	t := time.NewTimer(time.Hour)
	var x any = struct{ t *time.Timer }{t}
	_, ok := x.(struct{ t *time.Timer })
	fmt.Println("assertion ok:", ok)
}
`},
		},
		{
			// newTimer says, with a one-argument go:linkname, that other
			// packages reference it: q does, with the old signature.
			name:  "go:linkname push",
			check: []string{"run", "./cmd"},
			files: map[string]string{
				"p/p.go": `package p

import (
	"time"
	_ "unsafe"
)

//go:linkname newTimer
func newTimer(d time.Duration) *time.Timer {
	return time.NewTimer(d)
}

func Use() { newTimer(time.Hour).Stop() }
`,
				"q/q.go": `package q

import (
	"time"
	_ "unsafe"

	_ "example.com/probe/p"
)

//go:linkname newTimer example.com/probe/p.newTimer
func newTimer(d time.Duration) *time.Timer

func Fire() bool {
	t := newTimer(time.Millisecond)
	<-t.C
	return true
}
`,
				"cmd/main.go": `package main

import (
	"fmt"

	"example.com/probe/q"
)

func main() { fmt.Println("fired:", q.Fire()) }
`,
			},
		},
		{
			// A main package's exported field, which its external test
			// package (package main_test) imports and names.
			name:  "main package and its external test",
			check: []string{"test", "-count=1", "."},
			files: map[string]string{
				"main.go": `package main

import (
	"fmt"
	"time"
)

type Server struct{ Idle *time.Timer }

func NewServer() *Server { return &Server{Idle: time.AfterFunc(time.Hour, func() {})} }

func main() { fmt.Println(NewServer().Idle.Stop()) }
`,
				"main_test.go": `package main_test

import (
	"testing"
	"time"

	main "example.com/probe"
)

func TestIdle(t *testing.T) {
	var idle *time.Timer = main.NewServer().Idle
	if !idle.Stop() {
		t.Fatal("not armed")
	}
}
`,
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			env := module(t, dir, "probe")
			for name, content := range c.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(dir, name), content)
			}
			before, err := goOut(dir, env, c.check...)
			if err != nil {
				t.Fatalf("before the rewrite, go %s: %v\n%s", strings.Join(c.check, " "), err, before)
			}
			twmigrate(t, dir, env, "-fix", "./...")
			if out, err := goOut(dir, env, "vet", "./..."); err != nil {
				t.Errorf("after the rewrite, go vet: %v\n%s", err, out)
			}
			after, err := goOut(dir, env, c.check...)
			if err != nil || filterTimes(after) != filterTimes(before) {
				t.Errorf("go %s: before the rewrite:\n%s\nafter (%v):\n%s", strings.Join(c.check, " "), before, err, after)
			}
		})
	}
}

func goOut(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// filterTimes drops the durations go test prints.
func filterTimes(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "ok" {
			l = f[0] + " " + f[1]
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// module makes dir the module example.com/name, which builds against this
// checkout of the library, and returns the environment of the go commands
// to run there: -mod=mod lets go add the library's own requirements, from
// the module cache that building this test filled.
func module(t *testing.T, dir, name string) []string {
	t.Helper()
	lib, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.mod"), fmt.Sprintf("module example.com/%s\n\ngo 1.25.0\n\nrequire %s v0.0.0-00010101000000-000000000000\n\nreplace %s => %s\n",
		name, wheelPath, wheelPath, lib))
	write(t, filepath.Join(dir, "go.sum"), string(sum))
	return []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GO111MODULE=on"}
}
