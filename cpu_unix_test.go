//go:build unix

package timingwheel_test

import "syscall"

// cpuSeconds is the CPU time, user and system, the process has used so far.
// (The runtime's /cpu/classes metrics would not do: they are updated only
// at a GC, and a storm without one read as 0 s.)
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
