package main

import "time"

var (
	idleN = SizesParam("idle-n", "idle: timers pending an hour out",
		[]int{1000}, []int{1_000_000}, []int{1_000_000})
	idleFor = DurationParam("idle-for", "idle: how long CPU time is measured while nothing is due",
		50*time.Millisecond, 3*time.Second, 3*time.Second)
)

func init() {
	Register(&Workload{
		Name:  "idle",
		Order: 40,
		Title: "N timers pending 1 h out (uniform over a minute); process CPU over a window in which nothing is due",
		Notes: []string{
			"CPU: process user+system time over the window, which starts after a GC; the progress display does not redraw during it.",
			"target: ≤ 5 ms CPU over 3 s with N=1M.",
		},

		Cases: func(p Profile) []Case {
			window := idleFor.Get(p)
			return sizeCases(idleN.Get(p), func(e *Env, n int) error { return runIdle(e, n, window) })
		},
	})
}

func runIdle(e *Env, n int, window time.Duration) error {
	if err := e.Fits(n); err != nil {
		return err
	}
	handles := make([]Handle, n)
	defer e.Close(handles) // on every path: Close is idempotent
	e.ArmSpread(handles, 4, time.Hour)
	if err := e.CheckPending(n); err != nil {
		return err
	}
	cleanHeap()

	e.Phase("idle "+window.String(), 0)
	u := readUsage()
	time.Sleep(window) // the measurement window, not a synchronisation
	s := u.since()
	e.Add(Metric{Name: "CPU", Value: float64(s.cpu), Kind: Duration, Ratio: true})
	e.Add(Metric{Name: "CPU % of a core", Value: 100 * float64(s.cpu) / float64(s.wall), Kind: Decimal})
	e.Add(Metric{Name: "GCs", Value: float64(s.gcs), Kind: Count})
	return nil
}
