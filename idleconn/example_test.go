package idleconn_test

import (
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/idleconn"
)

// A Read on a silent connection fails once the idle time has passed, as
// after an expired deadline.
func ExampleWrap() {
	st, err := timingwheel.New()
	if err != nil {
		log.Fatal(err)
	}
	defer st.Stop()

	server, client := net.Pipe()
	defer client.Close()
	conn, err := idleconn.Wrap(server, st, 50*time.Millisecond)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	_, err = conn.Read(make([]byte, 1)) // the client says nothing
	fmt.Println(err)
	fmt.Println(errors.Is(err, os.ErrDeadlineExceeded))
	// Output:
	// read pipe: i/o timeout
	// true
}

// Every connection of an http.Server gets an idle timeout on the wheel.
func ExampleListen() {
	st, err := timingwheel.New()
	if err != nil {
		log.Fatal(err)
	}
	defer st.Stop() // runs after Serve has returned

	ln, err := net.Listen("tcp", ":8080")
	if err != nil {
		log.Fatal(err)
	}
	ln, err = idleconn.Listen(ln, st, 2*time.Minute, idleconn.WithCloseOnIdle())
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.NotFoundHandler(),
		// No IdleTimeout or ReadTimeout: the wheel cuts idle
		// connections. ReadHeaderTimeout still bounds a slow header.
		ReadHeaderTimeout: 10 * time.Second,
	}
	// ... srv.Shutdown(ctx) elsewhere ends Serve.
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
