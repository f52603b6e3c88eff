// Package heartbeat pings peers on tickers and reports its own liveness.
package heartbeat

import (
	"log"
	"time"
)

type peer struct {
	name   string
	ticker *time.Ticker
	ping   func() error
}

type monitor struct {
	peers []*peer
	all   []*time.Ticker // every ticker, to stop them at once
}

func (m *monitor) add(name string, every time.Duration, ping func() error) {
	p := &peer{name: name, ping: ping, ticker: newTicker(every)}
	m.peers = append(m.peers, p)
	m.all = append(m.all, p.ticker)
}

func newTicker(every time.Duration) *time.Ticker {
	return time.NewTicker(every) // want `time.NewTicker becomes timingwheel.NewTicker: peer.ticker, monitor.all, the result of newTicker, t hold a \*timingwheel.Ticker`
}

func (m *monitor) loop(p *peer, done <-chan struct{}) {
	failures := 0
	for {
		select {
		case <-p.ticker.C:
			if err := p.ping(); err != nil {
				failures++
				log.Printf("%s: %v", p.name, err)
				// Back off: ping a failing peer less often.
				p.ticker.Reset(time.Duration(failures) * time.Second)
			}
		case <-done:
			return
		}
	}
}

func (m *monitor) stop() {
	for _, t := range m.all {
		t.Stop()
	}
}

// alive reports liveness every interval for as long as the program runs.
func alive(interval time.Duration, report func(time.Time)) {
	for now := range time.Tick(interval) { // want `time.Tick becomes timingwheel.Tick`
		report(now)
	}
}

// sampler is a heartbeat loop in the most common shape.
func sampler(every time.Duration, sample func(), done <-chan struct{}) {
	ticker := time.NewTicker(every) // want `time.NewTicker becomes timingwheel.NewTicker: ticker holds a \*timingwheel.Ticker`
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			sample()
		case <-done:
			return
		}
	}
}
