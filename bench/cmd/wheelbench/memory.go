package main

import (
	"runtime"
	"time"
)

var memoryN = SizesParam("memory-n", "memory: pending timers whose heap is measured",
	[]int{1000}, []int{1_000_000}, []int{1_000_000, 10_000_000})

func init() {
	Register(&Workload{
		Name:  "memory",
		Order: 20,
		Title: "heap growth from N timers pending 1-2 min out, one shared no-op func, handles kept",
		Notes: []string{
			"B/timer: live heap after the timers are set minus before (runtime.GC, then MemStats.HeapAlloc) ÷ N. " +
				"The handle slice is allocated before; what the handles point to counts (for go-zero, its boxed key).",
			"target: ≤ 48 B per pending timer beyond the caller's own closure.",
		},

		Cases: func(p Profile) []Case {
			return sizeCases(memoryN.Get(p), runMemory)
		},
	})
}

func runMemory(e *Env, n int) error {
	if err := e.Fits(n); err != nil {
		return err
	}
	handles := make([]Handle, n)
	defer e.Close(handles) // on every path: Close is idempotent
	before := liveHeap()
	e.ArmSpread(handles, 2, time.Minute)
	e.Phase("measuring", 0)
	after := liveHeap()
	runtime.KeepAlive(handles)
	if err := e.CheckPending(n); err != nil {
		return err
	}
	growth := int64(after) - int64(before)
	e.Add(Metric{Name: "B/timer", Value: float64(growth) / float64(n), Kind: Decimal, Ratio: true})
	e.Add(Metric{Name: "heap growth", Value: float64(growth), Kind: Bytes})
	return nil
}
