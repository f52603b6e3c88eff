module github.com/go-timingwheel/timingwheel/cmd/twmigrate

go 1.26.0

require (
	github.com/go-timingwheel/timingwheel v0.0.0-00010101000000-000000000000
	golang.org/x/tools v0.52.0
)

require (
	github.com/benbjohnson/clock v1.3.5 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
)

replace github.com/go-timingwheel/timingwheel => ../..
