//go:build never

package refuse

import "time"

func (s *spool) restart(d time.Duration) {
	s.flush = time.NewTimer(d)
}
