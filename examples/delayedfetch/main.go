// Command delayedfetch runs a tiny in-memory broker whose requests wait in
// purgatories, as Kafka's do:
//
//   - a delayed fetch waits until minBytes are readable (below the high
//     watermark, which every follower has copied) or maxWait passes;
//   - a delayed produce with acks=all waits until every follower has copied
//     what it appended, or its timeout passes.
//
// A fixed script of requests and follower catch-ups plays out over about
// 700ms; the broker prints each event and what became of each request, when
// it was answered and whether it completed or expired.
//
//	go run ./examples/delayedfetch
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/purgatory"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "delayedfetch:", err)
		os.Exit(1)
	}
}

// A partition of a topic: the key delayed requests are watched under.
type partition struct {
	topic string
	n     int
}

func (p partition) String() string { return fmt.Sprintf("%s-%d", p.topic, p.n) }

// A replicatedLog is the leader's copy of a partition, counted in bytes, and
// how much of it each follower has copied.
type replicatedLog struct {
	mu        sync.Mutex
	end       int64   // bytes appended; guarded by mu
	followers []int64 // bytes each follower has; guarded by mu
}

// highWatermark returns how much every follower has: what consumers may
// read, and what a produce with acks=all waits for.
func (l *replicatedLog) highWatermark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Min(l.followers)
}

// A broker leads a few partitions and parks requests in two purgatories.
type broker struct {
	start    time.Time
	logs     map[partition]*replicatedLog // immutable map
	fetches  *purgatory.Purgatory[partition]
	produces *purgatory.Purgatory[partition]
	pending  sync.WaitGroup // requests not answered yet

	outMu sync.Mutex // guards out
	out   io.Writer
}

// logf prints a line stamped with the time since the start, rounded to 10ms
// so that a run reads the same every time.
func (b *broker) logf(format string, args ...any) {
	at := time.Since(b.start).Round(10 * time.Millisecond).Milliseconds()
	b.outMu.Lock()
	defer b.outMu.Unlock()
	fmt.Fprintf(b.out, "%4dms  "+format+"\n", append([]any{at}, args...)...)
}

// A delayedFetch is a consumer's fetch waiting for minBytes.
type delayedFetch struct {
	purgatory.Op
	b        *broker
	id       int
	part     partition
	offset   int64
	minBytes int64
	start    time.Time
	expired  bool // set by OnExpiration, which runs just before OnComplete, on its goroutine
}

func (f *delayedFetch) readable() int64 {
	return f.b.logs[f.part].highWatermark() - f.offset
}

func (f *delayedFetch) TryComplete() bool {
	if f.readable() < f.minBytes {
		return false
	}
	return f.ForceComplete()
}

func (f *delayedFetch) OnExpiration() { f.expired = true }

func (f *delayedFetch) OnComplete() {
	how := "completed"
	if f.expired {
		how = "expired"
	}
	f.b.logf("fetch   #%d %s %s after %v: %d bytes to return", f.id, f.part, how, since(f.start), f.readable())
	f.b.pending.Done()
}

// A delayedProduce is a produce with acks=all waiting for the followers.
type delayedProduce struct {
	purgatory.Op
	b        *broker
	id       int
	part     partition
	required int64 // the log end right after the append
	start    time.Time
	expired  bool
}

func (p *delayedProduce) TryComplete() bool {
	if p.b.logs[p.part].highWatermark() < p.required {
		return false
	}
	return p.ForceComplete()
}

func (p *delayedProduce) OnExpiration() { p.expired = true }

func (p *delayedProduce) OnComplete() {
	if !p.expired {
		p.b.logf("produce #%d %s completed after %v: every follower has it", p.id, p.part, since(p.start))
	} else {
		l := p.b.logs[p.part]
		l.mu.Lock()
		have := 0
		for _, f := range l.followers {
			if f >= p.required {
				have++
			}
		}
		n := len(l.followers)
		l.mu.Unlock()
		p.b.logf("produce #%d %s expired after %v: %d of %d followers have it", p.id, p.part, since(p.start), have, n)
	}
	p.b.pending.Done()
}

func since(t time.Time) time.Duration { return time.Since(t).Round(10 * time.Millisecond) }

// fetch parks a consumer's fetch until minBytes are readable from offset or
// maxWait passes.
func (b *broker) fetch(id int, consumer string, p partition, offset, minBytes int64, maxWait time.Duration) error {
	f := &delayedFetch{
		Op: purgatory.Op{Timeout: maxWait},
		b:  b, id: id, part: p, offset: offset, minBytes: minBytes, start: time.Now(),
	}
	b.logf("fetch   #%d %s from %s: offset %d, minBytes %d, maxWait %v", id, p, consumer, offset, minBytes, maxWait)
	b.pending.Add(1)
	if _, err := b.fetches.TryCompleteElseWatch(f, p); err != nil {
		b.pending.Done()
		return err
	}
	return nil
}

// produce appends to the leader's log and parks the request until every
// follower has copied it or the timeout passes. The append does not move
// the high watermark, so no fetch can complete yet.
func (b *broker) produce(id int, p partition, size int64, timeout time.Duration) error {
	l := b.logs[p]
	l.mu.Lock()
	l.end += size
	end := l.end
	l.mu.Unlock()
	d := &delayedProduce{
		Op: purgatory.Op{Timeout: timeout},
		b:  b, id: id, part: p, required: end, start: time.Now(),
	}
	b.logf("produce #%d %s: %d bytes appended (log end %d), acks=all, timeout %v", id, p, size, end, timeout)
	b.pending.Add(1)
	if _, err := b.produces.TryCompleteElseWatch(d, p); err != nil {
		b.pending.Done()
		return err
	}
	return nil
}

// replicate lets a follower copy the whole log, then tries the requests the
// new high watermark may complete.
func (b *broker) replicate(p partition, follower int) error {
	l := b.logs[p]
	l.mu.Lock()
	l.followers[follower] = l.end
	end := l.end
	l.mu.Unlock()
	b.logf("follower %d of %s has copied %d bytes: high watermark %d", follower+1, p, end, l.highWatermark())
	if _, err := b.produces.CheckAndComplete(p); err != nil {
		return err
	}
	_, err := b.fetches.CheckAndComplete(p)
	return err
}

// run plays the script and reports to w.
func run(w io.Writer) error {
	st, err := timingwheel.New()
	if err != nil {
		return err
	}
	defer st.Stop()
	fetches, err := purgatory.New[partition](purgatory.WithTimer(st))
	if err != nil {
		return err
	}
	produces, err := purgatory.New[partition](purgatory.WithTimer(st))
	if err != nil {
		return err
	}
	orders, payments := partition{"orders", 0}, partition{"payments", 0}
	b := &broker{
		start: time.Now(),
		logs: map[partition]*replicatedLog{
			orders:   {followers: make([]int64, 2)},
			payments: {followers: make([]int64, 2)},
		},
		fetches:  fetches,
		produces: produces,
		out:      w,
	}

	const ms = time.Millisecond
	script := []struct {
		at time.Duration
		do func() error
	}{
		{0, func() error { return b.fetch(1, "consumer-a", orders, 0, 100, 500*ms) }},
		{0, func() error { return b.fetch(2, "consumer-b", payments, 0, 1, 200*ms) }},
		{50 * ms, func() error { return b.produce(3, orders, 80, 300*ms) }},
		{100 * ms, func() error { return b.replicate(orders, 0) }},
		{150 * ms, func() error { return b.replicate(orders, 1) }},
		{250 * ms, func() error { return b.produce(4, orders, 40, 300*ms) }},
		{300 * ms, func() error { return b.produce(5, payments, 30, 200*ms) }},
		{330 * ms, func() error { return b.replicate(orders, 0) }},
		{360 * ms, func() error { return b.replicate(orders, 1) }},
		{380 * ms, func() error { return b.replicate(payments, 0) }}, // follower 2 is down
		{400 * ms, func() error { return b.fetch(6, "consumer-b", payments, 0, 1, 300*ms) }},
	}
	for _, s := range script {
		time.Sleep(time.Until(b.start.Add(s.at)))
		if err := s.do(); err != nil {
			return err
		}
	}
	b.pending.Wait()

	left := len(fetches.Close()) + len(produces.Close())
	b.logf("all requests answered; %d left waiting at close", left)
	return nil
}
