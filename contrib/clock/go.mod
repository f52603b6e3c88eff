module github.com/go-timingwheel/timingwheel/contrib/clock

go 1.25.0

replace github.com/go-timingwheel/timingwheel => ../..

require (
	github.com/go-timingwheel/timingwheel v0.0.0-00010101000000-000000000000
	github.com/jonboulle/clockwork v0.5.0
	go.uber.org/goleak v1.3.0
	k8s.io/utils v0.0.0-20260707023825-cf1189d6abe3
)

require github.com/benbjohnson/clock v1.3.5 // indirect
