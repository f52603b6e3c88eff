// Package defaulttimer lets the tests of the packages built on timingwheel
// stop the default SystemTimer (timingwheel.Default) once their tests have
// run. A program never stops the default, so its goroutines live as long as
// the process; in a test binary, goleak.VerifyTestMain would report them as
// leaked. Wrapping the testing.M with Main stops the default before goleak
// looks, and a goroutine any other SystemTimer left behind is still reported.
package defaulttimer

// Stop stops the default SystemTimer, if it was made, and forgets it, so
// that the next use makes another. Package timingwheel sets it; it is nil
// in a binary that does not link that package.
var Stop func()

// M is what goleak.VerifyTestMain runs: a *testing.M.
type M interface{ Run() int }

// Main returns m, whose Run also stops the default SystemTimer once the
// tests have run: pass it to goleak.VerifyTestMain.
func Main(m M) M { return stopAfter{m} }

type stopAfter struct{ m M }

func (s stopAfter) Run() int {
	code := s.m.Run()
	if Stop != nil {
		Stop()
	}
	return code
}
