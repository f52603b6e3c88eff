// Package isolate runs a test body in a child process, so that a crash (a
// nil dereference, a fatal error such as an unlock of an unlocked mutex, a
// race report) or a hang fails that one test and not the whole run.
//
// The child is the test binary itself, re-run on the one test with an
// environment variable that tells it to run the body instead of spawning
// again. A child that runs past its timeout gets SIGQUIT, which makes the Go
// runtime print every goroutine's stack, and the parent reports that dump.
//
// The conctest module uses it too: a module whose path lies below this
// module's may import its internal packages.
package isolate

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envKey names the test a child process runs the body of.
const envKey = "TIMINGWHEEL_ISOLATE_CHILD"

// InChild reports whether this process is a child running t's body.
func InChild(t testing.TB) bool { return os.Getenv(envKey) == t.Name() }

// Run runs body in a child process and fails t if the child fails, crashes
// or runs longer than timeout. In the child, it runs body on t. It must be
// the only thing t does that matters: the parent runs nothing else of the
// test after Run, except reporting. The child runs with the parent's
// -short. Every package that uses Run checks for leaked goroutines with
// goleak's VerifyTestMain (see the GORACE setting below).
func Run(t *testing.T, timeout time.Duration, body func(t *testing.T)) {
	t.Helper()
	if InChild(t) {
		body(t)
		return
	}
	var pattern []string
	for _, part := range strings.Split(t.Name(), "/") {
		pattern = append(pattern, "^"+regexp.QuoteMeta(part)+"$")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0],
		"-test.run="+strings.Join(pattern, "/"), "-test.count=1", "-test.v",
		"-test.timeout="+(timeout+time.Minute).String(),
		"-test.short="+strconv.FormatBool(testing.Short()))
	cmd.Env = append(os.Environ(), envKey+"="+t.Name())
	// The race detector's runtime sleeps a second before the process
	// exits, so that goroutines still running can report; the child's test
	// has returned, and goleak has seen its goroutines end: a second per
	// child for nothing.
	cmd.Env = append(cmd.Env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	// On timeout: SIGQUIT, so the child prints its goroutines; then kill.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		t.Fatalf("the test hung: no result after %v; the child's output (goroutine dump at the end):\n%s", time.Since(start).Round(time.Millisecond), tail(out.Bytes()))
	case err != nil:
		t.Fatalf("the child process failed (%v); its output:\n%s", err, tail(out.Bytes()))
	case !bytes.Contains(out.Bytes(), []byte("--- PASS: "+t.Name())) && !bytes.Contains(out.Bytes(), []byte("--- SKIP: "+t.Name())):
		t.Fatalf("the child process did not run the test; its output:\n%s", tail(out.Bytes()))
	}
	if testing.Verbose() {
		t.Logf("child passed in %v; its output:\n%s", time.Since(start).Round(time.Millisecond), tail(out.Bytes()))
	}
}

// tail returns the end of a child's output: enough for a crash's stack
// traces, not megabytes of them.
func tail(b []byte) string {
	const max = 64 << 10
	if len(b) > max {
		return "…\n" + string(b[len(b)-max:])
	}
	return string(b)
}
