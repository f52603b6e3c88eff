module github.com/go-timingwheel/timingwheel/conctest

go 1.25.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/go-timingwheel/timingwheel v0.0.0
	go.uber.org/goleak v1.3.0
)

require github.com/benbjohnson/clock v1.3.5

replace github.com/go-timingwheel/timingwheel => ../
