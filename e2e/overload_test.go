package e2e

// TestServerOverload: `sluice serve` offered far more than it serves.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestServerOverload starts `sluice serve --max-inflight 4 --head-bytes
// 16777216` and has 64 clients post NDJSON bodies of 256 KiB to 8 MiB
// (750 to 24,000 lines of random text) without pause for a few seconds
// (SLUICE_OVERLOAD_SECONDS, default 4): sixteen times as many requests at
// once as the server serves, each waiting a second for a slot before it is
// refused. The clients then stop starting requests, and those under way
// are answered.
//
// Every answer must be a 2xx accepting every line, or a 429 or 503 with
// Retry-After: never a connection reset, a timeout or another status. The
// server's RSS, sampled from /proc/PID/status every 10 ms (and its VmHWM
// at the end), must stay under 384 MiB, whatever the load offered: what
// it holds live is at most three heads of --head-bytes 16 MiB (one
// filling and one being flushed, --max-head-bytes 32 MiB, and the part
// built from it: 48 MiB), the parse buffers of --max-inflight 4 line
// requests (a 4 MiB chunk, its batch and its encoding: 16 MiB each by the
// server's own estimate, 64 MiB), and the runtime, binary and
// connections (some 30 MiB): about 140 MiB. The
// Go heap may hold as much garbage again before a collection (GOGC=100;
// sluice's soft memory limit is of the same size), 280 MiB, and freed
// pages go back to the OS lazily, hence 384 MiB (measured: 230 to 270
// MiB); 1536 MiB under -race, whose shadow memory multiplies the heap
// (measured: about 600 MiB). A server that buffered the bodies of the
// waiting requests (60 × up to 8 MiB) or queued work for them would go
// past it. GET /ready, probed every 100 ms, must keep answering 200: never
// a refusal, an error or a reset (how long each answer took is logged, not
// asserted: a loaded machine makes any bound a coin toss; the client's
// timeout of a minute only stops a probe that hangs).
//
// The load stops, the server stops with SIGTERM, and `sluice export`
// must give every line of every 2xx request exactly once, and none of a
// request refused before its body was read.
func TestServerOverload(t *testing.T) {
	skipIfOff(t)
	if testing.Short() {
		t.Skip("overload: skipped in -short mode")
	}
	const (
		clients   = 64
		inflight  = 4
		headBytes = 16 << 20
		// Lines of about 350 bytes: bodies of 256 KiB to 8 MiB, some
		// larger than the 4 MiB chunk a request is parsed in.
		minLines, maxLines = 750, 24000
	)
	bound := int64(384 << 20)
	if raceEnabled {
		bound *= 4
	}
	seconds := envNumber(t, "SLUICE_OVERLOAD_SECONDS", 4)
	data := filepath.Join(t.TempDir(), "data")
	// The block cache is pinned: its budget is part of the server's soft
	// memory limit (serve --memory-limit), and by default a sixteenth of
	// the machine's memory (1 GiB here), which would let the GC keep a
	// heap of garbage that size under this load without a query.
	s := mustStartServerOn(t, data, "--max-inflight", fmt.Sprint(inflight), "--head-bytes", fmt.Sprint(headBytes),
		"--max-head-bytes", fmt.Sprint(2*headBytes), "--block-cache-bytes", fmt.Sprint(64<<20))
	rss := sampleRSS(s.pid(), 10*time.Millisecond)
	l := newLedger()
	// The lines' text: slices of 4 MiB of random text, cheaper to cut
	// than to make (the clients share the test's CPUs with the server).
	pool := randomText(nil, rand.New(rand.NewPCG(1, 2)), 4<<20)

	var mu sync.Mutex
	var bad []string
	nbad, resets := 0, 0
	// The clients stop starting requests after the run; those under way
	// get their answer, within a minute.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds)*time.Second+time.Minute)
	defer cancel()
	stop := make(chan struct{})
	time.AfterFunc(time.Duration(seconds)*time.Second, func() { close(stop) })
	client := newLoadClient(clients)
	wait := l.push(ctx, loadSpec{
		url: s.url("/insert/jsonline"), client: client, clients: clients, stop: stop,
		lines: func(rng *rand.Rand) int { return minLines + rng.IntN(maxLines-minLines+1) },
		line: func(dst []byte, rng *rand.Rand, w, r, i int) []byte {
			off := rng.IntN(len(pool) - 280)
			return appendLine(dst, "overload", w%8, r, i, pool[off:off+280])
		},
		answered: func(w, r, n int, a postAnswer) {
			switch {
			case a.ok() && a.accepted == n:
				return
			case a.err == nil && (a.code == http.StatusServiceUnavailable || a.code == http.StatusTooManyRequests) && a.retryAfter != "":
				return
			case errors.Is(a.err, syscall.EPIPE) || errors.Is(a.err, syscall.ECONNRESET):
				// A refusal lost to the reset of the connection: the
				// server drains refused bodies so that this cannot happen.
				mu.Lock()
				resets++
				mu.Unlock()
				return
			}
			mu.Lock()
			defer mu.Unlock()
			nbad++
			if len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("request %d of %d lines: %d (Retry-After %q) %.200q %v", r, n, a.code, a.retryAfter, a.body, a.err))
			}
		},
	}, uint64(time.Now().UnixNano()))
	// Probes: GET /ready must keep answering 200 under the load.
	var probes, failed int
	var probeFails []string
	var slowest time.Duration
	probeClient := http.Client{Timeout: time.Minute}
	start := time.Now()
	for !chanClosed(stop) {
		probes++
		t0 := time.Now()
		resp, err := probeClient.Get(s.url("/ready"))
		slowest = max(slowest, time.Since(t0))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s", resp.Status)
			}
		}
		if err != nil {
			if failed++; failed <= 5 {
				probeFails = append(probeFails, err.Error())
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	wait()
	took := time.Since(start)
	client.CloseIdleConnections()
	hwm, err := procStatusBytes(s.pid(), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	peak := rss.finish()
	served503 := int(sum(s.metrics(t), "sluice_ingest_requests_total", `code="503"`))
	s.stop(t)

	sum := l.summary()
	counts := l.counts()
	t.Logf("%d clients, --max-inflight %d, %v: %d requests (%d lines), %d answered 2xx (%d lines, %.0f lines/s); answers: %s",
		clients, inflight, took.Round(time.Millisecond), sum.requests, sum.lines, sum.acked, sum.ackedLines,
		float64(sum.ackedLines)/took.Seconds(), formatCounts(counts))
	t.Logf("server memory: peak VmRSS sampled %s, VmHWM %s; bound %s", fmtMiB(peak), fmtMiB(hwm), fmtMiB(bound))
	t.Logf("GET /ready under the load: %d probes, %d failed, the slowest answered in %v", probes, failed, slowest.Round(time.Millisecond))
	if failed > 0 {
		t.Errorf("GET /ready failed %d times of %d under the load; the first: %s", failed, probes, strings.Join(probeFails, "; "))
	}
	if nbad > 0 {
		t.Errorf("%d answers were neither a 2xx accepting every line nor a 429 or 503 with Retry-After; the first:\n  %s", nbad, strings.Join(bad, "\n  "))
	}
	if sum.acked == 0 {
		t.Errorf("no request was answered 2xx")
	}
	if counts["503 in flight"]+counts["503 in-flight memory"] == 0 {
		t.Errorf("no request was refused for the in-flight limit: the test did not overload the server")
	}
	if max(peak, hwm) > bound {
		t.Errorf("the server's RSS reached %s, over the bound of %s", fmtMiB(max(peak, hwm)), fmtMiB(bound))
	}
	chk := l.checkDir(t, "after the overload", data)
	t.Logf("%d lines stored, %d of them from requests not acknowledged", chk.exported, chk.unackedPresent)
	if resets > 0 {
		t.Errorf("%d of the %d 503s the server sent reached the clients as a broken pipe or a connection reset", resets, served503)
	}
}

// TestServerOverloadRefusesLargeBody checks how a refusal reaches a client
// that is still sending a large body. `sluice serve --max-inflight 1` has
// its only slot held by a request whose body trickles in; then a 32 MiB
// NDJSON body is posted, which waits a second and is refused with 503
// before the server reads it. The client must get that 503 with
// Retry-After: Go's http.Client, which reads the answer while it sends;
// the same with its first read delayed by 2 s, a client on a busy machine
// (the server drains a refused body so that its answer is not lost); and a client that writes the whole
// request and only then reads, as simple clients do (it gets a broken pipe
// from its write, and must still find the 503 to read).
func TestServerOverloadRefusesLargeBody(t *testing.T) {
	skipIfOff(t)
	if testing.Short() {
		t.Skip("overload: skipped in -short mode")
	}
	s := mustStartServerOn(t, filepath.Join(t.TempDir(), "data"), "--max-inflight", "1")
	var body []byte
	for i := 0; len(body) < 32<<20; i++ {
		body = appendLine(body, "refused", 0, 1, i, strings.Repeat("x", 200))
	}

	// Hold the slot: a body that comes a line at a time until released.
	pr, pw := io.Pipe()
	held := make(chan postAnswer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.url("/insert/jsonline"), pr)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			held <- postAnswer{err: err}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		held <- postAnswer{code: resp.StatusCode}
	}()
	release := sync.OnceFunc(func() { pw.Close() })
	t.Cleanup(release)
	if _, err := pw.Write(appendLine(nil, "refused", 0, 0, 0, "holding the slot")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for sum(s.metrics(t), "sluice_ingest_requests_in_flight") < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the slow request is not in flight after 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}

	t.Run("client=net/http", func(t *testing.T) {
		c := newLoadClient(1)
		defer c.CloseIdleConnections()
		a := postNDJSON(context.Background(), c, s.url("/insert/jsonline"), body)
		t.Logf("answer: %d (Retry-After %q) %q %v", a.code, a.retryAfter, a.body, a.err)
		if a.err != nil || a.code != http.StatusServiceUnavailable || a.retryAfter == "" {
			t.Errorf("a %d MiB body refused for the in-flight limit: got %d (Retry-After %q) %v, want 503 with Retry-After",
				len(body)>>20, a.code, a.retryAfter, a.err)
		}
	})
	t.Run("client=net/http-slow-reader", func(t *testing.T) {
		// Its first read waits 2 s: a client on a busy machine.
		c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &slowReadConn{Conn: conn, delay: 2 * time.Second}, nil
		}}}
		a := postNDJSON(context.Background(), c, s.url("/insert/jsonline"), body)
		t.Logf("answer: %d (Retry-After %q) %q %v", a.code, a.retryAfter, a.body, a.err)
		if a.err != nil || a.code != http.StatusServiceUnavailable || a.retryAfter == "" {
			t.Errorf("a %d MiB body refused for the in-flight limit: got %d (Retry-After %q) %v, want 503 with Retry-After",
				len(body)>>20, a.code, a.retryAfter, a.err)
		}
	})
	t.Run("client=send-then-read", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		head := fmt.Sprintf("POST /insert/jsonline HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", s.addr, len(body))
		_, werr := conn.Write(append([]byte(head), body...))
		resp, rerr := http.ReadResponse(bufio.NewReader(conn), nil)
		if rerr != nil {
			t.Errorf("a %d MiB body refused for the in-flight limit: the client writing it got %v, and reading the answer %v: the 503 was lost",
				len(body)>>20, werr, rerr)
			return
		}
		resp.Body.Close()
		t.Logf("write: %v; answer: %s (Retry-After %q)", werr, resp.Status, resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("got %s (Retry-After %q), want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
		}
	})

	release()
	if a := <-held; a.err != nil || a.code != http.StatusOK {
		t.Errorf("the request that held the slot: %d %v, want 200", a.code, a.err)
	}
	s.stop(t)
}

// slowReadConn delays its first Read.
type slowReadConn struct {
	net.Conn
	delay time.Duration
	once  sync.Once
}

func (c *slowReadConn) Read(p []byte) (int, error) {
	c.once.Do(func() { time.Sleep(c.delay) })
	return c.Conn.Read(p)
}
