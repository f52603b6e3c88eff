package idle

// touch pushes the connection's deadline back: a request came.
func (s *server) touch(c *conn) {
	c.idle.Reset(s.idleTimeout)
}

func (s *server) untrack(c *conn) {
	c.idle.Stop()
	c.nc.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// closeIdle closes every connection now, as their timers would.
func (s *server) closeIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.idle.Stop() {
			c.nc.Close()
		}
	}
}
