package timingwheel

// WithAddressShards is withAddressShards, for BenchmarkParallel.
var WithAddressShards = withAddressShards

// Hammer is hammer, for the tests of package timingwheel_test.
var Hammer = hammer
