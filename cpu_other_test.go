//go:build !unix

package timingwheel_test

// cpuSeconds is not measured where getrusage is missing: BenchmarkStorm
// reports 0 cpu-s there.
func cpuSeconds() float64 { return 0 }
