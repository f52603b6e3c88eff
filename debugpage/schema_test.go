package debugpage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/purgatory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The JSON's schema as the package doc lists it, written out here apart
// from the types that produce it, so that a change to either shows.
type (
	jsonPage struct {
		Time            time.Time       `json:"time"`
		IntervalSeconds float64         `json:"intervalSeconds"`
		WindowSeconds   float64         `json:"windowSeconds"`
		Timers          []jsonTimer     `json:"timers"`
		Purgatories     []jsonPurgatory `json:"purgatories"`
	}
	jsonTimer struct {
		Name             string           `json:"name"`
		Stats            jsonTimerStats   `json:"stats"`
		DueBoundsSeconds []float64        `json:"dueBoundsSeconds"`
		Due              []float64        `json:"due"`
		Shards           []int            `json:"shards"`
		History          []jsonTimerPoint `json:"history"`
	}
	jsonTimerStats struct {
		Pending     int           `json:"pending"`
		Armed       uint64        `json:"armed"`
		Fired       uint64        `json:"fired"`
		Stopped     uint64        `json:"stopped"`
		Postponed   uint64        `json:"postponed"`
		Moved       uint64        `json:"moved"`
		Migrated    uint64        `json:"migrated"`
		Rejected    uint64        `json:"rejected"`
		Cascaded    uint64        `json:"cascaded"`
		Panics      uint64        `json:"panics"`
		Lateness    jsonHistogram `json:"lateness"`
		Backlog     int           `json:"backlog"`
		Workers     int           `json:"workers"`
		Helpers     int           `json:"helpers"`
		LagSeconds  float64       `json:"lagSeconds"`
		Levels      int           `json:"levels"`
		TickSeconds float64       `json:"tickSeconds"`
	}
	jsonHistogram struct {
		Count       uint64       `json:"count"`
		P50Seconds  float64      `json:"p50Seconds"`
		P99Seconds  float64      `json:"p99Seconds"`
		P999Seconds float64      `json:"p999Seconds"`
		MaxSeconds  float64      `json:"maxSeconds"`
		Buckets     []jsonBucket `json:"buckets"`
	}
	jsonBucket struct {
		LeSeconds float64 `json:"leSeconds"`
		Count     uint64  `json:"count"`
	}
	jsonTimerPoint struct {
		Time        time.Time `json:"time"`
		Callbacks   uint64    `json:"callbacks"`
		P50Seconds  float64   `json:"p50Seconds"`
		P99Seconds  float64   `json:"p99Seconds"`
		P999Seconds float64   `json:"p999Seconds"`
		MaxSeconds  float64   `json:"maxSeconds"`
		Backlog     int       `json:"backlog"`
		Helpers     int       `json:"helpers"`
		Workers     int       `json:"workers"`
		LagSeconds  float64   `json:"lagSeconds"`
		Pending     int       `json:"pending"`
		GCCycles    uint64    `json:"gcCycles"`
	}
	jsonPurgatory struct {
		Name    string               `json:"name"`
		Stats   jsonPurgatoryStats   `json:"stats"`
		TopKeys []jsonKeyCount       `json:"topKeys"`
		History []jsonPurgatoryPoint `json:"history"`
	}
	jsonPurgatoryStats struct {
		Delayed   int           `json:"delayed"`
		Watched   int           `json:"watched"`
		Completed uint64        `json:"completed"`
		Expired   uint64        `json:"expired"`
		Purged    uint64        `json:"purged"`
		Lateness  jsonHistogram `json:"lateness"`
	}
	jsonKeyCount struct {
		Key     string `json:"key"`
		Watched int    `json:"watched"`
	}
	jsonPurgatoryPoint struct {
		Time      time.Time `json:"time"`
		Completed uint64    `json:"completed"`
		Expired   uint64    `json:"expired"`
		Delayed   int       `json:"delayed"`
		Watched   int       `json:"watched"`
	}
)

// docTypes are the package doc's names of the schema's types.
var docTypes = map[string]reflect.Type{
	"page":           reflect.TypeFor[jsonPage](),
	"timer":          reflect.TypeFor[jsonTimer](),
	"timerStats":     reflect.TypeFor[jsonTimerStats](),
	"histogram":      reflect.TypeFor[jsonHistogram](),
	"bucket":         reflect.TypeFor[jsonBucket](),
	"timerPoint":     reflect.TypeFor[jsonTimerPoint](),
	"purgatory":      reflect.TypeFor[jsonPurgatory](),
	"purgatoryStats": reflect.TypeFor[jsonPurgatoryStats](),
	"keyCount":       reflect.TypeFor[jsonKeyCount](),
	"purgatoryPoint": reflect.TypeFor[jsonPurgatoryPoint](),
}

var timeType = reflect.TypeFor[time.Time]()

// conform returns how the decoded JSON v departs from the schema type t:
// a field missing, a field unknown, a null, or a value of the wrong kind,
// each with its path.
func conform(t reflect.Type, v any, path string) []string {
	if v == nil {
		return []string{path + ": null"}
	}
	wrong := func(want string) []string { return []string{fmt.Sprintf("%s: %T, want %s", path, v, want)} }
	switch {
	case t == timeType:
		s, ok := v.(string)
		if !ok {
			return wrong("an RFC 3339 string")
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return []string{path + ": " + err.Error()}
		}
		return nil
	case t.Kind() == reflect.String:
		if _, ok := v.(string); !ok {
			return wrong("a string")
		}
		return nil
	case t.Kind() == reflect.Float64:
		if _, ok := v.(float64); !ok {
			return wrong("a number")
		}
		return nil
	case t.Kind() == reflect.Int || t.Kind() == reflect.Uint64:
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			return wrong("an integer")
		}
		return nil
	case t.Kind() == reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			return wrong("a list")
		}
		var errs []string
		for i, e := range a {
			errs = append(errs, conform(t.Elem(), e, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return errs
	case t.Kind() == reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return wrong("an object")
		}
		var errs []string
		known := map[string]bool{}
		for i := range t.NumField() {
			f := t.Field(i)
			name := f.Tag.Get("json")
			known[name] = true
			fv, ok := m[name]
			if !ok {
				errs = append(errs, path+"."+name+": missing")
				continue
			}
			errs = append(errs, conform(f.Type, fv, path+"."+name)...)
		}
		for name := range m {
			if !known[name] {
				errs = append(errs, path+"."+name+": unknown")
			}
		}
		slices.Sort(errs)
		return errs
	}
	panic(fmt.Sprintf("conform: schema type %v", t))
}

// checkSchema decodes the JSON b into the schema, rejecting unknown
// fields, and checks that every field of it is there, and no list null.
func checkSchema(t *testing.T, b []byte) jsonPage {
	t.Helper()
	var d jsonPage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&d))
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	assert.Empty(t, conform(reflect.TypeFor[jsonPage](), v, "page"))
	return d
}

// TestJSONSchema serves the JSON with every list non-empty, and checks
// that it is the schema, exactly; and that the check finds a field too
// many, one missing, a null and a figure of the wrong kind.
func TestJSONSchema(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		defer f.close()
		get(f.h, "/debug/timingwheel/")
		time.Sleep(3 * time.Second) // the 2.5s timers fire
		f.ready.Store(true)
		_, err := f.p.CheckAndComplete("a")
		require.NoError(t, err)
		time.Sleep(time.Second)
		synctest.Wait()

		w := get(f.h, "/debug/timingwheel/json")
		require.Equal(t, http.StatusOK, w.Code)
		d := checkSchema(t, w.Body.Bytes())
		// Every list, and so every type, had an element to check.
		require.NotEmpty(t, d.Timers)
		require.NotEmpty(t, d.Purgatories)
		tm, pg := d.Timers[0], d.Purgatories[0]
		for name, n := range map[string]int{
			"timer history": len(tm.History), "lateness buckets": len(tm.Stats.Lateness.Buckets),
			"due": len(tm.Due), "shards": len(tm.Shards), "purgatory history": len(pg.History), "top keys": len(pg.TopKeys),
		} {
			assert.Positive(t, n, name)
		}
		assert.InDelta(t, 1, d.IntervalSeconds, 1e-12)
		assert.InDelta(t, 300, d.WindowSeconds, 1e-12)
		assert.InDelta(t, 0.001, tm.Stats.TickSeconds, 1e-12)
		assert.InDelta(t, 0.001, tm.DueBoundsSeconds[0], 1e-12)

		var v map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &v))
		timer := v["timers"].([]any)[0].(map[string]any)
		stats := timer["stats"].(map[string]any)
		point := timer["history"].([]any)[0].(map[string]any)
		stats["Pending"] = 1
		delete(point, "lagSeconds")
		timer["shards"] = nil
		stats["tickSeconds"] = "1ms"
		assert.Equal(t, []string{
			"page.timers[0].history[0].lagSeconds: missing",
			"page.timers[0].shards: null",
			"page.timers[0].stats.Pending: unknown",
			"page.timers[0].stats.tickSeconds: string, want a number",
		}, conform(reflect.TypeFor[jsonPage](), v, "page"))
	})
}

// TestJSONEmpty: with nothing sampled, the lists are empty, not null.
func TestJSONEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		defer f.close()
		d := checkSchema(t, get(f.h, "/debug/timingwheel/json").Body.Bytes())
		assert.Empty(t, d.Timers[0].History)
		h, err := New()
		require.NoError(t, err)
		defer h.Close()
		d = checkSchema(t, get(h, "/x/json").Body.Bytes())
		assert.Empty(t, d.Timers)
	})
}

// TestJSONSchemaDocumented reads the schema the package doc lists and
// checks it against the schema above, type by type and field by field.
func TestJSONSchemaDocumented(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(src), "// # JSON\n")
	require.True(t, ok, "doc.go has no JSON section")
	// The listing: the indented lines of the section, a type a line, its
	// fields continued on the lines indented under it.
	types := map[string]string{}
	var order []string
	for line := range strings.Lines(after) {
		if !strings.HasPrefix(line, "//\t") {
			if len(order) > 0 {
				break
			}
			continue
		}
		line = strings.TrimSpace(strings.TrimPrefix(line, "//\t"))
		if name, fields, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "{") && docTypes[name] != nil {
			order = append(order, name)
			types[name] = strings.TrimSpace(fields)
			continue
		}
		require.NotEmpty(t, order, "a listing line before any type: %q", line)
		types[order[len(order)-1]] += " " + line
	}
	assert.ElementsMatch(t, slices.Collect(maps.Keys(docTypes)), order, "the doc lists these types")
	field := regexp.MustCompile(`^(\w+)(?::\s*(\[?)(\w+)\]?)?$`)
	for _, name := range order {
		body := strings.TrimSpace(types[name])
		require.True(t, strings.HasPrefix(body, "{") && strings.HasSuffix(body, "}"), "%s: %q", name, body)
		var listed []string
		for f := range strings.SplitSeq(strings.Trim(body, "{}"), ",") {
			m := field.FindStringSubmatch(strings.TrimSpace(f))
			if !assert.NotNil(t, m, "%s: field %q", name, f) {
				continue
			}
			listed = append(listed, m[1])
			sf, ok := fieldByTag(docTypes[name], m[1])
			if !assert.True(t, ok, "%s.%s: in the doc, not in the schema", name, m[1]) {
				continue
			}
			ft := sf.Type
			if assert.Equal(t, m[2] == "[", ft.Kind() == reflect.Slice, "%s.%s: a list in one, not the other", name, m[1]) && ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft != timeType || docTypes[m[3]] != nil {
				assert.Equal(t, docTypes[m[3]], ft, "%s.%s: of type %q in the doc", name, m[1], m[3])
			}
		}
		var fields []string
		for i := range docTypes[name].NumField() {
			fields = append(fields, docTypes[name].Field(i).Tag.Get("json"))
		}
		assert.Equal(t, fields, listed, "%s: the doc's fields, in the schema's order", name)
	}
}

func fieldByTag(t reflect.Type, tag string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("json") == tag {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// TestStatsCovered: the JSON's stats have a field for every field of
// timingwheel.Stats and purgatory.Stats, named as the doc says (a
// duration in seconds, with the suffix), so that a figure added to Stats
// cannot go missing from the page's JSON unnoticed.
func TestStatsCovered(t *testing.T) {
	for _, c := range []struct {
		stats, schema reflect.Type
	}{
		{reflect.TypeFor[timingwheel.Stats](), reflect.TypeFor[jsonTimerStats]()},
		{reflect.TypeFor[purgatory.Stats](), reflect.TypeFor[jsonPurgatoryStats]()},
	} {
		for i := range c.stats.NumField() {
			f := c.stats.Field(i)
			name := string(unicode.ToLower(rune(f.Name[0]))) + f.Name[1:]
			if f.Type == reflect.TypeFor[time.Duration]() {
				name += "Seconds"
			}
			_, ok := fieldByTag(c.schema, name)
			assert.True(t, ok, "%v.%s: no %q in the JSON", c.stats, f.Name, name)
		}
		assert.Equal(t, c.stats.NumField(), c.schema.NumField(), "%v: fields in the JSON that it has not", c.stats)
	}
}

// TestInternalServerError: a page or JSON that cannot be rendered is a
// 500 that says why, with nothing of the half-rendered response.
func TestInternalServerError(t *testing.T) {
	d := pageData{Time: time.Unix(0, 0), Interval: seconds(time.Second), Window: seconds(samples * time.Second),
		Timers: []timerData{{Name: "t", Due: []float64{math.NaN()}}}, Purgatories: []purgatoryData{}}
	w := httptest.NewRecorder()
	writeJSON(w, d)
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Equal(t, "text/plain; charset=utf-8", w.Header().Get("Content-Type"))
	assert.Equal(t, "debugpage: json: unsupported value: NaN\n", w.Body.String())

	w = httptest.NewRecorder()
	respond(w, "text/html; charset=utf-8", func(b *bytes.Buffer) error {
		b.WriteString("<html>half")
		return errors.New("template: boom")
	})
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Equal(t, "debugpage: template: boom\n", w.Body.String())
}
