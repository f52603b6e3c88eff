module github.com/go-timingwheel/timingwheel/debugpage/browsertest

go 1.25.0

replace github.com/go-timingwheel/timingwheel => ../..

require github.com/go-timingwheel/timingwheel v0.0.0-00010101000000-000000000000

require github.com/benbjohnson/clock v1.3.5
