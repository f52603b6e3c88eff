package timingwheel

// WithProcessorShards is withProcessorShards, for BenchmarkParallel.
var WithProcessorShards = withProcessorShards
