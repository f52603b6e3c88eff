package timingwheel_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

func ExampleSystemTimer_AfterFunc() {
	st, err := timingwheel.New()
	if err != nil {
		panic(err)
	}
	defer st.Stop()

	done := make(chan struct{})
	_, err = st.AfterFunc(10*time.Millisecond, func() {
		fmt.Println("fired")
		close(done)
	})
	if err != nil {
		panic(err)
	}
	<-done
	// Output: fired
}

func ExampleTimer_Stop() {
	st, err := timingwheel.New()
	if err != nil {
		panic(err)
	}
	defer st.Stop()

	t, err := st.AfterFunc(time.Hour, func() { fmt.Println("never printed") })
	if err != nil {
		panic(err)
	}
	fmt.Println("pending:", st.Len())
	fmt.Println("stopped:", t.Stop())
	fmt.Println("pending:", st.Len())
	fmt.Println("stopped again:", t.Stop())
	// Output:
	// pending: 1
	// stopped: true
	// pending: 0
	// stopped again: false
}

func ExampleSystemTimer_ScheduleFunc() {
	st, err := timingwheel.New()
	if err != nil {
		panic(err)
	}
	defer st.Stop()

	runs := make(chan int, 8) // buffered: a run after the third must not block Stop
	n := 0
	t, err := st.ScheduleFunc(timingwheel.Every(5*time.Millisecond), func() {
		n++
		runs <- n
	})
	if err != nil {
		panic(err)
	}
	for range 3 {
		fmt.Println("run", <-runs)
	}
	t.Stop()
	// Output:
	// run 1
	// run 2
	// run 3
}

func ExampleSystemTimer_WithTimeout() {
	st, err := timingwheel.New()
	if err != nil {
		panic(err)
	}
	defer st.Stop()

	ctx, cancel := st.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	select {
	case <-ctx.Done():
		fmt.Println(ctx.Err())
	case <-time.After(time.Minute):
		fmt.Println("no timeout")
	}
	// Output: context deadline exceeded
}

// A select loop moved from the time package to the wheel. On the time
// package the loop reads:
//
//	import "time"
//	...
//	idle := time.NewTimer(200 * time.Millisecond)
//	defer idle.Stop()
//	for {
//		select {
//		case m := <-msgs:
//			fmt.Println("got", m)
//			idle.Reset(200 * time.Millisecond)
//		case <-idle.C:
//			fmt.Println("idle: done")
//			return
//		}
//	}
//
// The port adds the import and calls timingwheel.NewTimer where the loop
// called time.NewTimer: the same signature, the same Stop and Reset, the
// same channel; no SystemTimer to make or pass, no error to check. The
// durations stay the time package's.
func Example_selectLoop() {
	msgs := make(chan string, 3)
	msgs <- "a"
	msgs <- "b"
	msgs <- "c"

	idle := timingwheel.NewTimer(200 * time.Millisecond)
	defer idle.Stop()
	for {
		select {
		case m := <-msgs:
			fmt.Println("got", m)
			idle.Reset(200 * time.Millisecond)
		case <-idle.C:
			fmt.Println("idle: done")
			return
		}
	}
	// Output:
	// got a
	// got b
	// got c
	// idle: done
}

// The package-level functions have the signatures of the time and context
// packages' functions, on the SystemTimer that Default returns.
func ExampleWithTimeout() {
	ctx, cancel := timingwheel.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	select {
	case <-ctx.Done():
		fmt.Println(ctx.Err())
	case <-timingwheel.After(time.Minute):
		fmt.Println("the context never ended")
	}
	// Output: context deadline exceeded
}
