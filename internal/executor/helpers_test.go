package executor

// What only the tests use: a group of one pool, and the ways to submit to
// it, close it and see it idle.

// New starts a group of one pool.
func New[T any](c Config[T]) *Group[T] { return NewGroup(c, 1) }

// Submit submits to home 0's pool: the one pool of a group made by New.
func (g *Group[T]) Submit(items ...T) bool { return g.pools[0].Submit(items...) }

// Close is Shut, then Wait. Later calls return nil at once, without
// waiting: two items that both close the group do not wait for each other.
func (g *Group[T]) Close() []T {
	left, first := g.shut()
	if first {
		g.Wait()
	}
	return left
}

// Idle reports whether every item submitted so far has run.
func (g *Group[T]) Idle() bool {
	backlog, _, busy := g.Load()
	return backlog == 0 && busy == 0
}
