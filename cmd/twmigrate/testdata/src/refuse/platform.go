package refuse

import "time"

// A field that a file left out by build constraints also uses.
type spool struct {
	flush *time.Timer // want `spool.flush: not migrated, stays \*time.Timer: flush is named in platform_other.go, which build constraints leave out here`
}

func (s *spool) start(d time.Duration) {
	s.flush = time.AfterFunc(d, func() {})
}
