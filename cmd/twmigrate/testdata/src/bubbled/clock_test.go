package bubbled

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fired := false
		expire(time.Hour, func() { fired = true })
		time.Sleep(time.Hour)
		synctest.Wait()
		if !fired {
			t.Fatal("not fired")
		}
	})
}
