// Command kvserver serves a key-value store over TCP, one command a line:
//
//	SET key value   OK
//	GET key         VALUE value, or NOTFOUND
//	DEL key         OK
//	SLOW ms         OK after ms milliseconds of backend work, or ERR timeout
//
// A connection closes after a spell without commands, every command has a
// deadline, changes are saved once they stop coming for a moment (with
// retries), and a ticker logs the store's size.
package main

import (
	"flag"
	"log"
	"os"
	"os/signal"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7070", "address to listen on")
	idle := flag.Duration("idle", time.Minute, "close a connection after this long without a command")
	flag.Parse()

	cfg := config{
		idleTimeout:    *idle,
		requestTimeout: 2 * time.Second,
		quiet:          100 * time.Millisecond,
		saveAttempts:   5,
		saveBackoff:    50 * time.Millisecond,
		statsEvery:     10 * time.Second,
	}
	sink := func(snap map[string]string) error {
		log.Printf("saved %d keys", len(snap))
		return nil
	}
	s := newServer(cfg, sink, func(n int) { log.Printf("%d keys", n) })
	if err := s.listen(*addr); err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on %s", s.addr())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
	s.close()
}
