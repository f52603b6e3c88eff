// Command jobsd reads jobs from its input, one a line ("id delay"), runs
// each after its delay, and reports every result to a collector, retrying
// with backoff. A watchdog ends it if it is stuck.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"example.com/jobs/scheduler"
)

func main() {
	s := scheduler.New(5*time.Second, 1000, time.Minute)
	watchdog := s.Watchdog(time.Hour, func() { log.Fatal("jobsd: stuck") })
	defer watchdog.Stop()

	rep := &reporter{
		send:     func(r scheduler.Result) error { _, err := fmt.Println(r.ID, r.Err); return err },
		attempts: 3,
		backoff:  100 * time.Millisecond,
	}
	sc := bufio.NewScanner(os.Stdin)
	n := 0
	for sc.Scan() {
		id, d, err := parseLine(sc.Text())
		if err != nil {
			log.Print(err)
			continue
		}
		s.After(id, d, func(ctx context.Context) error { return ctx.Err() })
		n++
	}
	for range n {
		if err := rep.deliver(<-s.Ran()); err != nil {
			log.Print(err)
		}
	}
	s.Stop()
}

var errSyntax = errors.New(`jobsd: want "id delay"`)

// parseLine parses "id delay", the delay as time.ParseDuration reads it.
func parseLine(line string) (id string, d time.Duration, err error) {
	f := strings.Fields(line)
	if len(f) != 2 {
		return "", 0, errSyntax
	}
	d, err = time.ParseDuration(f[1])
	if err != nil {
		return "", 0, fmt.Errorf("jobsd: %q: %w", line, err)
	}
	return f[0], d, nil
}

// reporter delivers results, retrying a failed send with backoff.
type reporter struct {
	send     func(scheduler.Result) error
	attempts int
	backoff  time.Duration
}

func (rep *reporter) deliver(r scheduler.Result) error {
	wait := newBackoff(rep.backoff)
	defer wait.Stop()
	delay := rep.backoff
	var err error
	for attempt := 1; attempt <= rep.attempts; attempt++ {
		if err = rep.send(r); err == nil {
			return nil
		}
		if attempt < rep.attempts {
			wait.Reset(delay)
			<-wait.C
			delay *= 2
		}
	}
	return fmt.Errorf("jobsd: result of %s: %w", r.ID, err)
}

// newBackoff returns a stopped timer for a retry loop to reset.
func newBackoff(d time.Duration) *time.Timer {
	t := time.NewTimer(d)
	if !t.Stop() {
		<-t.C
	}
	return t
}

// collect delivers results until none came for quiet.
func collect(results <-chan scheduler.Result, quiet time.Duration, deliver func(scheduler.Result)) {
	idle := time.NewTimer(quiet)
	defer idle.Stop()
	for {
		select {
		case r := <-results:
			deliver(r)
			if !idle.Stop() {
				<-idle.C
			}
			idle.Reset(quiet)
		case <-idle.C:
			// A result that came as the timer fired still counts.
			select {
			case r := <-results:
				deliver(r)
				idle.Reset(quiet)
			default:
				return
			}
		}
	}
}
