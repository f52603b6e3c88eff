package purgatory

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-timingwheel/timingwheel"
)

// ErrClosed is returned by the methods of a Purgatory once it is closed.
var ErrClosed = errors.New("purgatory: closed")

var (
	errNilTimer  = errors.New("purgatory: the WithAfterFunc function returned a nil Timer")
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

	// scanFactor: a purge scans every watch list when they hold at most
	// this many entries per stale one, rather than visit the stale ones.
	// A scan checks entries in order, in lists that are short; a visit
	// goes to an entry anywhere in a list, likely a cache miss.
	scanFactor = 4
)

// An Option configures a Purgatory in New.
type Option interface {
	apply(*config)
}

type config struct {
	st            *timingwheel.SystemTimer
	stSet         bool
	afterFunc     func(time.Duration, func()) Timer
	afterFuncSet  bool
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

// A Timer is the timeout of one operation, as armed by the function given
// to [WithAfterFunc]. *time.Timer and *timingwheel.Timer are Timers.
type Timer interface {
	// Stop keeps the timer's function from running and reports whether
	// it did: false if the function has run or started, as
	// [time.Timer.Stop] does. The purgatory calls it at most once.
	Stop() bool
}

// WithAfterFunc makes the purgatory arm its timeouts with afterFunc instead
// of a SystemTimer: afterFunc(d, f) must run f once, on any goroutine, d
// after it is called, unless the Timer it returns (never nil) is stopped
// first. For the runtime's timers:
//
//	purgatory.WithAfterFunc(func(d time.Duration, f func()) purgatory.Timer {
//		return time.AfterFunc(d, f)
//	})
//
// The timers are the caller's: Close stops those of the operations it
// returns, and does not wait for timer functions that are running. It is
// an error to give both WithAfterFunc and WithTimer.
func WithAfterFunc(afterFunc func(d time.Duration, f func()) Timer) Option {
	return optionFunc(func(c *config) { c.afterFunc, c.afterFuncSet = afterFunc, true })
}

// WithPurgeInterval sets how many stale watch-list entries (entries of
// completed operations) may pile up before a purge removes them. Default
// 1000; 0 purges on every completion that leaves one. A purge costs about
// the same per stale entry whatever the interval; a larger one makes fewer,
// larger purges.
func WithPurgeInterval(n int) Option {
	return optionFunc(func(c *config) { c.purgeInterval = n })
}

// core is the part of a Purgatory that operations reach: it is not generic,
// so an Op can point to it.
type core struct {
	st            *timingwheel.SystemTimer          // immutable; nil with WithAfterFunc
	afterFunc     func(time.Duration, func()) Timer // immutable; nil without WithAfterFunc
	ownTimer      bool                              // st was created by New; stopped by Close
	purgeInterval int64                             // immutable
	purge         func()                            // the Purgatory's purge; immutable
	epoch         time.Time                         // time zero of Op.deadline; immutable

	closed  atomic.Bool
	purging atomic.Bool // a purge is running

	_ [64]byte // keep the counters below off the read-mostly fields above

	watched atomic.Int64 // watch-list entries; changed under the entry's shard lock
	delayed atomic.Int64 // armed timers that neither fired nor were stopped
	stale   atomic.Int64 // entries of completed operations still in a list
	queued  atomic.Int64 // len(queue)

	// queueMu guards queue: the operations that still had entries when
	// they completed after TryCompleteElseWatch had watched them, for the
	// next purge to remove those entries. Every stale entry belongs to a
	// queued operation, or to one whose TryCompleteElseWatch is about to
	// unwatch it.
	//
	// It also guards the totals of Stats that completions count: every
	// completion of a watched operation takes it (to queue the operation,
	// or, rarely, only to count), so counting there costs no atomic of
	// its own.
	queueMu   sync.Mutex
	queue     []*Op
	completed uint64                // completions of watched operations
	expired   uint64                // those of them by the timeout
	lateness  timingwheel.Histogram // of the expiries: see Stats.Lateness
	spare     []*Op                 // the purge's; only the goroutine that set purging uses it

	purged atomic.Uint64 // stale entries removed by purges; added once a purge
}

// since returns the time since the epoch, in ns: the clock of Op.deadline.
func (c *core) since() int64 { return int64(time.Since(c.epoch)) }

// arm arms a timer that runs f after d.
func (c *core) arm(d time.Duration, f func()) (Timer, error) {
	if c.afterFunc != nil {
		if t := c.afterFunc(d, f); t != nil {
			return t, nil
		}
		return nil, errNilTimer
	}
	t, err := c.st.AfterFunc(d, f)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// ended counts the completion of a watched operation, by its timeout if
// expiry, late being then how late; and it queues o, if not nil, for the
// next purge.
func (c *core) ended(o *Op, expiry bool, late time.Duration) {
	c.queueMu.Lock()
	c.completed++
	if expiry {
		c.expired++
		c.lateness.Record(late)
	}
	if o != nil && !c.closed.Load() { // Close empties the queue after setting closed
		c.queue = append(c.queue, o)
		c.queued.Store(int64(len(c.queue)))
	}
	c.queueMu.Unlock()
}

// maybePurge purges the watch lists if there are more stale entries, or
// more queued operations, than the purge interval and no other purge is
// running. (Entries removed by CheckAndComplete leave their operation in
// the queue; the second condition bounds the queue.) A completion that
// finds a purge running leaves its entries to it, but the purge took the
// queue before: so a purge that finds operations queued when it ends looks
// again.
func (c *core) maybePurge() {
	for (c.stale.Load() > c.purgeInterval || c.queued.Load() > c.purgeInterval) &&
		!c.closed.Load() && c.purging.CompareAndSwap(false, true) {
		c.purge()
		c.purging.Store(false)
		if c.queued.Load() == 0 {
			return // nothing completed meanwhile
		}
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

	// The purge's scratch space; only the goroutine that set purging
	// uses it.
	shardEnds []int
	sorted    []*ref
	taken     []*Op
	touched   int32 // keeps the compiler from dropping the loads of the purge's prefetch
}

// A shard holds the watch lists of the keys that hash to it.
type shard[K comparable] struct {
	// mu guards lists, peak and closed, the lists in lists (their entries
	// and gone), the idx of every ref to them, and the order of changes
	// to the entry counts of the operations in them (Op.addRef, dropRef).
	// No user code runs, and no timer is touched, while it is held.
	mu     sync.Mutex
	lists  map[K]*list // never holds an empty list
	peak   int         // largest len(lists) since the map was made
	closed bool

	_ [64]byte // keep neighbouring shards' locks off one cache line
}

// A list is the watch list of one key: an entry per operation watched
// under it, in no particular order. The operation's ref for the list holds
// the entry's position, so that an entry is removed in O(1) by moving the
// last one into its place.
type list struct {
	entries []entry
	key     any   // the key (a K), to delete the list from the map; immutable
	shard   int32 // its shard's index; immutable
	gone    bool  // taken out of its shard's map: refs still pointing here are void
}

// An entry of a list: the operation, and which of its refs is the entry's.
type entry struct {
	op *Op
	j  int32 // op.ref(j) is the entry's ref
}

// removeAt removes the entry of r, which is in l, and uncounts it; it
// reports whether the entry was stale. Called with l's shard lock held; the
// caller calls store when it is done with l.
func (l *list) removeAt(r *ref) (stale bool) {
	return l.take(r).dropRef()
}

// take removes the entry of r, which is in l, and returns its operation,
// leaving the operation's entry count to the caller. Called with l's shard
// lock held.
func (l *list) take(r *ref) *Op {
	i := r.idx
	o := l.entries[i].op
	last := int32(len(l.entries) - 1)
	if i != last {
		m := l.entries[last]
		l.entries[i] = m
		m.op.ref(int(m.j)).idx = i
	}
	l.entries[last] = entry{}
	l.entries = l.entries[:last]
	r.idx = -1
	return o
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
	case c.afterFuncSet && c.afterFunc == nil:
		return nil, errors.New("purgatory: WithAfterFunc(nil): the function must not be nil")
	case c.stSet && c.afterFuncSet:
		return nil, errors.New("purgatory: WithTimer and WithAfterFunc: give one of them")
	case c.purgeInterval < 0:
		return nil, fmt.Errorf("purgatory: WithPurgeInterval(%d): the interval must not be negative", c.purgeInterval)
	}
	p := &Purgatory[K]{seed: maphash.MakeSeed()}
	p.st, p.afterFunc = c.st, c.afterFunc
	p.epoch = time.Now()
	p.purgeInterval = int64(c.purgeInterval)
	p.purge = p.purgeQueued
	if !c.stSet && !c.afterFuncSet {
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
	p.shardEnds = make([]int, n)
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
// key not equal to itself (a NaN), a negative Timeout, or an operation
// already passed to TryCompleteElseWatch
// (which is left alone); ErrClosed after Close; and an error of the
// SystemTimer (timingwheel.ErrStopped, timingwheel.ErrTooManyPending) if
// the timeout cannot be armed, or an error if the WithAfterFunc function
// returned a nil Timer.
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
	case slices.ContainsFunc(keys, func(k K) bool { return k != k }):
		// A NaN, or a key holding one: a map never finds it again, so
		// its list could not be found, nor deleted.
		err = errors.New("purgatory: a key not equal to itself (a NaN)")
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
	n := 0
	for i, key := range keys {
		if i == 0 || !slices.Contains(keys[:i], key) {
			n++
		}
	}
	if n > len(o.inline) {
		more := make([]ref, n-len(o.inline))
		o.more = &more
	}
	for j := range o.nrefs() {
		o.ref(j).idx = -1
	}
	j := 0
	for i, key := range keys {
		if i > 0 && slices.Contains(keys[:i], key) {
			continue
		}
		added, err := p.watch(o, key, j)
		j++
		if err != nil {
			p.doneWatching(o)
			return p.refuse(o, err)
		}
		if !added {
			break // completed meanwhile, or taken by Close
		}
	}
	// From here on, a completion queues op for the purge; one before left
	// its entries to us.
	if p.doneWatching(o) {
		p.unwatch(o)
		return false, nil
	}
	// A change to op's condition made before this try is seen by it; one
	// made after it is followed by a CheckAndComplete that finds op in a
	// watch list.
	done := o.try()
	s := o.state.Load()
	if s&stCompleted != 0 {
		p.unwatch(o) // at once: cheap here
		return done, nil
	}
	if s&(stCanceled|stDetached) != 0 {
		return false, nil // CancelForKey or Close returned it
	}

	o.deadline = satAdd(p.since(), int64(o.Timeout))
	p.delayed.Add(1)
	t, err := p.arm(o.Timeout, o.expire)
	if err != nil {
		p.delayed.Add(-1)
		return p.refuse(o, err)
	}
	o.timer = t
	// Whoever completed or canceled op before stArmed was set found no
	// timer to stop; whoever does so after it finds t.
	if o.state.Or(stArmed)&(stCompleted|stCanceled) != 0 {
		o.stopTimer()
	}
	return false, nil
}

// doneWatching sets stWatched, after which a completion of o counts itself
// and queues o for the purge, and reports whether o completed before. If it
// did after being watched under a key, it counts that completion: rarely,
// since only another goroutine can complete o while TryCompleteElseWatch
// watches it.
func (p *Purgatory[K]) doneWatching(o *Op) (completed bool) {
	if o.state.Or(stWatched)&stCompleted == 0 {
		return false
	}
	if o.ref(0).l != nil { // the first key's watch succeeded
		p.ended(nil, false, 0)
	}
	return true
}

// satAdd returns a+b, or the largest int64 if that overflows; b >= 0.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// refuse gives op back to the caller of TryCompleteElseWatch with err,
// unless it completed meanwhile, or Close or CancelForKey returned it.
// Called after stWatched is set.
func (p *Purgatory[K]) refuse(o *Op, err error) (bool, error) {
	if o.detach(stCanceled) {
		p.unwatch(o)
		return false, err
	}
	if o.IsCompleted() {
		p.unwatch(o) // its completion may have left the entries to us
	}
	return false, nil
}

// watch adds o to the watch list of key, with o.refs[j] as its ref, unless
// o is completed or detached.
func (p *Purgatory[K]) watch(o *Op, key K, j int) (added bool, err error) {
	i := maphash.Comparable(p.seed, key) & p.mask
	sh := &p.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.closed {
		return false, ErrClosed
	}
	if !o.addRef() {
		return false, nil
	}
	l := sh.lists[key]
	if l == nil {
		if sh.lists == nil {
			sh.lists = make(map[K]*list)
		}
		l = &list{key: key, shard: int32(i)}
		sh.lists[key] = l
		sh.peak = max(sh.peak, len(sh.lists))
	}
	*o.ref(j) = ref{l: l, idx: int32(len(l.entries))}
	l.entries = append(l.entries, entry{o, int32(j)})
	p.watched.Add(1)
	return true, nil
}

// unwatch removes o's entries from their watch lists, holding one shard
// lock at a time. Only TryCompleteElseWatch, while it watches o, or a
// goroutine that saw stWatched may call it: o.refs and their l are
// TryCompleteElseWatch's until then. Removing an entry twice is harmless.
func (p *Purgatory[K]) unwatch(o *Op) {
	stale, removed := int64(0), int64(0)
	for j := range o.nrefs() {
		r := o.ref(j)
		l := r.l
		if l == nil {
			continue // never watched
		}
		sh := &p.shards[l.shard]
		sh.mu.Lock()
		if !l.gone && r.idx >= 0 {
			if l.removeAt(r) {
				stale++
			}
			removed++
			sh.store(l)
		}
		sh.mu.Unlock()
	}
	p.uncount(removed, stale)
}

// uncount takes removed entries, stale of them stale, off the counters.
func (p *Purgatory[K]) uncount(removed, stale int64) {
	if removed > 0 {
		p.watched.Add(-removed)
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
	ops := stack[:0]
	if l := sh.lists[key]; l != nil {
		if len(l.entries) > len(stack) {
			b := getScratch(len(l.entries))
			defer putScratch(b)
			ops = (*b)[:0]
		}
		for _, e := range l.entries {
			ops = append(ops, e.op)
		}
	}
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
	if l := sh.lists[key]; !sh.closed && l != nil {
		p.compact(sh, l)
	}
}

// compact removes the entries of dead operations from l, each by moving the
// last entry into its place, so that only the moved entries' refs change,
// and returns how many of them were stale. Called with sh.mu held, sh being
// l's shard.
func (p *Purgatory[K]) compact(sh *shard[K], l *list) (stale int64) {
	removed := int64(0)
	for i := 0; i < len(l.entries); {
		e := l.entries[i]
		if !e.op.dead() {
			i++
			continue
		}
		if l.removeAt(e.op.ref(int(e.j))) { // moves the last entry to i
			stale++
		}
		removed++
	}
	sh.store(l)
	p.uncount(removed, stale)
	return stale
}

// store deletes l if it is empty, rebuilding the map once it holds at most
// a quarter of its peak number of keys (a Go map never gives back the
// memory of its deleted keys); otherwise it copies l's entries to a smaller
// array if at most a quarter of the capacity is used, so that a list that
// was long once does not keep its array for ever. Called with mu held.
func (sh *shard[K]) store(l *list) {
	if n := len(l.entries); n > 0 {
		if c := cap(l.entries); c > minListCap && n <= c/4 {
			l.entries = append(make([]entry, 0, max(2*n, minListCap/2)), l.entries...)
		}
		return
	}
	l.entries, l.gone = nil, true
	delete(sh.lists, l.key.(K))
	if sh.peak >= minMapPeak && len(sh.lists) <= sh.peak/4 {
		m := make(map[K]*list, len(sh.lists))
		for k, v := range sh.lists {
			m[k] = v
		}
		sh.lists, sh.peak = m, len(m)
	}
}

// purgeQueued removes the entries of the queued operations from their watch
// lists. It visits only those entries, through the operations' refs, never
// the rest of the lists: it sorts them by shard (a counting sort), then
// takes each shard's lock once for all its entries. But when all the lists
// together hold at most scanFactor times as many entries as are stale,
// scanning them is cheaper, and it does that.
func (p *Purgatory[K]) purgeQueued() {
	p.queueMu.Lock()
	ops := p.queue
	p.queue = p.spare[:0]
	p.queued.Store(0)
	p.queueMu.Unlock()
	defer func() {
		clear(ops[:cap(ops)])
		p.spare = ops[:0]
	}()
	if p.watched.Load() <= scanFactor*p.stale.Load() {
		p.scanAll()
		return
	}

	// An operation whose entries are all gone (removed by
	// CheckAndComplete, CancelForKey or its TryCompleteElseWatch) needs
	// no lock; a completed operation never gains an entry. Filter once:
	// the counts may drop meanwhile, and both passes below must see the
	// same operations.
	work := ops[:0]
	for _, o := range ops {
		if o.state.Load()>>refShift > 0 {
			work = append(work, o)
		}
	}
	// Count the entries of each shard, then place them.
	ends := p.shardEnds
	clear(ends)
	n := 0
	for _, o := range work {
		for j := range o.nrefs() {
			if l := o.ref(j).l; l != nil {
				ends[l.shard]++
				n++
			}
		}
	}
	for i := 1; i < len(ends); i++ {
		ends[i] += ends[i-1]
	}
	if cap(p.sorted) < n {
		p.sorted = make([]*ref, n)
	}
	sorted := p.sorted[:n]
	for _, o := range work {
		for j := range o.nrefs() {
			if r := o.ref(j); r.l != nil {
				ends[r.l.shard]--
				sorted[ends[r.l.shard]] = r
			}
		}
	}

	// The operations are completed: every entry removed is stale, and
	// their entry counts can drop after the removals, outside the locks.
	// An atomic in the loop would keep the cache misses of consecutive
	// entries from overlapping.
	taken := p.taken[:0]
	for i := 0; i < n; {
		shard := sorted[i].l.shard
		sh := &p.shards[shard]
		sh.mu.Lock()
		// Touch the entries first: independent loads, whose cache
		// misses overlap, where the removals below depend on each
		// other.
		var touch int32
		for _, r := range sorted[i:] {
			if l := r.l; l.shard != shard {
				break
			} else if !l.gone && r.idx >= 0 {
				touch += l.entries[r.idx].j
			}
		}
		p.touched = touch
		for ; i < n; i++ {
			r := sorted[i]
			l := r.l
			if l.shard != shard {
				break
			}
			if !l.gone && r.idx >= 0 {
				taken = append(taken, l.take(r))
				sh.store(l)
			}
		}
		sh.mu.Unlock()
	}
	stale := int64(0)
	for _, o := range taken {
		if o.dropRef() {
			stale++
		}
	}
	p.uncount(int64(len(taken)), stale)
	p.purged.Add(uint64(stale))
	clear(sorted)
	clear(taken)
	p.taken = taken[:0]
}

// scanAll removes the entries of dead operations from every watch list,
// holding one shard lock at a time.
func (p *Purgatory[K]) scanAll() {
	stale := int64(0)
	defer func() { p.purged.Add(uint64(stale)) }()
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		if sh.closed {
			sh.mu.Unlock()
			return
		}
		for _, l := range sh.lists {
			if !l.gone { // store may have deleted it, and rebuilt the map
				stale += p.compact(sh, l)
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
	var ops []*Op
	stale := int64(0)
	if l := sh.lists[key]; l != nil {
		ops = make([]*Op, len(l.entries))
		for i, e := range l.entries {
			ops[i] = e.op
			e.op.ref(int(e.j)).idx = -1
			if e.op.dropRef() {
				stale++
			}
		}
		p.watched.Add(-int64(len(l.entries)))
		clear(l.entries)
		l.entries = l.entries[:0]
		sh.store(l)
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
// call ForceComplete to complete them (OnComplete then runs on the caller,
// or, if a TryComplete that started before Close still runs, on its
// goroutine when it returns). A TryComplete already running when Close is
// called may still complete its operation; ForceComplete then returns
// false.
//
// If New created the SystemTimer, Close stops it, waiting for the timer
// callbacks that are running (so for OnExpiration and OnComplete of
// operations that expire meanwhile, unless a TryComplete of the operation
// was running: its goroutine calls them), except the one calling Close, if
// any.
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
		for _, l := range lists {
			for _, e := range l.entries {
				if e.op.detach(0) { // once per operation, whatever its keys
					taken = append(taken, e.op)
				}
			}
			p.watched.Add(-int64(len(l.entries)))
			l.entries, l.gone = nil, true
		}
		sh.mu.Unlock()
	}
	// Completions that raced the sweep may have queued operations; their
	// entries went with the lists.
	p.queueMu.Lock()
	p.queue = nil
	p.queued.Store(0)
	p.queueMu.Unlock()
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
