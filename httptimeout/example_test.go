package httptimeout_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/go-timingwheel/timingwheel"
	"github.com/go-timingwheel/timingwheel/httptimeout"
)

func ExampleNew() {
	st, err := timingwheel.New()
	if err != nil {
		log.Fatal(err)
	}
	defer st.Stop() // deferred first: runs after the server has closed

	mux := http.NewServeMux()
	mux.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()        // 50ms after the request came in
		fmt.Fprintln(w, "too late") // goes nowhere
	})
	srv := httptest.NewServer(httptimeout.New(st, mux, 50*time.Millisecond, "too slow\n"))
	defer srv.Close()

	for _, path := range []string{"/fast", "/slow"} {
		res, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			log.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %d %s", path, res.StatusCode, body)
	}
	// Output:
	// /fast: 200 hello
	// /slow: 503 too slow
}
