package debugpage

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The page writes its figures for people: counts with their thousands
// separated (1,072,962), durations to three significant digits in the
// largest unit that keeps them above 1 (14.7ms, 616µs, 1.88s). The JSON
// keeps them exact.

// grouped writes n with a comma between groups of three digits.
func grouped[T ~int | ~int64 | ~uint64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	if n > 0 && int64(n) < 0 { // a uint64 above MaxInt64
		s = strconv.FormatUint(uint64(n), 10)
	}
	digits := strings.TrimPrefix(s, "-")
	var b strings.Builder
	b.WriteString(s[:len(s)-len(digits)])
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// durUnits are the units dur writes in, largest first.
var durUnits = []struct {
	d    time.Duration
	name string
}{
	{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"},
	{time.Millisecond, "ms"}, {time.Microsecond, "µs"}, {1, "ns"},
}

// dur writes d rounded to three significant digits, in the largest unit
// below a minute in which it is at least 1 (14.680064ms as 14.7ms), or
// from a minute on in hours, minutes and seconds (119s as 1m59s).
func dur(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	// Round first, so that 999.7µs is 1ms, not 1e+03µs.
	r := sig3(float64(d))
	if r >= float64(time.Minute) {
		var b strings.Builder
		rest := time.Duration(r).Round(time.Second)
		for _, u := range durUnits[:3] {
			if n := rest / u.d; n > 0 {
				b.WriteString(strconv.FormatInt(int64(n), 10) + u.name)
				rest -= n * u.d
			}
		}
		return sign + b.String()
	}
	for _, u := range durUnits[2:] {
		if r >= float64(u.d) || u.d == 1 {
			return sign + strconv.FormatFloat(sig3(r/float64(u.d)), 'f', -1, 64) + u.name
		}
	}
	panic("unreachable")
}

// sig3 rounds x > 0 to three significant digits.
func sig3(x float64) float64 {
	if x <= 0 {
		return x
	}
	// Dividing by a power of ten as a whole number rounds once, where
	// multiplying by 0.1 would leave 14.700000000000001.
	e := math.Floor(math.Log10(x)) - 2
	if e >= 0 {
		p := math.Pow(10, e)
		return math.Round(x/p) * p
	}
	inv := math.Pow(10, -e)
	return math.Round(x*inv) / inv
}

// latenessLine writes a histogram's count and quantiles on one line.
func latenessLine(h histogram) string {
	if h.Count == 0 {
		return "none yet"
	}
	return "n " + grouped(h.Count) + " · p50 " + dur(time.Duration(h.P50)) + " · p99 " + dur(time.Duration(h.P99)) +
		" · p99.9 " + dur(time.Duration(h.P999)) + " · max " + dur(time.Duration(h.Max))
}

// countLabel writes a count for a chart's legend or a bar's axis, in
// three significant digits: 1,500 as 1.5k, 1,072,962 as 1.07M.
func countLabel(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 999.5e6:
		return strconv.FormatFloat(sig3(a/1e9), 'f', -1, 64) + "G"
	case a >= 999.5e3:
		return strconv.FormatFloat(sig3(a/1e6), 'f', -1, 64) + "M"
	case a >= 999.5:
		return strconv.FormatFloat(sig3(a/1e3), 'f', -1, 64) + "k"
	case a == 0:
		return "0"
	}
	return strconv.FormatFloat(sig3(a), 'f', -1, 64)
}

// countTicks returns the labeller of a linear count axis whose ticks are
// step apart, up to top: in one unit, with the digits that tell each tick
// from its neighbours (1.05M, not 1.07M twice; 2.5, not 3).
func countTicks(step, top float64) func(v float64) string {
	unit, suffix := 1.0, ""
	switch a := math.Abs(top); {
	case a >= 1e9:
		unit, suffix = 1e9, "G"
	case a >= 1e6:
		unit, suffix = 1e6, "M"
	case a >= 1e3:
		unit, suffix = 1e3, "k"
	}
	decimals := 0
	for x := step / unit; decimals < 9 && math.Abs(x-math.Round(x)) > 1e-9*math.Max(1, x); x *= 10 {
		decimals++
	}
	return func(v float64) string {
		if v == 0 {
			return "0"
		}
		return strconv.FormatFloat(v/unit, 'f', decimals, 64) + suffix
	}
}
