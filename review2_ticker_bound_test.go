package timingwheel

import (
	"testing"
	"time"
)

// TestReview2TickerBoundAfterStop: once the SystemTimer is stopped, a
// Ticker runs on a timer of the clock, not on the wheel (see NewTimer), and
// an orphaned Ticker's Reset takes no place in WithMaxPending's bound
// (hold: rt != nil). But a Ticker made after Stop, or stopped before it and
// reset after, takes a place (hold reserves while rt is still nil), which
// it keeps until its own Stop: the stopped SystemTimer's count says a timer
// is pending when none is (Len is 0), and NewTicker refuses a Ticker that
// would run on the runtime's timers with ErrTooManyPending.
func TestReview2TickerBoundAfterStop(t *testing.T) {
	st := mustNew(t, WithMaxPending(1))
	st.Stop()
	a, err := st.NewTicker(time.Hour)
	if err != nil {
		t.Fatalf("first NewTicker after Stop: %v", err)
	}
	defer a.Stop()
	if n := st.placesHeld(); n != 0 {
		t.Errorf("WithMaxPending's count is %d after Stop with no timer on the wheel (Len %d)", n, st.Len())
	}
	b, err := st.NewTicker(time.Hour)
	if err != nil {
		t.Fatalf("second NewTicker after Stop: %v; the Ticker would run on the clock's timer, not the wheel", err)
	}
	b.Stop()
}
