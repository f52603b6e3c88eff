//go:build linux && !faketime

package timerfd

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

const (
	clockMonotonic = 1 // the clock of the runtime's nanotime, and so of time.Since
	tfdNonblock    = syscall.O_NONBLOCK
	tfdCloexec     = syscall.O_CLOEXEC
)

type itimerspec struct {
	interval, value syscall.Timespec
}

type sys struct {
	fd   uintptr
	f    *os.File      // owns fd; its reads park in the runtime's poller
	done chan struct{} // closed when the reading goroutine returns
}

func start(c chan<- struct{}) (sys, bool) {
	fd, _, errno := syscall.RawSyscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, tfdNonblock|tfdCloexec, 0)
	if errno != 0 {
		return sys{}, false
	}
	// A non-blocking descriptor: os registers it with the poller, unless
	// the kernel refuses (no memory, or epoll's watch limit); then reads
	// would fail at once, and the file says it has no deadlines.
	s := sys{fd: fd, f: os.NewFile(fd, "timerfd"), done: make(chan struct{})}
	if s.f.SetReadDeadline(time.Time{}) != nil {
		s.f.Close()
		return sys{}, false
	}
	go s.read(c)
	return s, true
}

func (s *sys) read(c chan<- struct{}) {
	defer close(s.done)
	var count [8]byte
	for {
		if _, err := s.f.Read(count[:]); err != nil {
			return // closed
		}
		select {
		case c <- struct{}{}:
		default: // a signal is already waiting
		}
	}
}

func (s *sys) arm(d time.Duration) {
	// A relative time, counted from the call: the alarm cannot come before
	// d has passed since the caller measured d. One more than a day out is
	// set for a day (a Timespec's seconds have 32 bits on 32-bit Linux): a
	// wake before the time costs the caller one more look at the clock.
	spec := itimerspec{value: syscall.NsecToTimespec(int64(min(d, 24*time.Hour)))}
	// timerfd_settime does not block; RawSyscall spares the scheduler's
	// entry and exit. It fails only on a bad descriptor or value, neither
	// of which Arm can pass.
	syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, s.fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
}

func (s *sys) close() {
	s.f.Close() // ends the goroutine's Read
	<-s.done
}
