package main

import (
	"bytes"
	"errors"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestMain runs the test binary as the command itself when asked, so that
// the tests run twmigrate as a user does (go/packages, test variants, the
// driver's merging of fixes) without building it first.
func TestMain(m *testing.M) {
	if os.Getenv("TWMIGRATE_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// twmigrate runs the command in dir with env added to the environment, and
// returns what it printed.
func twmigrate(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "TWMIGRATE_RUN_MAIN=1"), env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	// 3 is the status of a run that reported diagnostics.
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) {
		t.Fatalf("twmigrate %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// gopathEnv is the environment of a command run in a GOPATH tree, as
// analysistest runs the analysis on testdata/src.
func gopathEnv(gopath string) []string {
	return []string{"GOPATH=" + gopath, "GO111MODULE=off", "GOWORK=off", "GOPROXY=off", "GOFLAGS="}
}

// TestOwnTests runs the command on owntests, a package whose test files
// give one of its fields a timer of another kind. analysistest checks
// each of a package's variants on its own, and expects the diagnostics of
// a file in each; twmigrate reports and rewrites only in the variant with
// the test files (the other cannot see what they do), so the package is
// checked here, against the merged output of every variant.
func TestOwnTests(t *testing.T) {
	t.Parallel()
	gopath := t.TempDir()
	src := filepath.Join(gopath, "src", "owntests")
	copyTree(t, filepath.Join("testdata", "src", "owntests"), src)
	out := twmigrate(t, gopath, gopathEnv(gopath), "owntests")
	checkWants(t, src, out)
	twmigrate(t, gopath, gopathEnv(gopath), "-fix", "owntests")
	checkGolden(t, filepath.Join("testdata", "src", "owntests"), src)
}

var (
	wantComment = regexp.MustCompile("// want (`[^`]*`( `[^`]*`)*)")
	wantPattern = regexp.MustCompile("`([^`]*)`")
	diagLine    = regexp.MustCompile(`^(.*\.go):(\d+):\d+: (.*)$`)
)

// checkWants matches the diagnostics that out reports against the
// "// want `regexp`" comments of the .go files under dir, as analysistest
// does: each diagnostic matches a pattern on its line, and each pattern a
// diagnostic.
func checkWants(t *testing.T, dir, out string) {
	t.Helper()
	type key struct {
		file string
		line string
	}
	want := make(map[key][]*regexp.Regexp)
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		content, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(content), "\n") {
			if m := wantComment.FindStringSubmatch(line); m != nil {
				for _, p := range wantPattern.FindAllStringSubmatch(m[1], -1) {
					k := key{filepath.Base(f), strconv.Itoa(i + 1)}
					want[k] = append(want[k], regexp.MustCompile(p[1]))
				}
			}
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		m := diagLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("not a diagnostic: %s", line)
			continue
		}
		k := key{filepath.Base(m[1]), m[2]}
		i := slices.IndexFunc(want[k], func(re *regexp.Regexp) bool { return re.MatchString(m[3]) })
		if i < 0 {
			t.Errorf("%s:%s: unexpected diagnostic: %s", k.file, k.line, m[3])
			continue
		}
		want[k] = slices.Delete(want[k], i, i+1)
	}
	for k, res := range want {
		for _, re := range res {
			t.Errorf("%s:%s: no diagnostic matching %s", k.file, k.line, re)
		}
	}
}

// checkGolden compares each .go file under got with the .golden file
// beside the original in orig, or with the original where there is none.
func checkGolden(t *testing.T, orig, got string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(orig, "*.go"))
	for _, f := range files {
		want, err := os.ReadFile(f + ".golden")
		if os.IsNotExist(err) {
			want, err = os.ReadFile(f)
		}
		if err != nil {
			t.Fatal(err)
		}
		have, err := os.ReadFile(filepath.Join(got, filepath.Base(f)))
		if err != nil {
			t.Fatal(err)
		}
		if w, err := format.Source(want); err == nil {
			want = w
		}
		if !bytes.Equal(have, want) {
			t.Errorf("%s after -fix:\n%s\nwant:\n%s", filepath.Base(f), have, want)
		}
	}
}

// copyTree copies the files under from into to.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), content, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
