// Command metricsserver serves the figures of a SystemTimer and of a
// purgatory on loopback while timers fire and operations complete and
// expire: /metrics for Prometheus, /debug/vars for expvar, and the
// operator's page at /debug/timingwheel/ (package debugpage).
//
//	go run ./examples/metricsserver -rounds 0     # until interrupted
//	curl -s localhost:PORT/metrics | grep -v '^#'
//	curl -s localhost:PORT/debug/vars | jq .timers
//	open http://localhost:PORT/debug/timingwheel/ in a browser
//
// Each round arms 1000 timers, 1 to 20ms, and stops a quarter of them
// before they fire; and submits 200 fetches on 4 partitions, each waiting
// for a byte beyond its offset: the fetches on two partitions get one
// (and complete), while the others expire after 10ms.
package main

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel"
	twprom "github.com/go-timingwheel/timingwheel/contrib/prometheus"
	"github.com/go-timingwheel/timingwheel/debugpage"
	"github.com/go-timingwheel/timingwheel/expvarstats"
	"github.com/go-timingwheel/timingwheel/purgatory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const (
	timersPerRound  = 1000
	fetchesPerRound = 200
	partitions      = 4
	// maxWait is the timeout of the fetches of the partitions nothing is
	// appended to: they expire. Those of the partitions a round appends
	// to wait up to appendWait, which they never reach: the append
	// completes them first, however slow the machine (with 10ms for all, a
	// machine that took 10ms to watch 200 fetches under -race expired some
	// of those too, and the test's counts did not add up).
	maxWait    = 10 * time.Millisecond
	appendWait = time.Minute
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to serve on")
	rounds := flag.Int("rounds", 10, "rounds of work; 0 runs until interrupted")
	hold := flag.Bool("hold", false, "keep serving after the rounds, until interrupted")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	serving := func(string) {
		if *hold {
			fmt.Println("serving until interrupted")
			<-ctx.Done()
		}
	}
	if err := run(ctx, *addr, *rounds, os.Stdout, serving); err != nil {
		log.Fatal(err)
	}
}

// run serves on addr, runs the rounds (until ctx is done, if rounds is 0),
// prints what it did to out, and calls serving with the server's base URL
// before it shuts the server down.
func run(ctx context.Context, addr string, rounds int, out io.Writer, serving func(base string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	d, err := newDemo()
	if err != nil {
		return err
	}
	defer d.close()
	srv := &http.Server{Handler: d.mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(out, "serving http://%s/metrics, http://%s/debug/vars and http://%s/debug/timingwheel/\n", ln.Addr(), ln.Addr(), ln.Addr())

	for i := 0; (rounds == 0 || i < rounds) && ctx.Err() == nil; i++ {
		d.round()
	}
	d.report(out)
	serving("http://" + ln.Addr().String())
	if err := srv.Shutdown(context.Background()); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// A demo holds a SystemTimer and a purgatory of fetches, and serves their
// figures.
type demo struct {
	st   *timingwheel.SystemTimer
	p    *purgatory.Purgatory[string]
	mux  *http.ServeMux
	page *debugpage.Handler
	rng  *rand.Rand

	logs   [partitions]atomic.Int64 // bytes in each partition's log
	rounds int
}

// published makes newDemo publish its expvar variables once per process:
// expvar cannot take a name back.
var published sync.Once

// newDemo returns a demo whose mux serves /metrics, /debug/vars and
// /debug/timingwheel/. The expvar variables "timers" and "fetches" are
// those of the first demo made.
func newDemo() (*demo, error) {
	st, err := timingwheel.New()
	if err != nil {
		return nil, err
	}
	p, err := purgatory.New[string]()
	if err != nil {
		st.Stop()
		return nil, err
	}
	d := &demo{st: st, p: p, mux: http.NewServeMux(), rng: rand.New(rand.NewPCG(1, 2))}

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		twprom.NewTimerCollector(st),
		twprom.NewPurgatoryCollector(p, twprom.WithNamespace("fetch")),
	)
	d.mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	published.Do(func() {
		expvarstats.Publish("timers", st.Stats)
		expvarstats.Publish("fetches", p.Stats)
	})
	d.mux.Handle("/debug/vars", expvar.Handler())

	// The page's sampler runs only while someone looks; close stops it.
	d.page, err = debugpage.New()
	if err != nil {
		d.close()
		return nil, err
	}
	d.page.AddTimer("timers", st)
	debugpage.AddPurgatory(d.page, "fetches", p)
	d.mux.Handle("/debug/timingwheel/", d.page)
	return d, nil
}

func (d *demo) close() {
	if d.page != nil {
		d.page.Close()
	}
	d.p.Close()
	d.st.Stop()
}

// round arms timersPerRound timers and stops a quarter of them, submits
// fetchesPerRound fetches and completes half of them, and returns once
// every timer fired and every fetch completed or expired.
func (d *demo) round() {
	var fired sync.WaitGroup
	fired.Add(timersPerRound)
	for i := range timersPerRound {
		delay := time.Duration(1+d.rng.IntN(20)) * time.Millisecond
		if i%4 == 0 {
			delay = time.Hour // stopped below, long before
		}
		t, err := d.st.AfterFunc(delay, fired.Done)
		if err != nil {
			panic(err) // only after Stop, or beyond WithMaxPending
		}
		if i%4 == 0 && t.Stop() {
			fired.Done()
		}
	}

	var ended sync.WaitGroup
	ended.Add(fetchesPerRound)
	for i := range fetchesPerRound {
		part := i % partitions
		timeout := maxWait
		if part < partitions/2 {
			timeout = appendWait // completed by the append below
		}
		f := &fetch{Op: purgatory.Op{Timeout: timeout}, log: &d.logs[part], ended: &ended}
		f.offset = f.log.Load()
		if _, err := d.p.TryCompleteElseWatch(f, "orders-"+strconv.Itoa(part)); err != nil {
			panic(err) // only after Close
		}
	}
	for part := range partitions / 2 { // an append to half the partitions
		d.logs[part].Add(1)
		if _, err := d.p.CheckAndComplete("orders-" + strconv.Itoa(part)); err != nil {
			panic(err)
		}
	}
	fired.Wait()
	ended.Wait()
	d.rounds++
}

// report prints what the demo did, from the Stats.
func (d *demo) report(w io.Writer) {
	s, f := d.st.Stats(), d.p.Stats()
	fmt.Fprintf(w, "%d rounds: %d timers armed, %d fired, %d stopped, %d pending; callback lateness %v\n",
		d.rounds, s.Armed, s.Fired, s.Stopped, s.Pending, &s.Lateness)
	fmt.Fprintf(w, "fetches: %d completed, %d of them expired, %d delayed; expiry lateness %v\n",
		f.Completed, f.Expired, f.Delayed, &f.Lateness)
}

// A fetch waits until its partition's log holds a byte beyond offset.
type fetch struct {
	purgatory.Op
	log    *atomic.Int64
	offset int64
	ended  *sync.WaitGroup
}

func (f *fetch) TryComplete() bool {
	if f.log.Load() <= f.offset {
		return false
	}
	return f.ForceComplete()
}

// OnExpiration would send an empty response; OnComplete, the data.
func (f *fetch) OnExpiration() {}
func (f *fetch) OnComplete()   { f.ended.Done() }
