package purgatory_test

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel/purgatory"
)

// A waitForBytes waits until a partition holds enough bytes.
type waitForBytes struct {
	purgatory.Op
	name    string
	have    *atomic.Int64
	need    int64
	expired bool
}

func (w *waitForBytes) TryComplete() bool {
	if w.have.Load() < w.need {
		return false
	}
	return w.ForceComplete()
}

func (w *waitForBytes) OnExpiration() { w.expired = true }

func (w *waitForBytes) OnComplete() {
	fmt.Printf("%s: completed (expired: %v)\n", w.name, w.expired)
}

func Example() {
	p, err := purgatory.New[string]()
	if err != nil {
		panic(err)
	}
	var have atomic.Int64
	for _, need := range []int64{0, 10, 1000} {
		op := &waitForBytes{
			Op:   purgatory.Op{Timeout: time.Minute},
			name: fmt.Sprintf("wants %d", need),
			have: &have,
			need: need,
		}
		done, err := p.TryCompleteElseWatch(op, "topic-0")
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: completed at once: %v\n", op.name, done)
	}
	fmt.Println("watched:", p.Watched(), "delayed:", p.NumDelayed())

	have.Add(100) // then tell the purgatory
	n, err := p.CheckAndComplete("topic-0")
	if err != nil {
		panic(err)
	}
	fmt.Println("completed by the check:", n)

	for _, op := range p.Close() {
		fmt.Printf("%s: still waiting at Close\n", op.(*waitForBytes).name)
		op.ForceComplete()
	}
	// Output:
	// wants 0: completed (expired: false)
	// wants 0: completed at once: true
	// wants 10: completed at once: false
	// wants 1000: completed at once: false
	// watched: 2 delayed: 2
	// wants 10: completed (expired: false)
	// completed by the check: 1
	// wants 1000: still waiting at Close
	// wants 1000: completed (expired: false)
}
