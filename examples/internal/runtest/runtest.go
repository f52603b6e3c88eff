// Package runtest holds what the examples' tests share. Each of those
// examples has a run(ctx, args, out) that parses its flags, does its work
// and prints a report to out.
package runtest

import (
	"bytes"
	"context"
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Func is an example's run.
type Func[T any] func(ctx context.Context, args []string, out io.Writer) (T, error)

// Run calls run with args, fails the test if it returns an error, and
// logs and returns what run returned and printed.
func Run[T any](t *testing.T, run Func[T], args ...string) (T, string) {
	t.Helper()
	var out bytes.Buffer
	v, err := run(context.Background(), args, &out)
	require.NoError(t, err)
	t.Log("\n" + out.String())
	return v, out.String()
}

// BadFlags checks that run refuses each of bad, and that -h asks for help
// (flag.ErrHelp).
func BadFlags[T any](t *testing.T, run Func[T], bad ...[]string) {
	t.Helper()
	for _, args := range bad {
		_, err := run(context.Background(), args, &bytes.Buffer{})
		assert.Error(t, err, "%q", args)
	}
	_, err := run(context.Background(), []string{"-h"}, &bytes.Buffer{})
	assert.ErrorIs(t, err, flag.ErrHelp)
}
