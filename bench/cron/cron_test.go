// Package cron_test shows that a cron schedule of github.com/robfig/cron/v3
// is a timingwheel.Scheduler as it is: its Schedule interface has the one
// method Scheduler asks for, Next(time.Time) time.Time. The example lives in
// the bench module so that the library's go.mod does not depend on cron.
package cron_test

import (
	"fmt"
	"runtime"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-timingwheel/timingwheel"
	"github.com/robfig/cron/v3"
)

// A cron.Schedule goes straight into ScheduleFunc. A mock clock makes the
// example deterministic: it moves only when the example moves it.
func Example() {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 23, 12, 3, 20, 0, time.UTC))
	st, err := timingwheel.New(timingwheel.WithClock(mock))
	if err != nil {
		panic(err)
	}
	defer st.Stop()

	every5, err := cron.ParseStandard("*/5 * * * *") // minutes 0, 5, 10, ... of every hour
	if err != nil {
		panic(err)
	}
	runs := make(chan time.Time, 1)
	t, err := st.ScheduleFunc(every5, func() { runs <- mock.Now() })
	if err != nil {
		panic(err)
	}
	defer t.Stop()

	for _, minute := range []int{5, 10, 15} {
		mock.Set(time.Date(2026, 11, 23, 12, minute, 0, 0, time.UTC))
		select {
		case ran := <-runs:
			fmt.Println("ran at", ran.UTC().Format(time.TimeOnly))
		case <-time.After(10 * time.Second): // a failure detector, not a wait
			fmt.Println("no run at", mock.Now().UTC().Format(time.TimeOnly))
			return
		}
		waitArmed(st)
	}
	// Output:
	// ran at 12:05:00
	// ran at 12:10:00
	// ran at 12:15:00
}

// waitArmed returns once the series has armed its next run. A run asks its
// Scheduler for the next time after its function has returned, and skips the
// times the clock has passed by then (as time.Ticker drops ticks): a mock
// moved to the next time before that would skip it.
func waitArmed(st *timingwheel.SystemTimer) {
	for giveUp := time.Now().Add(10 * time.Second); st.Len() == 0 && time.Now().Before(giveUp); {
		runtime.Gosched()
	}
}
