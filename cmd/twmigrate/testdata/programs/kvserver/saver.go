package main

import (
	"sync"
	"time"
)

// saver writes snapshots of the store to a sink once changes stop coming
// for quiet, retrying a failed write with backoff.
type saver struct {
	quiet    time.Duration
	attempts int
	backoff  time.Duration
	snapshot func() map[string]string
	sink     func(map[string]string) error

	kick    chan struct{} // a change came; buffered, one is enough
	done    chan struct{}
	stopped chan struct{}
	timer   *time.Timer // owned by loop

	mu    sync.Mutex // guards saved
	saved []error    // the outcome of every save, in order
}

func newSaver(quiet time.Duration, attempts int, backoff time.Duration, snapshot func() map[string]string, sink func(map[string]string) error) *saver {
	sv := &saver{
		quiet:    quiet,
		attempts: attempts,
		backoff:  backoff,
		snapshot: snapshot,
		sink:     sink,
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		stopped:  make(chan struct{}),
		timer:    time.NewTimer(time.Hour),
	}
	stopTimer(sv.timer)
	go sv.loop()
	return sv
}

func (sv *saver) changed() {
	select {
	case sv.kick <- struct{}{}:
	default:
	}
}

func (sv *saver) loop() {
	defer close(sv.stopped)
	armed := false
	for {
		select {
		case <-sv.kick:
			stopTimer(sv.timer)
			sv.timer.Reset(sv.quiet)
			armed = true
		case <-sv.timer.C:
			armed = false
			sv.save()
		case <-sv.done:
			select {
			case <-sv.kick: // a change that came just before stop
				armed = true
			default:
			}
			if armed {
				stopTimer(sv.timer)
				sv.save()
			}
			return
		}
	}
}

// stopTimer stops t and empties its channel, so that a Reset after it
// starts afresh.
func stopTimer(t *time.Timer) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
}

func (sv *saver) save() {
	snap := sv.snapshot()
	wait := sv.backoff
	var err error
	for attempt := 1; attempt <= sv.attempts; attempt++ {
		if err = sv.sink(snap); err == nil {
			break
		}
		if attempt < sv.attempts {
			<-time.After(wait)
			wait *= 2
		}
	}
	sv.mu.Lock()
	sv.saved = append(sv.saved, err)
	sv.mu.Unlock()
}

func (sv *saver) outcomes() []error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return append([]error(nil), sv.saved...)
}

// stop saves what is pending and ends the loop.
func (sv *saver) stop() {
	close(sv.done)
	<-sv.stopped
}

// reporter calls report every interval until stopped.
type reporter struct {
	ticker *time.Ticker
	done   chan struct{}
	ended  chan struct{}
}

func newReporter(every time.Duration, report func()) *reporter {
	r := &reporter{ticker: time.NewTicker(every), done: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(r.ended)
		for {
			select {
			case <-r.ticker.C:
				report()
			case <-r.done:
				return
			}
		}
	}()
	return r
}

func (r *reporter) stop() {
	r.ticker.Stop()
	close(r.done)
	<-r.ended
}
