package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// A Progress shows on stderr what is running: on a terminal, one line
// redrawn a few times a second ("churn N=1M · go-zero · pairs 45%"); else
// one line per case and implementation, and nothing more.
type Progress struct {
	w   io.Writer
	tty bool

	done atomic.Int64 // steps done in the current phase; Env.Step stores it

	// mu guards the fields below; the redraw goroutine reads them.
	mu     sync.Mutex
	prefix string         // workload, case and implementation
	name   string         // the current phase
	total  int            // its steps; 0 = no redraws
	poll   func() int64   // reads steps done, instead of done
	start  time.Time      // when the case started, for the elapsed time
	shown  int            // width of the line on screen
	stop   chan struct{}  // closed to end the redraw goroutine
	exited sync.WaitGroup // the redraw goroutine
}

// newProgress returns a Progress on w; quiet makes it draw nothing.
func newProgress(w *os.File, quiet bool) *Progress {
	p := &Progress{w: w}
	if quiet {
		p.w = io.Discard
		return p
	}
	if fi, err := w.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		p.tty = true
	}
	return p
}

// begin starts a case against one implementation.
func (p *Progress) begin(workload, label, impl string) {
	p.endRedraws()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prefix = strings.Join([]string{workload, label, impl}, " · ")
	p.name, p.total, p.poll = "", 0, nil
	p.start = time.Now()
	if p.tty {
		p.drawLocked()
	} else {
		fmt.Fprintf(p.w, "wheelbench: %s\n", p.prefix)
	}
}

// phase starts a phase; a phase with steps is redrawn until the next one.
func (p *Progress) phase(name string, total int, poll func() int64) {
	p.endRedraws()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.name, p.total, p.poll = name, total, poll
	p.done.Store(0)
	if !p.tty {
		return
	}
	p.drawLocked()
	if total > 0 {
		p.stop = make(chan struct{})
		p.exited.Add(1)
		go p.redraw(p.stop)
	}
}

func (p *Progress) redraw(stop chan struct{}) {
	defer p.exited.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.drawLocked()
			p.mu.Unlock()
		}
	}
}

// endRedraws stops the redraw goroutine, if one runs, and waits for it.
func (p *Progress) endRedraws() {
	p.mu.Lock()
	stop := p.stop
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		p.exited.Wait()
	}
}

func (p *Progress) drawLocked() {
	line := p.prefix
	if p.name != "" {
		line += " · " + p.name
	}
	if p.total > 0 {
		done := p.done.Load()
		if p.poll != nil {
			done = p.poll()
		}
		line += fmt.Sprintf(" %3.0f%%", 100*float64(done)/float64(p.total))
	}
	line += fmt.Sprintf("  [%.0fs]", time.Since(p.start).Seconds())
	width := utf8.RuneCountInString(line)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", max(p.shown-width, 0)))
	p.shown = width
}

// clear erases the line, so that results can be printed.
func (p *Progress) clear() {
	p.endRedraws()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.shown > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.shown))
		p.shown = 0
	}
}
