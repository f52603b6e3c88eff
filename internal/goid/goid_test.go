package goid

import "testing"

func TestGetDistinguishesGoroutines(t *testing.T) {
	main := Get()
	if main <= 0 {
		t.Fatalf("Get() = %d, want a positive id", main)
	}
	if again := Get(); again != main {
		t.Fatalf("Get() changed on the same goroutine: %d then %d", main, again)
	}
	other := make(chan int64)
	go func() { other <- Get() }()
	if o := <-other; o == main || o <= 0 {
		t.Fatalf("another goroutine got id %d, main has %d", o, main)
	}
}
