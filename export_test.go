package timingwheel

// WithAddressShards is withAddressShards, for BenchmarkParallel.
var WithAddressShards = withAddressShards
