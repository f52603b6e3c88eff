//go:build unix

package main

import "syscall"

// httpFDLimit returns the process's limit on open files (RLIMIT_NOFILE, which
// the Go runtime raises to the hard limit at start-up).
func httpFDLimit() (int, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return int(min(uint64(rl.Cur), 1<<30)), true
}
