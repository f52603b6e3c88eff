package generated

import "time"

func (j *job) start(d time.Duration) {
	j.timer = time.AfterFunc(d, func() {})
}
