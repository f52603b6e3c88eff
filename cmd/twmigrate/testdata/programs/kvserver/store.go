package main

import (
	"context"
	"maps"
	"sync"
	"time"
)

type store struct {
	mu      sync.Mutex // guards data
	data    map[string]string
	changed func() // told after every change
}

func newStore() *store { return &store{data: make(map[string]string), changed: func() {}} }

func (st *store) get(k string) (string, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	v, ok := st.data[k]
	return v, ok
}

func (st *store) set(k, v string) {
	st.mu.Lock()
	st.data[k] = v
	st.mu.Unlock()
	st.changed()
}

func (st *store) del(k string) {
	st.mu.Lock()
	delete(st.data, k)
	st.mu.Unlock()
	st.changed()
}

func (st *store) size() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.data)
}

func (st *store) snapshot() map[string]string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return maps.Clone(st.data)
}

// slow stands for backend work of d that gives up when ctx is done.
func (st *store) slow(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
