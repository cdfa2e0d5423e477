package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

var responseCases = []struct {
	name   string
	in     string
	status int
	keep   bool
	err    string // substring of the error; "" for none
}{
	{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello", 200, true, ""},
	{"no content", "HTTP/1.1 204 No Content\r\n\r\n", 204, true, ""},
	{"no reason", "HTTP/1.1 204\r\n\r\n", 204, true, ""},
	{"bare LF", "HTTP/1.1 429 Too Many Requests\nContent-Length: 2\n\nno", 429, true, ""},
	{"chunked", "HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: y\r\n\r\n", 500, true, ""},
	{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 200, false, ""},
	{"connection close in a list", "HTTP/1.1 200 OK\r\nconnection: Upgrade, Close\r\ncontent-length: 0\r\n\r\n", 200, false, ""},
	{"http/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 200, false, ""},
	{"http/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", 200, true, ""},
	{"body to the end", "HTTP/1.1 200 OK\r\n\r\nall of it", 200, false, ""},
	{"continue first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx", 201, true, ""},
	{"304 with a length", "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n", 304, true, ""},
	{"nothing", "", 0, false, "connection closed before an answer"},
	{"malformed status line", "HELLO\r\n\r\n", 0, false, `malformed status line "HELLO"`},
	{"letters in the status", "HTTP/1.1 2x4 No\r\n\r\n", 0, false, "malformed status code"},
	{"bad content-length", "HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", 0, false, `bad Content-Length "-3"`},
	{"two content-lengths", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 0, false, `bad Content-Length "4"`},
	{"malformed header", "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", 0, false, `malformed header line "no colon here"`},
	{"unknown transfer-encoding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, false, `unsupported Transfer-Encoding "gzip"`},
	{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, false, `bad chunk size "zz"`},
	{"chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", 0, false, "not CRLF"},
	{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 0, false, "body of 10 bytes: unexpected EOF"},
	{"cut in the headers", "HTTP/1.1 200 OK\r\nContent-Len", 0, false, "header of a 200 answer: unexpected EOF"},
	{"cut in a chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nabc", 0, false, "chunk of 9 bytes: unexpected EOF"},
	{"header line too long", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", maxHeaderLine) + "\r\n\r\n", 0, false, "line longer than"},
}

// next follows every answer in readResponse's tests: a parser that
// reads an answer exactly leaves it unread.
const next = "HTTP/1.1 204 No Content\r\n\r\n"

func TestReadResponse(t *testing.T) {
	for _, tc := range responseCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, split := range []bool{false, true} {
				var rd io.Reader = strings.NewReader(tc.in + next)
				if tc.err != "" || !tc.keep {
					rd = strings.NewReader(tc.in) // the answer ends the input
				}
				if split {
					rd = iotest.OneByteReader(rd)
				}
				r := bufio.NewReaderSize(rd, maxHeaderLine)
				status, keep, err := readResponse(r)
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("split %v: error %v, want one containing %q", split, err, tc.err)
					}
					continue
				}
				if err != nil || status != tc.status || keep != tc.keep {
					t.Fatalf("split %v: status %d, keep %v, error %v; want %d, %v", split, status, keep, err, tc.status, tc.keep)
				}
				if !keep {
					continue
				}
				if status, _, err := readResponse(r); err != nil || status != 204 {
					t.Fatalf("split %v: the next answer reads as %d, %v: the body was not read exactly", split, status, err)
				}
			}
		})
	}
}

// Reading an answer whole or a byte at a time gives the same result.
func FuzzReadResponse(f *testing.F) {
	for _, tc := range responseCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s1, k1, e1 := readResponse(bufio.NewReaderSize(strings.NewReader(string(in)), maxHeaderLine))
		s2, k2, e2 := readResponse(bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(string(in))), maxHeaderLine))
		if s1 != s2 || k1 != k2 || (e1 == nil) != (e2 == nil) {
			t.Fatalf("whole: %d %v %v; a byte at a time: %d %v %v", s1, k1, e1, s2, k2, e2)
		}
	})
}

// The raw client against net/http's server: statuses, chunked and
// Content-Length bodies and connections the server closes are each
// counted right, and every request arrives whole with its headers.
func TestRawClientAgainstNetHTTP(t *testing.T) {
	var mu sync.Mutex
	n, conns := 0, 0
	var bad []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		mu.Lock()
		n++
		k := n
		if err != nil || r.URL.Path != "/insert/jsonline" || r.Header.Get("Content-Type") != "application/x-ndjson" ||
			r.Header.Get("X-Scope-OrgID") != "team-a" || strings.Count(string(body), "\n") != 3 {
			bad = append(bad, fmt.Sprintf("%s %s %v %q: %v", r.Method, r.URL.Path, r.Header, body, err))
		}
		mu.Unlock()
		switch k % 5 {
		case 0: // Content-Length body
			w.Header().Set("Content-Length", "11")
			_, _ = io.WriteString(w, "accepted 3\n")
		case 1: // chunked body: flushed before the handler ends
			_, _ = io.WriteString(w, "accepted ")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, strings.Repeat("3", 5000))
		case 2:
			w.WriteHeader(http.StatusNoContent)
		case 3: // the server closes the connection after answering
			w.Header().Set("Connection", "close")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case 4:
			http.Error(w, "broken", http.StatusInternalServerError)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()
	res, err := Run(context.Background(), Config{Target: srv.URL, Protocol: "jsonline", Client: "raw", Batch: 3,
		Conns: 3, Requests: 100, Tenant: "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 100 || res.Lines != 60*3 || res.Errors["429"] != 20 || res.Errors["500"] != 20 || len(res.Errors) != 2 {
		t.Errorf("%d requests, %d lines, errors %v; want 100, 180, 429=20 500=20", res.Requests, res.Lines, res.Errors)
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 100 || len(bad) > 0 {
		t.Errorf("server saw %d requests, want 100; bad ones: %v", n, bad)
	}
	// Every 429 closed its connection: the client dialled again after
	// each, and kept the others alive.
	if conns < 20 || conns > 20+3 {
		t.Errorf("%d connections for 20 closed by the server over 3 kept alive", conns)
	}
}

// A server that closes a kept-alive connection without saying so: the
// request that finds it closed is sent again on a new one, once.
func TestRawClientIdleClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan int, 1)
	go func() {
		k := 0
		for {
			c, err := ln.Accept()
			if err != nil {
				served <- k
				return
			}
			r := bufio.NewReader(c)
			req, err := http.ReadRequest(r)
			if err == nil {
				_, _ = io.Copy(io.Discard, req.Body)
				_, _ = io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
				k++
			}
			c.Close()
		}
	}()
	res, err := Run(context.Background(), Config{Target: "http://" + ln.Addr().String(), Protocol: "lines", Client: "raw", Requests: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 10 || res.Lines != 10 || len(res.Errors) != 0 {
		t.Errorf("%d requests, %d lines, errors %v; want 10, 10, none", res.Requests, res.Lines, res.Errors)
	}
	ln.Close()
	if k := <-served; k != 10 {
		t.Errorf("server answered %d requests, want 10", k)
	}
}

// Errors name what failed and where.
func TestRawClientErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = http.ReadRequest(bufio.NewReader(c))
			_, _ = io.WriteString(c, "SSH-2.0-OpenSSH\r\n")
			c.Close()
		}
	}()
	c, err := newRawConn("http://"+addr, "/insert/lines", "text/plain", "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.send(context.Background(), []byte("x\n"))
	if want := "loadgen: read answer from " + addr + `: malformed status line "SSH-2.0-OpenSSH"`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	ln.Close()
	c, _ = newRawConn("http://"+addr, "", "", "")
	if _, err = c.send(context.Background(), nil); err == nil || !strings.HasPrefix(err.Error(), "loadgen: dial "+addr+":") {
		t.Errorf("error %v, want one saying the dial to %s failed", err, addr)
	}

	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Target: "https://127.0.0.1:1", Protocol: "jsonline", Client: "raw", Requests: 1}, "plain http:// only"},
		{Config{Target: "http://127.0.0.1:1", Protocol: "jsonline", Client: "curl", Requests: 1}, `unknown client "curl"`},
		{Config{Target: "http://127.0.0.1:1", Protocol: "jsonline", Client: "raw", Requests: 1, Transport: http.DefaultTransport}, "Transport is for the nethttp client"},
		{Config{Target: "http://", Protocol: "jsonline", Client: "raw", Requests: 1}, "has no host"},
	} {
		if _, err := Run(context.Background(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%+v): error %v, want one containing %q", tc.cfg, err, tc.want)
		}
	}
}

// The end of the run interrupts a request the server never answers.
func TestRawClientCancelled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := newRawConn("http://"+ln.Addr().String(), "/", "", "")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.send(ctx, []byte("x"))
		done <- err
	}()
	sc := <-accepted
	defer sc.Close()
	// The request has arrived: the client waits for its answer.
	if _, err := sc.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("send after cancel: %v, want the deadline the cancel set", err)
	}
	c.close()
}
