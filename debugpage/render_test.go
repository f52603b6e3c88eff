package debugpage

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShort(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{time.Millisecond, "1ms"}, {500 * time.Millisecond, "500ms"}, {time.Second, "1s"},
		{30 * time.Second, "30s"}, {2 * time.Minute, "2m"}, {6 * time.Hour, "6h"},
		{24 * time.Hour, "1d"}, {10 * 24 * time.Hour, "10d"}, {1500 * time.Microsecond, "1.5ms"},
	} {
		assert.Equal(t, c.want, short(c.d), "%v", c.d)
	}
	for _, b := range dueBounds { // every bound has a short name
		assert.NotContains(t, short(b), ".", "%v", b)
	}
}

func TestNiceMax(t *testing.T) {
	for _, c := range []struct{ v, want float64 }{
		{-1, 1}, {0, 1}, {0.003, 0.005}, {0.0101, 0.02}, {1, 1}, {1.5, 2}, {3, 5}, {7, 10}, {10, 10}, {11, 20}, {499, 500}, {501, 1000},
	} {
		t.Run(fmt.Sprint(c.v), func(t *testing.T) {
			assert.InDelta(t, c.want, niceMax(c.v), c.want*1e-9)
		})
	}
}

// TestRing fills a ring past its capacity and checks the order.
func TestRing(t *testing.T) {
	var r ring[int]
	assert.Empty(t, r.all())
	for i := range samples + 7 {
		r.add(i)
		got := r.all()
		assert.Len(t, got, min(i+1, samples))
		assert.Equal(t, i, got[len(got)-1])
		assert.Equal(t, max(0, i+1-samples), got[0])
	}
}

func TestGrouped(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {1072962, "1,072,962"},
		{-1234567, "-1,234,567"}, {math.MinInt64, "-9,223,372,036,854,775,808"},
	} {
		assert.Equal(t, c.want, grouped(c.n), "%d", c.n)
	}
	assert.Equal(t, "18,446,744,073,709,551,615", grouped(uint64(math.MaxUint64)))
}

func TestDur(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {1, "1ns"}, {999, "999ns"}, {1500, "1.5µs"},
		{14680064, "14.7ms"}, {62914560, "62.9ms"}, {616153 * time.Nanosecond, "616µs"},
		{1744830464, "1.74s"}, {999700 * time.Nanosecond, "1ms"}, {time.Millisecond, "1ms"},
		{59999 * time.Millisecond, "1m"}, {90 * time.Second, "1m30s"}, {119 * time.Second, "1m59s"},
		{1234 * time.Second, "20m30s"}, {5 * time.Minute, "5m"}, {3 * time.Hour, "3h"},
		{12600 * time.Second, "3h30m"}, {240 * time.Hour, "240h"}, {-2500 * time.Microsecond, "-2.5ms"},
	} {
		assert.Equal(t, c.want, dur(c.d), "%d", int64(c.d))
	}
}

func TestCountTicks(t *testing.T) {
	for _, c := range []struct {
		step, top float64
		ticks     []float64
		want      []string
	}{
		{0.5, 1, []float64{0, 0.5, 1}, []string{"0", "0.5", "1.0"}},
		{2.5, 5, []float64{0, 2.5, 5}, []string{"0", "2.5", "5.0"}},
		{500, 1000, []float64{0, 500, 1000}, []string{"0", "0.5k", "1.0k"}},
		{50e3, 1.2e6, []float64{1e6, 1.05e6, 1.2e6}, []string{"1.00M", "1.05M", "1.20M"}},
		{100, 1073100, []float64{1072900, 1073000}, []string{"1.0729M", "1.0730M"}},
		{1, 12, []float64{10, 11, 12}, []string{"10", "11", "12"}},
	} {
		label := countTicks(c.step, c.top)
		for i, v := range c.ticks {
			assert.Equal(t, c.want[i], label(v), "step %v: %v", c.step, v)
		}
	}
}

func TestTimeStep(t *testing.T) {
	for _, c := range []struct{ span, want time.Duration }{
		{10 * time.Second, 2 * time.Second}, {time.Minute, 15 * time.Second}, {3 * time.Minute, time.Minute},
		{5 * time.Minute, time.Minute}, {2 * time.Second, 500 * time.Millisecond}, {300 * time.Hour, 24 * time.Hour},
	} {
		assert.Equal(t, c.want, timeStep(c.span), "%v", c.span)
	}
}

// history returns page data of one SystemTimer sampled n times at 1s,
// the last a second before the page's time, with pending climbing by 100
// a sample from 1,072,000, every other sample seeing a GC cycle end, and
// p99.9 equal to the max.
func history(n int) pageData {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	d := pageData{Time: now, Interval: seconds(time.Second), Window: seconds(samples * time.Second),
		Timers: []timerData{{Name: "t", Stats: timerStats{Pending: 1072962, Fired: 123456789, Workers: 2, Tick: seconds(time.Millisecond),
			Lag: seconds(616153 * time.Nanosecond), Lateness: histogram{Count: 51614, P50: seconds(62914560), P99: seconds(671088640),
				P999: seconds(1744830464), Max: seconds(1879048192)}},
			DueBounds: []seconds{seconds(time.Second)}, Due: []float64{5, 7}, Shards: []int{3, 9}}},
		Purgatories: []purgatoryData{}}
	for i := range n {
		d.Timers[0].History = append(d.Timers[0].History, timerPoint{
			T: now.Add(time.Duration(i-n) * time.Second), N: 1500, Pending: 1072000 + 100*i, GC: uint64(i % 2),
			P50: seconds(time.Millisecond), P99: seconds(14680064), P999: seconds(20 * time.Millisecond), Max: seconds(20 * time.Millisecond),
		})
	}
	return d
}

// seriesPath returns the path element of series s in the page, and its index
// in the page.
func seriesPath(t *testing.T, page, s string) (string, int) {
	t.Helper()
	i := strings.Index(page, `<path class="line" data-series="`+s+`"`)
	require.GreaterOrEqual(t, i, 0, "no series %s", s)
	return page[i : i+strings.Index(page[i:], "/>")], i
}

// TestPageFormats renders a minute of samples: the time axis spans the
// minute, not the window; p99.9 is drawn above the max, which is dashed;
// pending and callbacks per second are charted; and the figures are
// written for people.
func TestPageFormats(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, page.Execute(&b, history(60)))
	body := b.String()

	for _, want := range []string{
		`<td data-stat="pending">1,072,962</td>`, `<td data-stat="fired">123,456,789</td>`,
		`<td data-stat="lag">616µs</td>`, "n 51,614 · p50 62.9ms · p99 671ms · p99.9 1.74s · max 1.88s",
		"the charts show the last 1m\n(at most 5m)", "p99 14.7ms", "p99.9 20ms", "callbacks/s 1,500", "pending 1,077,900",
	} {
		assert.Contains(t, body, want)
	}
	assert.NotContains(t, body, "14.680064ms")

	// The first sample, a minute ago, at the left edge; marks every 15s.
	first := fmt.Sprintf(`M%s `, f1(float64(marginL)))
	for _, s := range []string{"p50", "max", "callbacks/s", "pending", "backlog", "lag"} {
		p, _ := seriesPath(t, body, s)
		assert.Contains(t, p, first, s)
		assert.Contains(t, p, `data-points="60"`, s)
	}
	for _, mark := range []string{">-15s<", ">-30s<", ">-45s<", ">-1m<"} {
		assert.Contains(t, body, mark)
	}
	assert.NotContains(t, body, ">-5m<")

	// p99.9 after the max, so above it, in another colour; the max dashed.
	p999, i999 := seriesPath(t, body, "p99.9")
	mx, imax := seriesPath(t, body, "max")
	assert.Greater(t, i999, imax, "p99.9 drawn under the max")
	assert.NotContains(t, p999, "dasharray")
	assert.Contains(t, mx, `stroke-dasharray=`)
	assert.NotEqual(t, attr(p999, "stroke"), attr(mx, "stroke"))

	// The pending axis is fitted to the values, 1,072,000 to 1,077,900.
	_, ip := seriesPath(t, body, "pending")
	fig := body[strings.LastIndex(body[:ip], "<figure"):ip]
	assert.Contains(t, fig, ">1.072M<")
	assert.NotContains(t, fig, ">0<")

	// GC marks stay in the top margin.
	marks := regexp.MustCompile(`<line class="gc" [^>]*y2="(\d+)"><title>`).FindAllStringSubmatch(body, -1)
	assert.Len(t, marks, 3*30) // on the lateness, executor and lag charts
	for _, m := range marks {
		y2, _ := strconv.Atoi(m[1])
		assert.Less(t, y2, marginT)
	}
}

func attr(elem, name string) string {
	_, v, _ := strings.Cut(elem, " "+name+`="`)
	v, _, _ = strings.Cut(v, `"`)
	return v
}

// TestAxisSpan: the time axis spans the history, at least minSpan
// intervals, at most the window.
func TestAxisSpan(t *testing.T) {
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{0, 10 * time.Second}, {1, 10 * time.Second}, {60, time.Minute}, {samples, samples * time.Second}} {
		assert.Equal(t, c.want, axisOf(history(c.n)).span, "%d samples", c.n)
	}
	d := history(samples)
	d.Timers[0].History[0].T = d.Time.Add(-time.Hour) // older than the window: not possible, but capped
	assert.Equal(t, samples*time.Second, axisOf(d).span)
}
