// Package debugpage serves an operator's page of SystemTimers and
// Purgatories: what the timers are doing, at a glance, in a browser,
// as net/http/pprof serves /debug/pprof/.
//
//	debugpage.Register("timers", st)          // mounts Default on http.DefaultServeMux
//	debugpage.RegisterPurgatory("fetches", p) // at /debug/timingwheel/
//
// or, on a mux of one's own:
//
//	h, _ := debugpage.New()
//	h.AddTimer("timers", st)
//	debugpage.AddPurgatory(h, "fetches", p)
//	mux.Handle("/debug/timingwheel/", h)
//
// The page is HTML with inline SVG charts, drawn on the server: it needs no
// JavaScript and fetches nothing from elsewhere. It refreshes itself every
// few seconds (a meta refresh). Its figures are written for people
// (1,072,962 timers, 14.7ms); "json" beside it serves the same data, exact,
// as JSON (below); a query name=N narrows either to the SystemTimer or
// Purgatory added as N. The time axis of the charts spans the samples
// taken so far, up to the history's five minutes. For each SystemTimer the
// page shows its Stats and these charts:
//
//   - Callback lateness per sampling interval: the 50th, 99th and 99.9th
//     percentiles and the largest, from the difference of Stats.Lateness
//     between two samples (each the upper bound of a histogram bucket:
//     at most 12.5% above the true value); the largest is dashed, under
//     the 99.9th, which often equals it. Marks along its top (and the
//     next two charts') are the samples during which a GC cycle ended
//     (runtime/metrics, the whole process).
//   - Callbacks started per second, over each interval.
//   - Executor backlog and helpers, and the driver's lag, as Stats has
//     them at each sample.
//   - Pending timers at each sample, on an axis fitted to the values, so
//     that a leak shows as a climb.
//   - Pending timers by time to due, in intervals from 1ms to 10 days (a
//     log axis): from [timingwheel.SystemTimer.DueProfile], which reads
//     a counter per wheel bucket and never walks the timers. It is an
//     estimate: each bucket's share of the pending count is spread evenly
//     over the time its bucket covers, so a timer counts within a bucket's
//     width of its due time (a tick at level 0, wheelSize^k ticks at level
//     k); and timers stopped or moved earlier count in the buckets they
//     left until those expire, so that with many stops the buckets with
//     more stops per arming show too much, the others too little. The
//     total is exact.
//   - Pending timers per shard: exact, as of each shard's lock.
//
// For each Purgatory it shows its Stats, the 20 keys with the most
// watch-list entries ([purgatory.Purgatory.TopKeys], stale entries
// included), and per sampling interval the operations completed in time
// and those expired.
//
// # JSON
//
// The JSON is one object of the types below, each an object of the
// fields in braces. Names are lowerCamelCase. Every duration is a number
// of seconds (a float64) in a field whose name ends in Seconds; time is
// an RFC 3339 string, name and key are strings, due holds numbers
// (estimates), and every other field without a type is an integer. Every
// field is always present, and a list is empty, never null.
//
//	page           {time, intervalSeconds, windowSeconds, timers: [timer], purgatories: [purgatory]}
//	timer          {name, stats: timerStats, dueBoundsSeconds: [number], due: [number],
//	                shards: [integer], history: [timerPoint]}
//	timerStats     {pending, armed, fired, stopped, postponed, moved, migrated, rejected, cascaded,
//	                panics, lateness: histogram, backlog, workers, helpers, lagSeconds, levels, tickSeconds}
//	histogram      {count, p50Seconds, p99Seconds, p999Seconds, maxSeconds, buckets: [bucket]}
//	bucket         {leSeconds, count}
//	timerPoint     {time, callbacks, p50Seconds, p99Seconds, p999Seconds, maxSeconds,
//	                backlog, helpers, workers, lagSeconds, pending, gcCycles}
//	purgatory      {name, stats: purgatoryStats, topKeys: [keyCount], history: [purgatoryPoint]}
//	purgatoryStats {delayed, watched, completed, expired, purged, lateness: histogram}
//	keyCount       {key, watched}
//	purgatoryPoint {time, completed, expired, delayed, watched}
//
// page's time is when the request read the figures; windowSeconds is the
// span of a full history (300 intervals). A timerStats is the
// SystemTimer's [timingwheel.Stats] at the request, a purgatoryStats the
// Purgatory's [purgatory.Stats], field by field. A histogram has its
// count, quantiles (upper bounds of buckets, 0 when empty) and the
// buckets that counted anything, each with its upper bound (the last
// bucket's is the largest Duration). due[i] estimates the timers due
// within dueBoundsSeconds[i] and after the bound before it (the last: after
// the last bound); shards is the pending count of each shard; topKeys are
// the 20 keys with the most watch-list entries. A history holds a point
// per interval, oldest first: in a timerPoint, the callbacks started in
// the interval that ends at time and the quantiles of their lateness (0
// when none), the gauges at its end, and the GC cycles that ended in it;
// in a purgatoryPoint, the operations completed in it (those expired
// included), those expired, and the gauges at its end.
//
// # Sampling, and what it costs
//
// The histories come from a sampler goroutine of the Handler's own,
// started by the first request and stopped, its histories dropped, once
// no request has come for 60 intervals (and at least 30 seconds), or by
// [Handler.Close]. With nobody looking there is no goroutine and no
// sampling: a Handler costs nothing until its page is opened.
//
// While it runs, it takes a sample every interval (a second by default,
// [WithInterval]) and keeps 300. A sample calls Stats on every
// SystemTimer, which takes each shard's lock in turn and, under it, places
// the timers armed since the driver last did (usually few), as Len does;
// and Stats on every Purgatory, which takes the lock that completions of
// watched operations take, for a copy of a few totals. What takes a
// shard's lock may wait for a sample meanwhile: Stop of a placed timer,
// Reset to an earlier deadline, an AfterFunc that finds its shard's stack
// of new timers long, and the driver. Other AfterFuncs, Stop of a timer not
// placed yet, and Reset to a later deadline take no lock and never wait
// for it. Each request of the page or of its JSON also calls DueProfile,
// which takes each shard's lock for a walk of its buckets (not its
// timers), and TopKeys, which takes each purgatory shard's lock for a walk
// of its keys.
//
// The figures, and the command that measures them, are in
// docs/debugpage.md and bench/results/: BenchmarkChurn times AfterFunc and
// Stop with the sampler running and without, BenchmarkSample one sample,
// BenchmarkPage one request.
package debugpage
