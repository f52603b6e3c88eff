// Package browsertest loads the debug page in headless Chromium and checks
// that every chart rendered, with data that agrees with the SystemTimer's
// and the Purgatory's own figures, and that the page writes its figures
// for people. It is a module of its own so that the library's tests need
// no browser; it drives Chromium's command line (--dump-dom, --screenshot)
// and needs no Go dependency beyond the library.
//
// The page it loads is that of an operator's: a million timers pending and
// three minutes of samples. The sampler runs on a mock clock
// (debugpage.WithClock) that the test moves a second per sample, while the
// load runs on the real one, so each sample's rates are those of the few
// milliseconds of real time between two moves, not of a second.
//
// It skips when no browser is found. DEBUGPAGE_ARTIFACTS names the
// directory the screenshot goes to; by default testdata/out (ignored by
// git). docs/debugpage.png is that screenshot, reduced to 256 colours:
// pngquant --force --output ../../docs/debugpage.png 256 testdata/out/debugpage.png.
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/debugpage"
	"github.com/go-timingwheel/timingwheel/purgatory"
)

// browser returns the path of a Chromium, or skips the test.
func browser(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("CHROMIUM"); b != "" {
		return b
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium found (chromium, chromium-browser, google-chrome, or $CHROMIUM): " +
		"install one, e.g. apt-get install -y chromium, to run the browser test")
	return ""
}

// run runs the browser headless on url with the extra flags, and returns
// its standard output.
func run(t *testing.T, bin, url string, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--hide-scrollbars", "--user-data-dir=" + t.TempDir(),
	}, flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, stderr.String())
	}
	return string(out)
}

// Static timers, a million on three levels; they do not fire while the
// test runs.
var static = []struct {
	d time.Duration
	n int
	// The chart's bins, (lo, hi], that hold the group: its bucket's
	// width, less the time the test has run (two minutes at most), lies
	// within them.
	lo, hi time.Duration
}{
	{250 * time.Second, 400_000, 2 * time.Minute, 5 * time.Minute},
	{20 * time.Minute, 300_000, 10 * time.Minute, 30 * time.Minute},
	{3 * time.Hour, 200_000, 2 * time.Hour, 6 * time.Hour},
	{3 * 24 * time.Hour, 100_000, 2 * 24 * time.Hour, 10 * 24 * time.Hour},
}

const (
	maxChurn = 200         // short timers in flight at most
	interval = time.Second // the sampler's, on the mock clock
	steps    = 180         // samples: three minutes of history
	// perStep timers, 40 minutes out, are armed before each sample, so
	// that pending climbs through the history as in a leak; they fall in
	// the due chart's (30m, 1h] bin, which no static group is in.
	perStep  = 500
	sessions = steps * perStep
)

// A fetch waits until its key's log grows, or its timeout.
type fetch struct {
	purgatory.Op
	log    *atomic.Int64
	offset int64
}

func (f *fetch) TryComplete() bool {
	if f.log.Load() <= f.offset {
		return false
	}
	return f.ForceComplete()
}
func (f *fetch) OnExpiration() {}
func (f *fetch) OnComplete()   {}

// load keeps the SystemTimer's executor busy and the purgatory completing
// and expiring operations until stop is closed.
func load(st *timingwheel.SystemTimer, p *purgatory.Purgatory[string], stop <-chan struct{}, wg *sync.WaitGroup) {
	wg.Add(2)
	go func() { // short timers whose callbacks spin for 200µs
		defer wg.Done()
		sem := make(chan struct{}, maxChurn)
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			case sem <- struct{}{}:
			}
			d := time.Duration(1+rng.IntN(20)) * time.Millisecond
			if _, err := st.AfterFunc(d, func() {
				for end := time.Now().Add(200 * time.Microsecond); time.Now().Before(end); {
				}
				<-sem
			}); err != nil {
				<-sem
			}
		}
	}()
	go func() { // fetches on 6 keys, most on the first; half of the keys get data
		defer wg.Done()
		var logs [6]atomic.Int64
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			for k := range logs {
				for range len(logs) - k {
					f := &fetch{Op: purgatory.Op{Timeout: 50 * time.Millisecond}, log: &logs[k]}
					f.offset = f.log.Load()
					if _, err := p.TryCompleteElseWatch(f, "orders-"+strconv.Itoa(k)); err != nil {
						return // closed
					}
				}
			}
			if i%4 == 0 {
				for k := range len(logs) / 2 {
					logs[k].Add(1)
					if _, err := p.CheckAndComplete("orders-" + strconv.Itoa(k)); err != nil {
						return
					}
				}
			}
		}
	}()
}

// measure is the page the browser loads: the debug page in a frame, and a
// script that measures each chart once the frame has loaded, and writes
// what it found into #result for --dump-dom.
const measure = `<!DOCTYPE html><html><body>
<iframe id="f" src="/debug/timingwheel/" width="1240" height="1600"></iframe>
<pre id="result">pending</pre>
<script>
document.getElementById("f").addEventListener("load", function () {
  var doc = this.contentDocument, out = {};
  doc.querySelectorAll("figure[data-chart]").forEach(function (fig) {
    var svg = fig.querySelector("svg"), r = svg.getBoundingClientRect(), c = {w: r.width, h: r.height, bars: [], lines: {}, times: []};
    fig.querySelectorAll("rect.bar").forEach(function (b) {
      var br = b.getBoundingClientRect();
      c.bars.push({v: parseFloat(b.dataset.value), w: br.width, h: br.height});
    });
    fig.querySelectorAll("path.line").forEach(function (l, i) {
      var lr = l.getBoundingClientRect();
      c.lines[l.dataset.series] = {points: parseInt(l.dataset.points), last: parseFloat(l.dataset.last), w: lr.width, h: lr.height,
        x: lr.left - r.left, order: i, stroke: l.getAttribute("stroke"), dash: l.getAttribute("stroke-dasharray") || ""};
    });
    fig.querySelectorAll("text.time").forEach(function (t) { c.times.push(t.textContent); });
    out[fig.closest("section").id + "/" + fig.dataset.chart] = c;
  });
  doc.querySelectorAll("[data-stat]").forEach(function (s) {
    out[s.closest("section").id + "/stat/" + s.dataset.stat] = s.textContent;
  });
  document.getElementById("result").textContent = JSON.stringify(out);
});
</script></body></html>`

type bar struct{ V, W, H float64 }

type line struct {
	Points  int
	Last    float64
	W, H, X float64
	Order   int // in the chart's drawing: a higher one is on top
	Stroke  string
	Dash    string
}

type chart struct {
	W, H  float64
	Bars  []bar
	Lines map[string]line
	Times []string // the time axis's marks
}

// The plot's left edge and width in a chart, as debugpage draws them.
const (
	plotLeft  = 64
	plotWidth = 560 - 64 - 12
)

// count parses a count the page writes, 1,072,962, or fails.
func count(t *testing.T, s string) float64 {
	t.Helper()
	if !regexp.MustCompile(`^\d{1,3}(,\d{3})*$`).MatchString(s) {
		t.Errorf("%q: not a count with its thousands separated", s)
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil {
		t.Error(err)
	}
	return f
}

// durations checks that every duration in s, as the page writes it, has
// three significant digits at most, and that there is one.
func durations(t *testing.T, s string) {
	t.Helper()
	ds := regexp.MustCompile(`\d[\d.]*(ns|µs|ms|s|m|h)`).FindAllString(s, -1)
	if len(ds) == 0 {
		t.Errorf("%q: no duration", s)
	}
	for _, d := range ds {
		digits := strings.TrimLeft(strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, d), "0")
		if len(strings.TrimRight(digits, "0")) > 3 {
			t.Errorf("%q in %q: more than three significant digits", d, s)
		}
	}
}

// The screenshot's size: the page, whole, at the README's width.
const shotW, shotH = 1200, 1620

func TestPageInChromium(t *testing.T) {
	bin := browser(t)
	st, err := timingwheel.New()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	p, err := purgatory.New[string](purgatory.WithTimer(st))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	staticN := 0
	armed := time.Now()
	for _, g := range static {
		for range g.n {
			if _, err := st.AfterFunc(g.d, func() {}); err != nil {
				t.Fatal(err)
			}
		}
		staticN += g.n
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	load(st, p, stop, &wg)
	defer wg.Wait()
	defer close(stop)

	mock := clock.NewMock()
	mock.Set(time.Now())
	h, err := debugpage.New(debugpage.WithInterval(interval), debugpage.WithClock(mock))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.AddTimer("timers", st)
	debugpage.AddPurgatory(h, "fetches", p)
	mux := http.NewServeMux()
	mux.Handle("/debug/timingwheel/", h)
	mux.HandleFunc("/measure", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, measure) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// history requests the JSON, as a refresh of the page would, and
	// returns the due chart's bounds and the samples taken. The first
	// request starts the sampler.
	history := func() (bounds []time.Duration, n int) {
		var d struct {
			Timers []struct {
				DueBoundsSeconds []float64
				History          []json.RawMessage
			}
		}
		resp, err := http.Get(srv.URL + "/debug/timingwheel/json?name=timers")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&d)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range d.Timers[0].DueBoundsSeconds {
			bounds = append(bounds, time.Duration(b*1e9).Round(time.Millisecond))
		}
		return bounds, len(d.Timers[0].History)
	}
	// Three minutes of samples, a second apart on the mock clock: move it,
	// then wait until the sampler has taken the sample.
	history()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 1; i <= steps; i++ {
		for range perStep {
			if _, err := st.AfterFunc(40*time.Minute+time.Duration(rng.Int64N(int64(time.Minute))), func() {}); err != nil {
				t.Fatal(err)
			}
		}
		mock.Add(interval)
		for deadline := time.Now().Add(10 * time.Second); ; {
			if _, n := history(); n == i {
				break
			} else if n > i || time.Now().After(deadline) {
				t.Fatalf("%d samples after %d moves of the clock", n, i)
			}
			time.Sleep(time.Millisecond) // polling a condition, with a deadline
		}
	}
	bounds, _ := history()

	dom := run(t, bin, srv.URL+"/measure", "--virtual-time-budget=1500", "--dump-dom")
	_, res, ok := strings.Cut(dom, `<pre id="result">`)
	res, _, ok2 := strings.Cut(res, "</pre>")
	if !ok || !ok2 || strings.HasPrefix(res, "pending") {
		t.Fatalf("the measuring script wrote no result:\n%s", dom)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(html.UnescapeString(res)), &got); err != nil {
		t.Fatalf("%v in %s", err, res)
	}
	charts := map[string]chart{}
	stats := map[string]string{}
	for k, v := range got {
		if strings.Contains(k, "/stat/") {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			stats[k] = s
			continue
		}
		var c chart
		if err := json.Unmarshal(v, &c); err != nil {
			t.Fatal(err)
		}
		charts[k] = c
	}
	for _, name := range []string{
		"timer-timers/due", "timer-timers/lateness", "timer-timers/callbacks", "timer-timers/pending",
		"timer-timers/executor", "timer-timers/lag", "timer-timers/shards", "purgatory-fetches/keys", "purgatory-fetches/outcomes",
	} {
		c, ok := charts[name]
		if !ok {
			t.Errorf("%s: no such chart on the page", name)
			continue
		}
		if c.W < 100 || c.H < 100 {
			t.Errorf("%s: rendered %vx%v", name, c.W, c.H)
		}
		drawn := 0
		for _, b := range c.Bars {
			if b.V > 0 && b.W > 0 && b.H > 0 {
				drawn++
			}
		}
		for _, l := range c.Lines {
			if l.Points > 1 && l.W > 0 {
				drawn++
			}
		}
		if drawn == 0 {
			t.Errorf("%s: no bar or line drawn: %+v", name, c)
		}
	}
	t.Logf("stats on the page: %v", stats)

	// Values against the sources' own figures. The page was drawn while
	// the load ran: at most maxChurn short timers and the fetches' own
	// timeouts (at most their delayed count) come on top of the static
	// timers.
	pending := count(t, stats["timer-timers/stat/pending"])
	delayed := count(t, stats["purgatory-fetches/stat/delayed"])
	for _, k := range []string{"timer-timers/stat/armed", "timer-timers/stat/fired", "purgatory-fetches/stat/completed"} {
		if count(t, stats[k]) < 1000 {
			t.Errorf("%s: %s, want thousands", k, stats[k])
		}
	}
	durations(t, stats["timer-timers/stat/lag"])
	durations(t, stats["timer-timers/stat/lateness"])
	durations(t, stats["purgatory-fetches/stat/lateness"])
	shardSum := 0.0
	for _, b := range charts["timer-timers/shards"].Bars {
		shardSum += b.V
	}
	if least := float64(staticN + sessions); shardSum < least || shardSum > least+maxChurn+4*delayed+200 {
		t.Errorf("pending per shard adds up to %v; want %d static and %d session timers plus at most the churn and the fetches' (page: pending %v, delayed %v)",
			shardSum, staticN, sessions, pending, delayed)
	}
	// The bars and the table's Pending, from one request, differ by what
	// came and went between its Stats and its DueProfile.
	if d := shardSum - pending; d < -maxChurn-200 || d > maxChurn+200 {
		t.Errorf("pending per shard adds up to %v, the page's Pending is %v", shardSum, pending)
	}
	if len(charts["timer-timers/shards"].Bars) != len(st.DueProfile(nil).Shards) {
		t.Errorf("%d shard bars, want %d", len(charts["timer-timers/shards"].Bars), len(st.DueProfile(nil).Shards))
	}
	// Each static group lies in the bins of its bucket's width. The
	// estimate shares each shard's count over its buckets by the timers
	// placed in them, and the fetches completed in time stopped their
	// timeouts, so the groups may get less than their count: the page's
	// doc says so. Allow 25%.
	due := charts["timer-timers/due"].Bars
	if el := time.Since(armed); el > 2*time.Minute {
		t.Fatalf("the page was drawn up to %v after the static timers were armed: too late for their bins", el)
	}
	if len(due) != len(bounds)+1 {
		t.Fatalf("%d bars on the due chart, want %d", len(due), len(bounds)+1)
	}
	for _, g := range static {
		sum := 0.0
		for i, b := range bounds {
			if b > g.lo && b <= g.hi {
				sum += due[i].V
			}
		}
		if g.hi > bounds[len(bounds)-1] {
			sum += due[len(bounds)].V
		}
		if sum < 0.75*float64(g.n) || sum > 1.01*float64(g.n) {
			t.Errorf("due chart: %v timers due in (%v, %v], want %d (within -25%% +1%%)", sum, g.lo, g.hi, g.n)
		}
	}
	s := st.Stats()
	lat := charts["timer-timers/lateness"].Lines
	if lat["max"].Last > s.Lateness.Quantile(1).Seconds() {
		t.Errorf("lateness chart's last max %v above the largest lateness ever, %v", lat["max"].Last, s.Lateness.Quantile(1))
	}
	if lat["p99"].Points < 2 {
		t.Errorf("lateness chart has %d points of p99", lat["p99"].Points)
	}
	// p99.9 beside the max: drawn above it, in another colour, the max
	// dashed.
	if p, m := lat["p99.9"], lat["max"]; p.Order < m.Order || p.Stroke == m.Stroke || m.Dash == "" || p.Dash != "" {
		t.Errorf("lateness chart: p99.9 %+v, max %+v: want p99.9 solid, above the dashed max, in another colour", p, m)
	}

	// The time axis spans the three minutes sampled, not the five the
	// history holds: the lines start at its left edge.
	for _, name := range []string{"timer-timers/lateness", "timer-timers/callbacks", "timer-timers/pending", "purgatory-fetches/outcomes"} {
		c := charts[name]
		if got := strings.Join(c.Times, " "); got != "-30s -1m -1m30s -2m -2m30s" {
			t.Errorf("%s: time axis marks %q, want every 30s of the 179s sampled", name, got)
		}
		for series, l := range c.Lines {
			if l.Points < steps/2 {
				continue // lateness percentiles of intervals without callbacks
			}
			if l.X > plotLeft+plotWidth/100 || l.W < 0.97*plotWidth {
				t.Errorf("%s: %s spans x %v to %v, want the plot's %d to %d", name, series, l.X, l.X+l.W, plotLeft, plotLeft+plotWidth)
			}
		}
	}
	pend := charts["timer-timers/pending"].Lines["pending"]
	if pend.Points != steps || pend.Last < float64(staticN+sessions) || pend.Last > float64(staticN+sessions)+maxChurn+4*delayed+200 {
		t.Errorf("pending chart: %+v, want %d points ending at %d and a few more", pend, steps, staticN+sessions)
	}
	if pend.H < 50 {
		t.Errorf("pending chart: the climb of %d timers is %vpx high, want it plain", sessions, pend.H)
	}
	if cb := charts["timer-timers/callbacks"].Lines["callbacks/s"]; cb.Points != steps || cb.H < 1 {
		t.Errorf("callbacks chart: %+v", cb)
	}
	ex := charts["timer-timers/executor"].Lines
	if ex["backlog"].Points < 20 || ex["helpers"].Points < 20 {
		t.Errorf("executor chart: %+v", ex)
	}
	keys := charts["purgatory-fetches/keys"].Bars
	if len(keys) < 3 {
		t.Errorf("keys chart: %+v", keys)
	}
	for i := 1; i < len(keys); i++ {
		if keys[i].V > keys[i-1].V {
			t.Errorf("keys chart not in order: %+v", keys)
		}
	}
	out := charts["purgatory-fetches/outcomes"].Lines
	if out["expired"].Points < 20 || out["completed in time"].Points < 20 {
		t.Errorf("outcomes chart: %+v", out)
	}

	// The screenshot, as a test artifact.
	dir := os.Getenv("DEBUGPAGE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", "out")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot, err := filepath.Abs(filepath.Join(dir, "debugpage.png"))
	if err != nil {
		t.Fatal(err)
	}
	run(t, bin, srv.URL+"/debug/timingwheel/", fmt.Sprintf("--window-size=%d,%d", shotW, shotH), "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != shotW || b.Dy() != shotH {
		t.Errorf("screenshot is %v", b)
	}
	t.Logf("screenshot: %s", shot)
}
