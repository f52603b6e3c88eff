//go:build unix

package executor

import "syscall"

// processCPU returns the CPU time the process has used, user and system,
// in ns, and whether it could tell.
func processCPU() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
