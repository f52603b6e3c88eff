package timingwheel

// debugChecks makes the driver verify every shard's invariants after each
// expiration. Tests switch it on.
var debugChecks = false
