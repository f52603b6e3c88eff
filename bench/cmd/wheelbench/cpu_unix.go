//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU returns the user and system CPU time of the whole process so
// far (getrusage RUSAGE_SELF): every goroutine and thread counts, the
// runtime's and the garbage collector's too.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic("wheelbench: getrusage: " + err.Error())
	}
	return timeval(ru.Utime) + timeval(ru.Stime)
}

func timeval(tv syscall.Timeval) time.Duration {
	return time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond
}
