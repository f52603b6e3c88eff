package proc

import (
	"runtime"
	"sync"
	"testing"
)

// TestIDInRange: every goroutine gets an id in [0, GOMAXPROCS).
func TestIDInRange(t *testing.T) {
	n := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for range 4 * n {
		wg.Go(func() {
			for range 1000 {
				if id := ID(); id < 0 || id >= n {
					t.Errorf("ID() = %d, outside [0, %d)", id, n)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkID(b *testing.B) {
	for b.Loop() {
		_ = ID()
	}
}

func BenchmarkPoolGetPut(b *testing.B) {
	var p sync.Pool
	p.New = func() any { return new(int) }
	for b.Loop() {
		x := p.Get()
		p.Put(x)
	}
}
