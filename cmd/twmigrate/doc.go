// Twmigrate moves a program's timers from the time and context packages
// to timingwheel's package-level functions, as go fix and gopls' modernize
// move code: an analysis whose suggested fixes rewrite the source.
//
//	twmigrate ./...        # reports what it would rewrite, and what it leaves, with the reason
//	twmigrate -diff ./...  # shows the rewrite
//	twmigrate -fix ./...   # rewrites
//
// Build it from a checkout of timingwheel with
// "go -C cmd/twmigrate build -o /tmp/twmigrate ."; the rewritten program
// then needs the module (see the README's replace lines).
//
// It rewrites the calls of time.After, Tick and Sleep and of
// context.WithTimeout, WithDeadline, WithTimeoutCause and
// WithDeadlineCause, whose timingwheel twins have the same signatures, and
// the calls of time.AfterFunc, NewTimer and NewTicker together with every
// *time.Timer and *time.Ticker that holds their results, which become
// *timingwheel.Timer, *timingwheel.ChanTimer and *timingwheel.Ticker:
// variables, fields, parameters, results, named types, and the maps,
// slices, arrays and channels of them. It adds the import of timingwheel
// and drops those of time and context that nothing uses any more.
//
// A type change in one place forces the same change everywhere the value
// flows, so it follows the values with go/types: the places that hold a
// timer are joined by assignments, calls and returns of the package's own
// functions, composite literals, channel sends, ranges and comparisons,
// and each group of joined places moves as one, or not at all. A group
// moves only if all its timers are made in the package by one kind of
// constructor, and none leaves the package's sight. It stays on the time
// package, reported with the position and the reason, if a place in it
//   - is given both time.AfterFunc and time.NewTimer results, or reads C
//     of a time.AfterFunc timer (nil there; timingwheel.Timer has none);
//   - gets a timer from, or passes one to, another package (the package is
//     analyzed before those that import it and cannot know what they do
//     with a timer it hands out, so exported fields, variables, functions
//     and methods that hold timers stay, and so does what flows into them;
//     in a main package too, if its directory has external tests);
//   - puts a timer in an interface (a type assertion elsewhere would stop
//     matching), takes one out of one, or compares one with one;
//   - holds a time.Timer by value, embeds one, or has one in a func type, a
//     map key, a type argument or an interface method;
//   - is a function or function literal used as a value, a function named
//     in a go:linkname directive, or a method that may implement an
//     interface: its callers are out of sight;
//   - is named in a file that build constraints leave out, or lies in a
//     generated file, or where the name timingwheel means something else.
//
// A package with test files of its own is rewritten only by the analysis
// that includes them (-test, the default): without them it is left alone,
// since a test could give a field a timer the rewrite cannot follow. A
// package whose test files (in its directory) import testing/synctest or
// goleak directly, not through a helper package, is left alone whole: the
// default wheel's goroutines run outside a synctest bubble, and live as
// long as the program. The rewritten timers have the time package's
// semantics since Go
// 1.23, with the differences the README lists: a channel timer's C has a
// buffer of one value, a timer nobody stops stays pending until it fires
// (time.After's included), callbacks run on a pool of workers, and a
// Ticker under the tick (1ms) ticks at most once a tick.
package main
