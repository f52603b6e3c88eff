//go:build !unix

package main

// httpFDLimit is not known outside Unix: the http workload does not scale down.
func httpFDLimit() (int, bool) { return 0, false }
