package purgatory

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-timingwheel/timingwheel"
)

// ErrClosed is returned by the methods of a Purgatory once it is closed.
var ErrClosed = errors.New("purgatory: closed")

var (
	errNilOp     = errors.New("purgatory: nil operation")
	errNoKeys    = errors.New("purgatory: TryCompleteElseWatch needs at least one key")
	errSubmitted = errors.New("purgatory: operation already passed to TryCompleteElseWatch")
)

// Defaults and bounds.
const (
	defaultPurgeInterval = 1000

	minShards = 16
	maxShards = 1024

	// minListCap is the capacity below which a watch list is never
	// reallocated to shrink it; minMapPeak the same for a shard's map.
	minListCap = 16
	minMapPeak = 1024
)

// An Option configures a Purgatory in New.
type Option interface {
	apply(*config)
}

type config struct {
	st            *timingwheel.SystemTimer
	stSet         bool
	purgeInterval int
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithTimer makes the purgatory keep its timeouts on st, which the caller
// owns: Close does not stop it. Without it, New creates a SystemTimer with
// the default options and Close stops it.
func WithTimer(st *timingwheel.SystemTimer) Option {
	return optionFunc(func(c *config) { c.st, c.stSet = st, true })
}

// WithPurgeInterval sets how many stale watch-list entries (entries of
// completed operations) may pile up before a purge removes them from every
// watch list. Default 1000; 0 purges on every completion that leaves one.
func WithPurgeInterval(n int) Option {
	return optionFunc(func(c *config) { c.purgeInterval = n })
}

// core is the part of a Purgatory that operations reach: it is not generic,
// so an Op can point to it.
type core struct {
	st            *timingwheel.SystemTimer // immutable
	ownTimer      bool                     // created by New; stopped by Close
	purgeInterval int64                    // immutable
	purge         func()                   // the Purgatory's purge; immutable

	closed  atomic.Bool
	purging atomic.Bool // a purge is running

	_ [64]byte // keep the counters below off the read-mostly fields above

	watched atomic.Int64 // watch-list entries; changed under the entry's shard lock
	delayed atomic.Int64 // armed timers that neither fired nor were stopped
	stale   atomic.Int64 // entries of completed operations still in a list
}

// maybePurge purges the watch lists if there are more stale entries than
// the purge interval and no other purge is running.
func (c *core) maybePurge() {
	if c.stale.Load() > c.purgeInterval && !c.closed.Load() && c.purging.CompareAndSwap(false, true) {
		c.purge()
		c.purging.Store(false)
	}
}

// A Purgatory holds operations until they complete or time out, each
// watched under one or more keys of type K. It is safe for concurrent use.
// See the package doc for its design and guarantees.
type Purgatory[K comparable] struct {
	core
	seed   maphash.Seed // immutable
	mask   uint64       // len(shards)-1; immutable
	shards []shard[K]
}

// A shard holds the watch lists of the keys that hash to it.
type shard[K comparable] struct {
	// mu guards lists, peak and closed, and the order of changes to the
	// entry counts of the operations in the lists (Op.addRef, dropRef).
	// No user code runs, and no timer is touched, while it is held.
	mu     sync.Mutex
	lists  map[K][]*Op // never holds an empty list
	peak   int         // largest len(lists) since the map was made
	closed bool

	_ [64]byte // keep neighbouring shards' locks off one cache line
}

// New returns a Purgatory, or an error naming the first invalid option.
func New[K comparable](opts ...Option) (*Purgatory[K], error) {
	c := config{purgeInterval: defaultPurgeInterval}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("purgatory: nil Option")
		}
		o.apply(&c)
	}
	switch {
	case c.stSet && c.st == nil:
		return nil, errors.New("purgatory: WithTimer(nil): the SystemTimer must not be nil")
	case c.purgeInterval < 0:
		return nil, fmt.Errorf("purgatory: WithPurgeInterval(%d): the interval must not be negative", c.purgeInterval)
	}
	p := &Purgatory[K]{seed: maphash.MakeSeed()}
	p.st = c.st
	p.purgeInterval = int64(c.purgeInterval)
	p.purge = p.purgeAll
	if !c.stSet {
		st, err := timingwheel.New()
		if err != nil {
			return nil, fmt.Errorf("purgatory: creating its SystemTimer: %w", err)
		}
		p.st, p.ownTimer = st, true
	}
	n := 1 << bits.Len(uint(16*runtime.GOMAXPROCS(0)-1))
	n = min(max(n, minShards), maxShards)
	p.shards = make([]shard[K], n)
	p.mask = uint64(n - 1)
	return p, nil
}

func (p *Purgatory[K]) shardOf(key K) *shard[K] {
	return &p.shards[maphash.Comparable(p.seed, key)&p.mask]
}

// baseOf returns op's Op, or nil if op is nil or a nil pointer.
func baseOf(op Operation) (o *Op) {
	if op == nil {
		return nil
	}
	defer func() {
		if recover() != nil { // a nil pointer to a type that embeds Op
			o = nil
		}
	}()
	return op.base()
}

// TryCompleteElseWatch tries to complete op; if that fails, it watches op
// under every key (a key given twice is watched once), tries again, and
// only then arms op's timeout. It reports whether this call completed op.
// An operation can be passed to TryCompleteElseWatch only once.
//
// A nil error means the purgatory has taken op: it is completed, or will be
// by CheckAndComplete, ForceComplete or its timeout, or a concurrent Close
// or CancelForKey returns it. An error means op was refused: it is not
// watched, its timeout is not armed, and the purgatory never tries it; the
// caller may end it with ForceComplete. It is an error to pass no key, a
// negative Timeout, or an operation already passed to TryCompleteElseWatch
// (which is left alone); ErrClosed after Close; and an error of the
// SystemTimer (timingwheel.ErrStopped, timingwheel.ErrTooManyPending) if
// the timeout cannot be armed.
func (p *Purgatory[K]) TryCompleteElseWatch(op Operation, keys ...K) (bool, error) {
	o := baseOf(op)
	if o == nil {
		return false, errNilOp
	}
	if !o.state.CompareAndSwap(0, stClaimed) {
		return false, errSubmitted
	}
	o.self, o.p = op, &p.core
	var err error
	switch {
	case len(keys) == 0:
		err = errNoKeys
	case o.Timeout < 0:
		err = fmt.Errorf("purgatory: negative operation Timeout %v", o.Timeout)
	case p.closed.Load():
		err = ErrClosed
	}
	if err != nil {
		o.state.Or(stReady | stDetached | stCanceled)
		return false, err
	}
	o.state.Or(stReady)

	if o.try() {
		return true, nil
	}
	for i, key := range keys {
		if i > 0 && slices.Contains(keys[:i], key) {
			continue
		}
		added, err := p.watch(o, key)
		if err != nil {
			return p.refuse(o, keys[:i], err)
		}
		if !added {
			break // completed meanwhile, or taken by Close
		}
	}
	// A change to op's condition made before this try is seen by it; one
	// made after it is followed by a CheckAndComplete that finds op in a
	// watch list.
	done := o.try()
	s := o.state.Load()
	if s&stCompleted != 0 {
		p.unwatch(o, keys) // cheap here: the keys are at hand
		return done, nil
	}
	if s&(stCanceled|stDetached) != 0 {
		return false, nil // CancelForKey or Close returned it
	}

	p.delayed.Add(1)
	t, err := p.st.AfterFunc(o.Timeout, o.expire)
	if err != nil {
		p.delayed.Add(-1)
		return p.refuse(o, keys, err)
	}
	o.timer.Store(t)
	// Whoever completed or canceled op before the Store may have found no
	// timer to stop; whoever does so after it finds t.
	if o.state.Load()&(stCompleted|stCanceled) != 0 {
		o.stopTimer()
	}
	return false, nil
}

// refuse gives op back to the caller of TryCompleteElseWatch with err,
// unless it completed meanwhile, or Close or CancelForKey returned it.
func (p *Purgatory[K]) refuse(o *Op, keys []K, err error) (bool, error) {
	if !o.detach(stCanceled) {
		return false, nil
	}
	p.unwatch(o, keys)
	return false, err
}

// watch adds o to the watch list of key, unless o is completed or detached.
func (p *Purgatory[K]) watch(o *Op, key K) (added bool, err error) {
	sh := p.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.closed {
		return false, ErrClosed
	}
	if !o.addRef() {
		return false, nil
	}
	if sh.lists == nil {
		sh.lists = make(map[K][]*Op)
	}
	sh.lists[key] = append(sh.lists[key], o)
	sh.peak = max(sh.peak, len(sh.lists))
	p.watched.Add(1)
	return true, nil
}

// unwatch removes o's entries from the watch lists of keys.
func (p *Purgatory[K]) unwatch(o *Op, keys []K) {
	stale := int64(0)
	for i, key := range keys {
		if i > 0 && slices.Contains(keys[:i], key) {
			continue
		}
		sh := p.shardOf(key)
		sh.mu.Lock()
		ops := sh.lists[key]
		// Search from the end: o was appended recently.
		for j := len(ops) - 1; j >= 0; j-- {
			if ops[j] == o {
				ops = slices.Delete(ops, j, j+1)
				if o.dropRef() {
					stale++
				}
				p.watched.Add(-1)
				sh.store(key, shrink(ops))
				break
			}
		}
		sh.mu.Unlock()
	}
	if stale > 0 {
		p.stale.Add(-stale)
	}
}

// CheckAndComplete tries to complete every operation watched under key, and
// returns how many it completed. Call it after every change that may let an
// operation watched under key complete. Completed operations leave the
// key's watch list, and the key goes once its list is empty.
func (p *Purgatory[K]) CheckAndComplete(key K) (int, error) {
	if p.closed.Load() {
		return 0, ErrClosed
	}
	sh := p.shardOf(key)
	var stack [32]*Op
	sh.mu.Lock()
	if sh.closed {
		sh.mu.Unlock()
		return 0, ErrClosed
	}
	list := sh.lists[key]
	ops := stack[:0]
	if len(list) > len(stack) {
		b := getScratch(len(list))
		defer putScratch(b)
		ops = (*b)[:0]
	}
	ops = append(ops, list...)
	sh.mu.Unlock()

	// A snapshot: the list is left alone while TryComplete runs, so a
	// concurrent CheckAndComplete of key tries the same operations.
	completed, dead := 0, false
	for _, o := range ops {
		if o.try() {
			completed++
		}
		dead = dead || o.dead()
	}
	if dead {
		p.compactKey(sh, key)
	}
	return completed, nil
}

// scratch holds snapshot buffers of CheckAndComplete for long watch lists.
var scratch sync.Pool // of *[]*Op

func getScratch(n int) *[]*Op {
	b, ok := scratch.Get().(*[]*Op)
	if !ok || cap(*b) < n {
		b = new([]*Op)
		*b = make([]*Op, 0, n)
	}
	return b
}

func putScratch(b *[]*Op) {
	if cap(*b) > 1<<16 {
		return // do not keep a huge buffer alive
	}
	clear((*b)[:cap(*b)])
	scratch.Put(b)
}

// compactKey removes the entries of dead operations from key's watch list.
func (p *Purgatory[K]) compactKey(sh *shard[K], key K) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.closed {
		return
	}
	if ops, ok := sh.lists[key]; ok {
		sh.store(key, p.compact(ops))
	}
}

// compact removes the entries of dead operations from ops, accounts for
// them, and returns what is left, in a smaller array if most of the
// capacity is unused. Called with the lists' shard lock held.
func (p *Purgatory[K]) compact(ops []*Op) []*Op {
	kept, stale := ops[:0], int64(0)
	for _, o := range ops {
		if !o.dead() {
			kept = append(kept, o)
		} else if o.dropRef() {
			stale++
		}
	}
	clear(ops[len(kept):])
	if removed := len(ops) - len(kept); removed > 0 {
		p.watched.Add(-int64(removed))
		p.stale.Add(-stale)
	}
	return shrink(kept)
}

// shrink returns ops, copied to a smaller array if at most a quarter of its
// capacity is used, so that a list that was long once does not keep its
// array for ever.
func shrink(ops []*Op) []*Op {
	if c := cap(ops); c > minListCap && len(ops) <= c/4 {
		return append(make([]*Op, 0, max(2*len(ops), minListCap/2)), ops...)
	}
	return ops
}

// store sets key's watch list to ops, deleting the key if ops is empty and
// rebuilding the map once it holds at most a quarter of its peak number of
// keys: a Go map never gives back the memory of its deleted keys.
// Called with mu held.
func (sh *shard[K]) store(key K, ops []*Op) {
	if len(ops) > 0 {
		sh.lists[key] = ops
		return
	}
	delete(sh.lists, key)
	if sh.peak >= minMapPeak && len(sh.lists) <= sh.peak/4 {
		m := make(map[K][]*Op, len(sh.lists))
		for k, v := range sh.lists {
			m[k] = v
		}
		sh.lists, sh.peak = m, len(m)
	}
}

// purgeAll removes the entries of dead operations from every watch list.
// It holds one shard lock at a time.
func (p *Purgatory[K]) purgeAll() {
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		if sh.closed {
			sh.mu.Unlock()
			return
		}
		for key, ops := range sh.lists {
			if kept := p.compact(ops); len(kept) != len(ops) || cap(kept) != cap(ops) {
				sh.store(key, kept)
			}
		}
		sh.mu.Unlock()
	}
}

// CancelForKey stops watching key, cancels the timeouts of the operations
// watched under it, which then never expire, and returns those that were not
// completed. They stay watched under their other keys, where
// CheckAndComplete can still complete them; an operation no longer watched
// anywhere completes only by ForceComplete.
func (p *Purgatory[K]) CancelForKey(key K) ([]Operation, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	sh := p.shardOf(key)
	sh.mu.Lock()
	if sh.closed {
		sh.mu.Unlock()
		return nil, ErrClosed
	}
	ops, ok := sh.lists[key]
	stale := int64(0)
	if ok {
		sh.store(key, nil)
		for _, o := range ops {
			if o.dropRef() {
				stale++
			}
		}
		p.watched.Add(-int64(len(ops)))
	}
	sh.mu.Unlock()
	p.stale.Add(-stale)

	var canceled []Operation
	for _, o := range ops {
		if o.cancel() {
			canceled = append(canceled, o.self)
		}
	}
	return canceled, nil
}

// Watched returns the number of watch-list entries over all keys: an
// operation watched under three keys counts three times. It includes the
// stale entries of completed operations that are not purged yet.
func (p *Purgatory[K]) Watched() int { return int(p.watched.Load()) }

// NumDelayed returns the number of operations whose timeout is armed: not
// completed, and not canceled by CancelForKey or Close.
func (p *Purgatory[K]) NumDelayed() int { return int(p.delayed.Load()) }

// Close closes the purgatory and returns the operations that were still
// waiting, each once: their timeouts are canceled, they leave every watch
// list, and the purgatory never tries them again. They are not completed;
// call ForceComplete to complete them (OnComplete then runs on the caller).
// A TryComplete already running when Close is called may still complete
// its operation; ForceComplete then returns false.
//
// If New created the SystemTimer, Close stops it, waiting for the timer
// callbacks that are running (so for OnExpiration and OnComplete of
// operations that expire meanwhile), except the one calling Close, if any.
// Later calls of Close return nil, and TryCompleteElseWatch,
// CheckAndComplete and CancelForKey return ErrClosed.
func (p *Purgatory[K]) Close() []Operation {
	if !p.closed.CompareAndSwap(false, true) {
		return nil
	}
	var taken []*Op
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		sh.closed = true
		lists := sh.lists
		sh.lists, sh.peak = nil, 0
		for _, ops := range lists {
			for _, o := range ops {
				if o.detach(0) { // once per operation, whatever its keys
					taken = append(taken, o)
				}
			}
			p.watched.Add(-int64(len(ops)))
		}
		sh.mu.Unlock()
	}
	left := make([]Operation, len(taken))
	for i, o := range taken {
		o.stopTimer()
		left[i] = o.self
	}
	if p.ownTimer {
		// Timers armed after the sweep, by TryCompleteElseWatch calls
		// racing Close, end here; their operations were taken above.
		p.delayed.Add(-int64(len(p.st.Stop())))
	}
	return left
}
