package main

import (
	"math"
	"runtime"
	"runtime/metrics"
	"slices"
	"time"
)

// A usage is a reading of the process's resource counters.
type usage struct {
	wall time.Time
	cpu  time.Duration // user + system CPU time of the whole process
	mem  runtime.MemStats
}

// readUsage reads the clock, the CPU time and the allocator's counters.
// runtime.ReadMemStats stops the world, so it is read first on the way in
// and the clock first on the way out: see since.
func readUsage() usage {
	var u usage
	runtime.ReadMemStats(&u.mem)
	u.cpu = processCPU()
	u.wall = time.Now()
	return u
}

// A span is the difference between two readings.
type span struct {
	wall, cpu     time.Duration
	mallocs       uint64
	bytes         uint64 // bytes allocated
	gcs           uint32 // GC cycles completed
	gcPause       time.Duration
	heapAllocDiff int64
}

// since returns the span from u to now.
func (u usage) since() span {
	wall := time.Since(u.wall)
	cpu := processCPU()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return span{
		wall:          wall,
		cpu:           cpu - u.cpu,
		mallocs:       m.Mallocs - u.mem.Mallocs,
		bytes:         m.TotalAlloc - u.mem.TotalAlloc,
		gcs:           m.NumGC - u.mem.NumGC,
		gcPause:       time.Duration(m.PauseTotalNs - u.mem.PauseTotalNs),
		heapAllocDiff: int64(m.HeapAlloc) - int64(u.mem.HeapAlloc),
	}
}

// liveHeap collects garbage and returns the bytes of live heap objects.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest value such that at least p% of the
// values are at most it.
func percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	// rank = ceil(n * p/100), in integers: p in parts per million, so
	// that 99.9 is exact and n up to 9e12 cannot overflow.
	ppm := int64(math.Round(p * 1e4))
	rank := (int64(len(sorted))*ppm + 1e6 - 1) / 1e6
	rank = min(max(rank, 1), int64(len(sorted)))
	return sorted[rank-1]
}

// countBelow returns how many values of sorted are below x.
func countBelow(sorted []int64, x int64) int {
	i, _ := slices.BinarySearch(sorted, x)
	return i
}

// gcCPU returns the runtime's estimate of the CPU time spent on garbage
// collection so far; it grows at the end of each GC cycle.
func gcCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * 1e9)
}

// addPerOp adds the span's wall time, CPU time and allocations per
// operation, for ops operations called unit: the metrics "ns/unit",
// "CPU ns/unit" and "allocs/unit", in that order.
func (e *Env) addPerOp(s span, unit string, ops float64) {
	e.Add(Metric{Name: "ns/" + unit, Value: float64(s.wall) / ops, Kind: Decimal, Ratio: true})
	e.Add(Metric{Name: "CPU ns/" + unit, Value: float64(s.cpu) / ops, Kind: Decimal, Ratio: true})
	e.Add(Metric{Name: "allocs/" + unit, Value: float64(s.mallocs) / ops, Kind: Decimal})
}
