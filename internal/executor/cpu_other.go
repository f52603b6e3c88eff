//go:build !unix

package executor

// processCPU reports that the process's CPU time is not known here: the
// pool then never takes the CPU for saturated (see Pool.saturated).
func processCPU() (int64, bool) { return 0, false }
