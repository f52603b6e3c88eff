package twclock_test

import (
	"fmt"
	"log"
	"time"

	"github.com/go-timingwheel/timingwheel"
	twclock "github.com/go-timingwheel/timingwheel/contrib/clock"
	"github.com/jonboulle/clockwork"
	"k8s.io/utils/clock"
)

func ExampleNewK8s() {
	st, err := timingwheel.New()
	if err != nil {
		log.Fatal(err)
	}
	defer st.Stop()

	var c clock.WithTickerAndDelayedExecution = twclock.NewK8s(st)
	t := c.NewTimer(10 * time.Millisecond) // on the wheel
	defer t.Stop()
	<-t.C()
	fmt.Println("timer fired")
	// Output: timer fired
}

func ExampleNewClockwork() {
	st, err := timingwheel.New()
	if err != nil {
		log.Fatal(err)
	}
	defer st.Stop()

	var c clockwork.Clock = twclock.NewClockwork(st)
	done := make(chan struct{})
	c.AfterFunc(10*time.Millisecond, func() { close(done) }) // on the wheel's executor
	<-done
	fmt.Println("callback ran")
	// Output: callback ran
}
