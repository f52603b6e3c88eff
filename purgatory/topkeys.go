package purgatory

import (
	"cmp"
	"slices"
)

// A KeyCount is a key and the number of watch-list entries under it; see
// [Purgatory.TopKeys].
type KeyCount[K comparable] struct {
	Key     K
	Watched int
}

// TopKeys returns the n keys with the most watch-list entries, most first
// (ties in no particular order), with the number of each: entries as
// Watched counts them, those of completed operations that wait for a
// purge included. It is for a monitoring page: which keys hold the
// operations.
//
// It takes each shard's lock in turn and visits every key of the shard
// under it, so it costs O(keys), and holds up TryCompleteElseWatch,
// CheckAndComplete and completions on that shard meanwhile for as long as
// a walk of the shard's keys takes. Call it when someone looks, not per
// request.
func (p *Purgatory[K]) TopKeys(n int) []KeyCount[K] {
	if n <= 0 {
		return nil
	}
	top := make([]KeyCount[K], 0, n) // most first
	byCount := func(a KeyCount[K], w int) int { return cmp.Compare(w, a.Watched) }
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		for k, l := range sh.lists {
			w := len(l.entries)
			if len(top) == n && w <= top[n-1].Watched {
				continue
			}
			if len(top) == n {
				top = top[:n-1]
			}
			j, _ := slices.BinarySearchFunc(top, w, byCount)
			top = slices.Insert(top, j, KeyCount[K]{k, w})
		}
		sh.mu.Unlock()
	}
	return top
}
