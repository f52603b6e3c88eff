package main

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRun plays the script in a synctest bubble, where time is exact, and
// checks the whole story.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		require.NoError(t, run(&out))
		assert.Equal(t, want, out.String())
	})
}

const want = `   0ms  fetch   #1 orders-0 from consumer-a: offset 0, minBytes 100, maxWait 500ms
   0ms  fetch   #2 payments-0 from consumer-b: offset 0, minBytes 1, maxWait 200ms
  50ms  produce #3 orders-0: 80 bytes appended (log end 80), acks=all, timeout 300ms
 100ms  follower 1 of orders-0 has copied 80 bytes: high watermark 0
 150ms  follower 2 of orders-0 has copied 80 bytes: high watermark 80
 150ms  produce #3 orders-0 completed after 100ms: every follower has it
 200ms  fetch   #2 payments-0 expired after 200ms: 0 bytes to return
 250ms  produce #4 orders-0: 40 bytes appended (log end 120), acks=all, timeout 300ms
 300ms  produce #5 payments-0: 30 bytes appended (log end 30), acks=all, timeout 200ms
 330ms  follower 1 of orders-0 has copied 120 bytes: high watermark 80
 360ms  follower 2 of orders-0 has copied 120 bytes: high watermark 120
 360ms  produce #4 orders-0 completed after 110ms: every follower has it
 360ms  fetch   #1 orders-0 completed after 360ms: 120 bytes to return
 380ms  follower 1 of payments-0 has copied 30 bytes: high watermark 0
 400ms  fetch   #6 payments-0 from consumer-b: offset 0, minBytes 1, maxWait 300ms
 500ms  produce #5 payments-0 expired after 200ms: 1 of 2 followers have it
 700ms  fetch   #6 payments-0 expired after 300ms: 0 bytes to return
 700ms  all requests answered; 0 left waiting at close
`
