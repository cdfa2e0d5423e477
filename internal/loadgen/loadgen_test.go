package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
)

// fakeClock is time that moves only when slept or when the fake server
// answers: a run with it is exact.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) SleepUntil(_ context.Context, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// delayServer is a RoundTripper that answers 204 after delay(n) of fake
// time, n counting requests from 1.
type delayServer struct {
	clock *fakeClock
	delay func(n int) time.Duration
	n     int
}

func (s *delayServer) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.n++
	s.clock.advance(s.delay(s.n))
	return &http.Response{StatusCode: 204, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
}

// checkQuantiles checks r's percentiles against the exact latencies
// want, within the histogram's precision (3 significant digits).
func checkQuantiles(t *testing.T, r *Result, want []time.Duration) {
	t.Helper()
	if got := r.Latency.TotalCount(); got != int64(len(want)) {
		t.Fatalf("%d latencies recorded, want %d", got, len(want))
	}
	slices.Sort(want)
	for _, q := range []float64{10, 50, 90, 99, 99.9, 100} {
		i := int(math.Ceil(q/100*float64(len(want)))) - 1
		exp := want[max(i, 0)].Microseconds()
		got := r.Latency.ValueAtQuantile(q)
		if d := got - exp; d < 0 || float64(d) > float64(exp)/1000+1 {
			t.Errorf("p%g = %d µs, want %d µs within 0.1%%", q, got, exp)
		}
	}
}

func TestFixedDelayFlatOut(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	srv := &delayServer{clock: clock, delay: func(n int) time.Duration {
		return time.Duration(1+n%7) * 1500 * time.Microsecond // 1.5 to 10.5 ms
	}}
	res, err := Run(context.Background(), Config{Target: "http://bench.invalid", Protocol: "jsonline", Requests: 700,
		Transport: srv, clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	var want []time.Duration
	for n := 1; n <= 700; n++ {
		want = append(want, srv.delay(n))
	}
	checkQuantiles(t, res, want)
	if res.Requests != 700 || res.Lines != 700 || len(res.Errors) != 0 {
		t.Errorf("result %+v", res)
	}
}

// At a fixed rate, a stalled server delays the requests meant to go out
// during the stall: their latencies count from when they were meant to
// be sent.
func TestFixedRateStallCorrected(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	const stallAt, stall, service = 50, time.Second, time.Millisecond
	srv := &delayServer{clock: clock, delay: func(n int) time.Duration {
		if n == stallAt {
			return stall
		}
		return service
	}}
	const n = 300
	res, err := Run(context.Background(), Config{Target: "http://bench.invalid", Protocol: "loki-json", Requests: n,
		Rate: 100, Transport: srv, clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	// The schedule: request k is meant for k·10 ms; it goes out then or
	// when the one before it is answered, whichever is later.
	var want []time.Duration
	var free time.Duration
	for k := range n {
		intended := time.Duration(k) * 10 * time.Millisecond
		sent := max(intended, free)
		free = sent + srv.delay(k+1)
		want = append(want, free-intended)
	}
	checkQuantiles(t, res, want)
	// Uncorrected, one request of 300 would show the stall and p85 would
	// be 1 ms; corrected, the 56 meant for its first half wait at least
	// half of it.
	if p85 := time.Duration(res.Latency.ValueAtQuantile(85)) * time.Microsecond; p85 < stall/2 {
		t.Errorf("p85 = %v: the requests behind the stall do not count their wait", p85)
	}
}

// Each protocol's body, sent to a real HTTP server, is what that
// protocol's endpoint expects.
func TestProtocolsOverHTTP(t *testing.T) {
	var mu sync.Mutex
	lines := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := 0
		var err error
		switch r.URL.Path {
		case "/insert/jsonline", "/insert/lines":
			for l := range strings.SplitSeq(strings.TrimSpace(string(body)), "\n") {
				if r.URL.Path == "/insert/jsonline" && !json.Valid([]byte(l)) {
					http.Error(w, "bad json: "+l, 400)
					return
				}
				n++
			}
		case "/_bulk":
			n = strings.Count(string(body), "\n") / 2
		case "/loki/api/v1/push":
			if r.Header.Get("Content-Type") == "application/x-protobuf" {
				body, err = snappy.Decode(nil, body)
				n = strings.Count(string(body), "request served") // lines are generated ones
				break
			}
			var doc struct {
				Streams []struct{ Values [][2]string }
			}
			err = json.Unmarshal(body, &doc)
			if err == nil {
				n = len(doc.Streams[0].Values)
			}
		case "/v1/logs":
			var doc struct {
				ResourceLogs []struct{ ScopeLogs []struct{ LogRecords []any } }
			}
			err = json.Unmarshal(body, &doc)
			if err == nil {
				n = len(doc.ResourceLogs[0].ScopeLogs[0].LogRecords)
			}
		}
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		lines[r.URL.Path+" "+r.Header.Get("Content-Type")] += n
		mu.Unlock()
		w.WriteHeader(204)
	}))
	defer srv.Close()
	corpus := [][]byte{[]byte(`request served "ok"`), []byte(`{"msg":"request served","n":1}`)}
	for _, p := range []string{"jsonline", "lines", "loki-json", "loki-protobuf", "elastic", "otlp"} {
		res, err := Run(context.Background(), Config{Target: srv.URL, Protocol: p, Lines: corpus, Batch: 10, Conns: 4, Requests: 40})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if res.Requests != 40 || res.Lines != 400 || len(res.Errors) != 0 {
			t.Errorf("%s: %d requests, %d lines, errors %v", p, res.Requests, res.Lines, res.Errors)
		}
	}
	total := 0
	for k, n := range lines {
		if n != 400 {
			t.Errorf("%s: server saw %d lines, want 400", k, n)
		}
		total += n
	}
	if total != 6*400 {
		t.Errorf("server saw %d lines in all: %v", total, lines)
	}
}

// A real server with a fixed delay: no latency is below it, and errors
// are counted by status.
func TestRealServerDelayAndErrors(t *testing.T) {
	const delay = 20 * time.Millisecond
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(delay) // the server under test is slow: this is its delay, not synchronisation
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		if k%4 == 0 {
			http.Error(w, "slow down", 429)
			return
		}
		w.WriteHeader(204)
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{Target: srv.URL, Protocol: "otlp", Conns: 2, Requests: 40})
	if err != nil {
		t.Fatal(err)
	}
	if min := time.Duration(res.Latency.Min()) * time.Microsecond; min < delay*999/1000 {
		t.Errorf("min latency %v under the server's delay %v", min, delay)
	}
	if res.Errors["429"] != 10 || res.Requests != 40 || res.Lines != 30 {
		t.Errorf("requests %d, lines %d, errors %v; want 40, 30 and 10 × 429", res.Requests, res.Lines, res.Errors)
	}
}

func TestSyslogTCPAndUDP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		sc := bufio.NewScanner(c)
		k := 0
		for sc.Scan() {
			if !strings.HasPrefix(sc.Text(), "<14>1 ") {
				break
			}
			k++
		}
		got <- k
	}()
	res, err := Run(context.Background(), Config{Target: ln.Addr().String(), Protocol: "syslog-tcp", Batch: 5, Requests: 20})
	if err != nil {
		t.Fatal(err)
	}
	if k := <-got; k != 100 || res.Lines != 100 {
		t.Errorf("syslog-tcp: server read %d messages, result %d lines; want 100", k, res.Lines)
	}

	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	res, err = Run(context.Background(), Config{Target: pc.LocalAddr().String(), Protocol: "syslog-udp", Batch: 2, Requests: 3})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for range 6 {
		n, _, err := pc.ReadFrom(buf)
		if err != nil || !strings.HasPrefix(string(buf[:n]), "<14>1 ") || strings.Contains(string(buf[:n]), "\n") {
			t.Fatalf("datagram %q: %v", buf[:n], err)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Target: "http://x", Protocol: "carrier-pigeon", Requests: 1},
		{Target: "http://x", Protocol: "jsonline"},
		{Target: "http://x", Protocol: "jsonline", Requests: 1, Rate: -1},
	} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("Run(%+v) accepted", cfg)
		}
	}
}
