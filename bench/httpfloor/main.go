// Command httpfloor measures what one core can answer before any log is
// parsed or stored: the ceiling under issue 4's one-line push figure. It
// serves POSTs with a fixed body (wrk's bench/one-line.lua) in one of
// three ways and answers 204:
//
//	nethttp   net/http, the body read to its end
//	raw       a bare HTTP/1.1 loop (request line, headers, Content-Length
//	          body; nothing else), one goroutine per connection
//	raw-sync  raw, and each body appended to a file that is fdatasynced in
//	          groups before the answers go out (a minimal WAL group commit)
//
// Run it as bench/README.md shows (server on core 0, wrk on core 1). It
// is a probe, not a server: it trusts its client.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
)

func main() {
	mode := flag.String("mode", "raw", "nethttp, raw or raw-sync")
	addr := flag.String("listen", "127.0.0.1:3199", "address")
	walPath := flag.String("wal", "httpfloor.wal", "the file raw-sync appends to")
	flag.Parse()
	switch *mode {
	case "nethttp":
		log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := io.Copy(io.Discard, r.Body); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})))
	case "raw", "raw-sync":
		var g *group
		if *mode == "raw-sync" {
			f, err := os.Create(*walPath)
			if err != nil {
				log.Fatal(err)
			}
			g = &group{kick: make(chan struct{}, 1)}
			go g.run(f)
		}
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				log.Fatal(err)
			}
			go serve(c, g)
		}
	default:
		log.Fatalf("unknown mode %q", *mode)
	}
}

var reply = []byte("HTTP/1.1 204 No Content\r\n\r\n")

func serve(c net.Conn, g *group) {
	defer c.Close()
	r := bufio.NewReader(c)
	done := make(chan error, 1)
	var body []byte
	for {
		n, err := readHead(r)
		if err != nil {
			return
		}
		body = append(body[:0], make([]byte, n)...)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		if g != nil {
			g.append(body, done)
			if err := <-done; err != nil {
				log.Fatal(err)
			}
		}
		if _, err := c.Write(reply); err != nil {
			return
		}
	}
}

// readHead reads a request's line and headers and returns its
// Content-Length.
func readHead(r *bufio.Reader) (int, error) {
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(line) <= 2 {
			return n, nil
		}
		if name, value, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(name, []byte("Content-Length")) {
			if n, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil {
				return 0, fmt.Errorf("content-length: %w", err)
			}
		}
	}
}

// group is a group commit: appends queue while the previous group syncs.
type group struct {
	mu      sync.Mutex
	pending []byte
	waiters []chan error
	kick    chan struct{}
}

func (g *group) append(b []byte, done chan error) {
	g.mu.Lock()
	g.pending = append(g.pending, b...)
	g.waiters = append(g.waiters, done)
	g.mu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

func (g *group) run(f *os.File) {
	var buf []byte
	var waiters []chan error
	for range g.kick {
		// A short queue: let appenders about to enqueue join this group
		// (sluice's WAL does the same).
		g.mu.Lock()
		short := len(g.waiters) < 16
		g.mu.Unlock()
		if short {
			runtime.Gosched()
		}
		g.mu.Lock()
		buf, g.pending = g.pending, buf[:0]
		waiters, g.waiters = g.waiters, waiters[:0]
		g.mu.Unlock()
		if len(waiters) == 0 {
			continue
		}
		_, err := f.Write(buf)
		if err == nil {
			err = f.Sync()
		}
		for _, w := range waiters {
			w <- err
		}
	}
}
