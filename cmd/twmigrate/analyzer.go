package main

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/analysis"
)

const wheelPath = "github.com/go-timingwheel/timingwheel"

var analyzer = &analysis.Analyzer{
	Name: "twmigrate",
	Doc: `move a package's timers from the time and context packages to timingwheel

twmigrate reports the calls of time.AfterFunc, NewTimer, After, NewTicker,
Tick and Sleep and of context.WithTimeout, WithDeadline, WithTimeoutCause and
WithDeadlineCause that can move to timingwheel's package-level functions, with
the *time.Timer and *time.Ticker types that hold their results, and the
timers it leaves alone, with the reason. With -fix it rewrites the first.`,
	Run: run,
}

// kind is what a time package constructor makes, and so which timingwheel
// type takes the place of the *time.Timer or *time.Ticker that holds it.
type kind int

const (
	kindNone      kind = iota
	kindAfterFunc      // *timingwheel.Timer
	kindNewTimer       // *timingwheel.ChanTimer
	kindNewTicker      // *timingwheel.Ticker
)

var constructors = map[string]kind{
	"AfterFunc": kindAfterFunc,
	"NewTimer":  kindNewTimer,
	"NewTicker": kindNewTicker,
}

var (
	kindFunc = [...]string{kindAfterFunc: "AfterFunc", kindNewTimer: "NewTimer", kindNewTicker: "NewTicker"}
	kindType = [...]string{kindAfterFunc: "Timer", kindNewTimer: "ChanTimer", kindNewTicker: "Ticker"}
)

// renamed are the functions that timingwheel repeats with the same
// signature: any reference to one moves by changing its package alone.
var renamed = map[string]map[string]bool{
	"time":    {"After": true, "Tick": true, "Sleep": true},
	"context": {"WithTimeout": true, "WithDeadline": true, "WithTimeoutCause": true, "WithDeadlineCause": true},
}

func run(pass *analysis.Pass) (any, error) {
	if len(pass.Files) == 0 {
		return nil, nil
	}
	// The library and the packages of its module: the library cannot call
	// itself, and its internal packages are imported by it.
	if p := strings.TrimSuffix(pass.Pkg.Path(), "_test"); p == wheelPath || strings.HasPrefix(p, wheelPath+"/") {
		return nil, nil
	}
	if why := testHazard(pass); why != "" {
		pass.Report(analysis.Diagnostic{
			Pos:     firstFile(pass).Name.Pos(),
			Message: fmt.Sprintf("package %s not migrated: %s", pass.Pkg.Name(), why),
		})
		return nil, nil
	}
	// A package with test files of its own is analyzed twice, without them
	// and with them. Only the second sees every use of the package's
	// timers, so only the second rewrites: the first could change a field
	// that a test file gives a timer the migration cannot follow.
	if !hasTestFiles(pass) && dirHasOwnTests(pass) {
		return nil, nil
	}
	m := newMigrator(pass)
	m.prepare()
	for _, f := range pass.Files {
		m.walk(f)
	}
	m.finish()
	m.report()
	return nil, nil
}

func hasTestFiles(pass *analysis.Pass) bool {
	for _, f := range pass.Files {
		if strings.HasSuffix(pass.Fset.File(f.Pos()).Name(), "_test.go") {
			return true
		}
	}
	return false
}

// firstFile is the package's file whose package clause carries a report
// about the whole package: the same in every variant of the package, so
// that the drivers print it once.
func firstFile(pass *analysis.Pass) *ast.File {
	var first *ast.File
	var firstName string
	for _, f := range pass.Files {
		name := pass.Fset.File(f.Pos()).Name()
		if first == nil || strings.HasSuffix(firstName, "_test.go") && !strings.HasSuffix(name, "_test.go") ||
			strings.HasSuffix(firstName, "_test.go") == strings.HasSuffix(name, "_test.go") && name < firstName {
			first, firstName = f, name
		}
	}
	return first
}

// testFiles returns the test files in the package's directory that the
// build would compile, its external test package's included.
func testFiles(pass *analysis.Pass) []string {
	dir := filepath.Dir(pass.Fset.File(pass.Files[0].Pos()).Name())
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(dir, name); err == nil && ok {
			names = append(names, filepath.Join(dir, name))
		}
	}
	return names
}

// testHazard says why the package's tests would break if its timers ran
// on the default wheel, or "". In a testing/synctest bubble, time is the
// bubble's: the default wheel's goroutines run outside it (or, started
// inside, outlive it), and the runtime forbids them to send on its
// channels. goleak reports the default wheel's goroutines, which live as
// long as the program.
func testHazard(pass *analysis.Pass) string {
	for _, name := range testFiles(pass) {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			continue
		}
		for _, imp := range f.Imports {
			switch imp.Path.Value {
			case `"testing/synctest"`:
				return fmt.Sprintf("%s runs tests in testing/synctest bubbles, which the default wheel's goroutines are outside of", filepath.Base(name))
			case `"go.uber.org/goleak"`:
				return fmt.Sprintf("%s checks for leaked goroutines with goleak, which would report the default wheel's", filepath.Base(name))
			}
		}
	}
	return ""
}

// dirHasOwnTests reports whether the package's directory holds test files
// of the package itself (not of its external test package) that the build
// would compile.
func dirHasOwnTests(pass *analysis.Pass) bool { return dirHasTests(pass, true) }

// dirHasExternalTests reports whether it holds test files of its external
// test package, which imports the package: so even a main package's
// exported names are seen by another package, which the migration of
// this one does not rewrite.
func dirHasExternalTests(pass *analysis.Pass) bool { return dirHasTests(pass, false) }

func dirHasTests(pass *analysis.Pass, own bool) bool {
	for _, name := range testFiles(pass) {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.PackageClauseOnly)
		if err == nil && (f.Name.Name == pass.Pkg.Name()) == own {
			return true
		}
	}
	return false
}

// ignoredNames returns the identifiers that the package's files left out
// by build constraints mention, each with the file's name: such a file
// may use a field or function whose type the migration changes, and
// nothing type-checks it here.
func ignoredNames(pass *analysis.Pass) map[string]string {
	names := make(map[string]string)
	for _, name := range pass.IgnoredFiles {
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		src, err := pass.ReadFile(name)
		if err != nil {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
		if err != nil || f.Name.Name != pass.Pkg.Name() {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				if _, seen := names[id.Name]; !seen {
					names[id.Name] = filepath.Base(name)
				}
			}
			return true
		})
	}
	return names
}
