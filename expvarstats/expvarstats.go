// Package expvarstats publishes the Stats of a SystemTimer or a Purgatory
// with the standard library's expvar, which serves every published
// variable as JSON at /debug/vars:
//
//	expvarstats.Publish("timers", st.Stats)
//	expvarstats.Publish("fetches", p.Stats)
//
// It is a package of its own because importing expvar registers the
// /debug/vars handler on http.DefaultServeMux, which a program that does
// not serve it should not get by importing timingwheel. The snapshot is
// taken each time the variable is read, not before: publishing costs
// nothing until someone looks.
package expvarstats

import "expvar"

// Publish publishes stats under name: each read of /debug/vars (or
// expvar.Get(name).String()) calls stats and shows its result as JSON,
// through its MarshalJSON if it has one, as the Stats of timingwheel and
// purgatory do. Like expvar.Publish, it panics if name is already
// published; call it once per name, at start-up.
func Publish[T any](name string, stats func() T) {
	if stats == nil {
		panic("expvarstats: Publish(" + name + ", nil)")
	}
	expvar.Publish(name, expvar.Func(func() any { return stats() }))
}
