// Command httpserver serves HTTP on loopback with a time limit per request
// and loads it with a bounded number of requests, twice: once with the
// limit from httptimeout.New (the deadlines on a timing wheel) and once with
// http.TimeoutHandler (a runtime timer per request). For each it prints
// requests per second, the median and 99th percentile latency, how many
// requests timed out and the median time they took to get their 503, and
// the process CPU time (user + system) per request.
//
//	go run ./examples/httpserver
//	go run ./examples/httpserver -n 50000 -c 256 -timeout 50ms -slow-every 20
//
// Every slow-every'th request is slow: its handler waits for its context,
// so it times out and the client gets 503. The others answer at once.
// The load generator runs in the same process, so the CPU time includes
// it; it does the same work in both runs, so the difference between the two
// figures is the difference between the handlers. Run it a few times: the
// machine's noise is larger than one run shows.
//
// Everything listens on 127.0.0.1 only, on ephemeral ports, and the whole
// program stops within -maxtime (25s by default) whatever the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/httptimeout"
)

func main() {
	if _, err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "httpserver:", err)
		}
		os.Exit(2)
	}
}

type config struct {
	n         int           // requests per handler
	c         int           // concurrent requests
	timeout   time.Duration // per request
	slowEvery int           // every slowEvery'th request times out; 0: none
	warmup    int           // requests per handler before measuring
	maxTime   time.Duration // bound on the whole run
}

// A result is what one run measured.
type result struct {
	name     string
	sent     int // requests completed, with or without an error
	slow     int // of which slow ones
	ok       int // 200s
	timeouts int // 503s
	errs     int // transport errors and other statuses
	wall     time.Duration
	cpu      time.Duration // process user + system time
	p50, p99 time.Duration // over all requests
	late     time.Duration // median time to a 503: the limit plus the timer's lateness
	cut      bool          // stopped by maxTime
}

// run parses args, runs the load through both handlers and prints a table to
// out. It returns the results, wheel first.
func run(ctx context.Context, args []string, out io.Writer) ([]result, error) {
	var cfg config
	fs := flag.NewFlagSet("httpserver", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.IntVar(&cfg.n, "n", 20000, "requests per handler")
	fs.IntVar(&cfg.c, "c", 64, "concurrent requests")
	fs.DurationVar(&cfg.timeout, "timeout", 100*time.Millisecond, "time limit per request")
	fs.IntVar(&cfg.slowEvery, "slow-every", 50, "every `k`th request is slow and times out; 0 for none")
	fs.IntVar(&cfg.warmup, "warmup", 1000, "requests per handler before measuring")
	fs.DurationVar(&cfg.maxTime, "maxtime", 25*time.Second, "stop after this long, whatever is left")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case cfg.n < 1 || cfg.c < 1 || cfg.warmup < 0 || cfg.slowEvery < 0:
		return nil, errors.New("-n and -c must be positive, -warmup and -slow-every not negative")
	case cfg.timeout <= 0 || cfg.maxTime <= 0:
		return nil, errors.New("-timeout and -maxtime must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.maxTime)
	defer cancel()

	st, err := timingwheel.New()
	if err != nil {
		return nil, err
	}
	// Deferred first, so it runs last: after the servers have shut down.
	defer st.Stop()

	const msg = "timeout\n"
	handlers := []struct {
		name string
		wrap func(http.Handler) http.Handler
	}{
		{"httptimeout.New (wheel)", func(h http.Handler) http.Handler { return httptimeout.New(st, h, cfg.timeout, msg) }},
		{"http.TimeoutHandler (stdlib)", func(h http.Handler) http.Handler { return http.TimeoutHandler(h, cfg.timeout, msg) }},
	}
	fmt.Fprintf(out, "%d requests per handler (after %d to warm up), %d at a time, time limit %v, ",
		cfg.n, cfg.warmup, cfg.c, cfg.timeout)
	if cfg.slowEvery > 0 {
		fmt.Fprintf(out, "1 request in %d slow; %s, GOMAXPROCS %d\n", cfg.slowEvery, runtime.Version(), runtime.GOMAXPROCS(0))
	} else {
		fmt.Fprintf(out, "no slow requests; %s, GOMAXPROCS %d\n", runtime.Version(), runtime.GOMAXPROCS(0))
	}

	var results []result
	for i, h := range handlers {
		// Each run gets its share of what is left of maxTime.
		runCtx := ctx
		if dl, ok := ctx.Deadline(); ok {
			var cancelRun context.CancelFunc
			runCtx, cancelRun = context.WithTimeout(ctx, time.Until(dl)/time.Duration(len(handlers)-i))
			defer cancelRun()
		}
		res, err := measure(runCtx, cfg, h.wrap(app()))
		if err != nil {
			return results, fmt.Errorf("%s: %w", h.name, err)
		}
		res.name = h.name
		results = append(results, res)
	}
	printResults(out, results)
	return results, nil
}

// app is the application behind the time limit: slow requests wait for
// their context, the way a handler waiting on a database does; the others
// answer at once.
func app() http.Handler {
	body := []byte(`{"status":"ok","items":[1,2,3,4,5,6,7,8,9,10]}` + "\n")
	mux := http.NewServeMux()
	mux.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		w.Write(body) // too late: http.ErrHandlerTimeout
	})
	return mux
}

// measure serves h on loopback and loads it.
func measure(ctx context.Context, cfg config, h http.Handler) (result, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Close()
		<-served
	}()
	tr := &http.Transport{
		MaxIdleConns:        cfg.c,
		MaxIdleConnsPerHost: cfg.c,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	base := "http://" + ln.Addr().String()

	if cfg.warmup > 0 {
		load(ctx, client, base, config{n: cfg.warmup, c: cfg.c, slowEvery: cfg.slowEvery})
	}
	runtime.GC()
	cpu0 := cpuTime()
	res := load(ctx, client, base, cfg)
	res.cpu = cpuTime() - cpu0
	res.cut = ctx.Err() != nil
	return res, nil
}

// load sends cfg.n requests, cfg.c at a time, and stops early if ctx ends.
func load(ctx context.Context, client *http.Client, base string, cfg config) result {
	var (
		next atomic.Int64
		mu   sync.Mutex // guards res, lat and late
		res  result
		lat  []time.Duration // every request's
		late []time.Duration // the 503s'
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range min(cfg.c, cfg.n) {
		wg.Go(func() {
			var mine, mineLate []time.Duration
			var r result
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.n || ctx.Err() != nil {
					break
				}
				slow := cfg.slowEvery > 0 && i%cfg.slowEvery == cfg.slowEvery-1
				url := base + "/fast?i=" + strconv.Itoa(i)
				if slow {
					url = base + "/slow?i=" + strconv.Itoa(i)
				}
				t0 := time.Now()
				status, err := get(ctx, client, url)
				if ctx.Err() != nil {
					break // cut short: not a measurement
				}
				d := time.Since(t0)
				mine = append(mine, d)
				r.sent++
				if slow {
					r.slow++
				}
				switch {
				case err != nil:
					r.errs++
				case status == http.StatusOK:
					r.ok++
				case status == http.StatusServiceUnavailable:
					r.timeouts++
					mineLate = append(mineLate, d)
				default:
					r.errs++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			lat = append(lat, mine...)
			late = append(late, mineLate...)
			res.sent += r.sent
			res.slow += r.slow
			res.ok += r.ok
			res.timeouts += r.timeouts
			res.errs += r.errs
		})
	}
	wg.Wait()
	res.wall = time.Since(start)
	slices.Sort(lat)
	res.p50, res.p99 = percentile(lat, 50), percentile(lat, 99)
	slices.Sort(late)
	res.late = percentile(late, 50)
	return res
}

// get fetches url and reads the whole body.
func get(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, err
}

// percentile returns the p-th percentile of sorted, by the nearest rank.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := (len(sorted)*p + 99) / 100 // ceil(len * p/100), the nearest rank
	return sorted[max(k, 1)-1]
}

// cpuTime returns the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func printResults(out io.Writer, results []result) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "handler\trequests\treq/s\tp50\tp99\ttimeouts\t503 p50\terrors\tCPU/req\t")
	for _, r := range results {
		name := r.name
		if r.cut {
			name += " (cut short by -maxtime)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%v\t%v\t%d\t%v\t%d\t%v\t\n",
			name, r.sent, float64(r.sent)/r.wall.Seconds(),
			r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond),
			r.timeouts, r.late.Round(10*time.Microsecond), r.errs,
			r.cpuPerRequest().Round(100*time.Nanosecond))
	}
	tw.Flush()
	if len(results) == 2 && results[1].cpuPerRequest() > 0 {
		fmt.Fprintf(out, "CPU per request, wheel / stdlib: %.2f\n",
			float64(results[0].cpuPerRequest())/float64(results[1].cpuPerRequest()))
	}
}

func (r result) cpuPerRequest() time.Duration {
	if r.sent == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.sent)
}
