// Package loadgen generates ingest load for `sluice bench`: it sends a
// corpus (or generated lines) in batches over N connections, in any of
// sluice's ingest protocols, flat out or at a fixed rate, and records
// each request's latency in an HDR histogram.
//
// At a fixed rate a request's latency is measured from the time it was
// meant to be sent, not from when it went out, as wrk2 does: a server
// that stalls delays the requests queued behind the stall, and their
// latencies include that wait (coordinated omission corrected).
//
// It knows no sluice internals: it speaks the protocols as a client.
package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Protocols are the protocols Run speaks.
var Protocols = []string{"jsonline", "lines", "loki-json", "loki-protobuf", "elastic", "otlp", "syslog-tcp", "syslog-udp"}

// Config is one run.
type Config struct {
	// Target is the server's base URL (http://host:port) for the HTTP
	// protocols, host:port for syslog.
	Target   string
	Protocol string
	// Lines are sent in turn, over and over; empty: generated lines.
	Lines [][]byte
	// Batch is the lines per request (per syslog write); default 1.
	Batch int
	// Conns is the number of connections, each sending one request at a
	// time; default 1.
	Conns int
	// Rate is requests per second over all connections; 0: flat out.
	Rate float64
	// The run ends after Duration, or Requests requests, whichever
	// comes first (at least one must be set).
	Duration time.Duration
	Requests int
	// Tenant, if set, is sent as X-Scope-OrgID.
	Tenant string
	// Client is the HTTP client, one of Clients: "raw" (the default for
	// an http:// target) or "nethttp" (the default for https://). The
	// syslog protocols ignore it.
	Client string
	// Transport, if set, carries the HTTP requests of the nethttp client
	// (default: kept-alive connections, Conns of them).
	Transport http.RoundTripper

	clock clock // tests set a fake one
}

// Result is what a run measured.
type Result struct {
	Requests int64
	Lines    int64
	Bytes    int64
	// Errors counts the failed requests by status: an HTTP status, or
	// "error" for a transport error.
	Errors  map[string]int64
	Elapsed time.Duration
	// Latency holds each request's latency in microseconds.
	Latency *hdrhistogram.Histogram
}

// clock is time, replaced in tests.
type clock interface {
	Now() time.Time
	SleepUntil(ctx context.Context, t time.Time)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) SleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

// Largest latency recorded: an hour, in microseconds, at 3 significant
// digits (a value is recorded within 0.1%).
const (
	maxLatencyMicros = int64(time.Hour / time.Microsecond)
	sigFigs          = 3
)

// Run runs cfg until its duration or request count is reached or ctx
// ends, and returns what it measured.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Batch <= 0 {
		cfg.Batch = 1
	}
	if cfg.Conns <= 0 {
		cfg.Conns = 1
	}
	if cfg.Duration <= 0 && cfg.Requests <= 0 {
		return nil, errors.New("loadgen: neither a duration nor a request count is set")
	}
	if cfg.Rate < 0 {
		return nil, fmt.Errorf("loadgen: rate %g is negative", cfg.Rate)
	}
	if cfg.clock == nil {
		cfg.clock = realClock{}
	}
	if len(cfg.Lines) == 0 {
		cfg.Lines = Generate(1000)
	}
	enc, err := newEncoder(cfg.Protocol)
	if err != nil {
		return nil, err
	}
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	var newConn func() (conn, error)
	switch cfg.Protocol {
	case "syslog-tcp", "syslog-udp":
		network := strings.TrimPrefix(cfg.Protocol, "syslog-")
		newConn = func() (conn, error) {
			c, err := net.Dial(network, cfg.Target)
			if err != nil {
				return nil, fmt.Errorf("loadgen: dial %s %s: %w", network, cfg.Target, err)
			}
			return &streamConn{c: c}, nil
		}
	default:
		client := cfg.Client
		if client == "" {
			client = "raw"
			if cfg.Transport != nil || !strings.HasPrefix(cfg.Target, "http://") {
				client = "nethttp"
			}
		}
		if client == "raw" {
			if cfg.Transport != nil {
				return nil, errors.New("loadgen: a Transport is for the nethttp client, not raw")
			}
			if _, err := newRawConn(cfg.Target, enc.path, enc.ctype, cfg.Tenant); err != nil {
				return nil, err
			}
			newConn = func() (conn, error) {
				return newRawConn(cfg.Target, enc.path, enc.ctype, cfg.Tenant)
			}
			break
		}
		if client != "nethttp" {
			return nil, fmt.Errorf("loadgen: unknown client %q (one of %v)", client, Clients)
		}
		tr := cfg.Transport
		if tr == nil {
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.MaxIdleConnsPerHost = cfg.Conns
			t.MaxConnsPerHost = cfg.Conns
			t.DisableCompression = true
			tr = t
		}
		hc := &http.Client{Transport: tr}
		u := strings.TrimRight(cfg.Target, "/") + enc.path
		newConn = func() (conn, error) {
			return &httpConn{client: hc, url: u, ctype: enc.ctype, tenant: cfg.Tenant}, nil
		}
	}

	res := &Result{Errors: map[string]int64{}, Latency: hdrhistogram.New(1, maxLatencyMicros, sigFigs)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var next atomic.Int64 // requests started, for the Requests bound
	var firstErr error
	start := cfg.clock.Now()
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(cfg.Conns) / cfg.Rate)
	}
	for j := range cfg.Conns {
		c, err := newConn()
		if err != nil {
			return nil, err
		}
		wg.Go(func() {
			defer c.close()
			hist := hdrhistogram.New(1, maxLatencyMicros, sigFigs)
			errs := map[string]int64{}
			var reqs, lines, bytes int64
			var body []byte
			batch := make([][]byte, 0, cfg.Batch)
			pos := j * cfg.Batch % len(cfg.Lines)
			// Connection j's k-th request is meant for start + (k +
			// j/Conns) * interval.
			for k := 0; ; k++ {
				if ctx.Err() != nil {
					break
				}
				if cfg.Requests > 0 && next.Add(1) > int64(cfg.Requests) {
					break
				}
				batch = batch[:0]
				for range cfg.Batch {
					batch = append(batch, cfg.Lines[pos])
					pos = (pos + 1) % len(cfg.Lines)
				}
				intended := cfg.clock.Now()
				if interval > 0 {
					intended = start.Add(time.Duration(k)*interval + time.Duration(j)*interval/time.Duration(cfg.Conns))
					cfg.clock.SleepUntil(ctx, intended)
					if ctx.Err() != nil {
						break
					}
				}
				body = enc.encode(body[:0], batch, cfg.clock.Now())
				status, err := c.send(ctx, body)
				if ctx.Err() != nil && err != nil {
					break // cut off by the end of the run: not counted
				}
				lat := cfg.clock.Now().Sub(intended)
				_ = hist.RecordValue(min(max(lat.Microseconds(), 1), maxLatencyMicros))
				reqs++
				switch {
				case err != nil:
					errs["error"]++
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				case status/100 != 2:
					errs[fmt.Sprint(status)]++
				default:
					lines += int64(len(batch))
					bytes += int64(len(body))
				}
			}
			mu.Lock()
			defer mu.Unlock()
			res.Latency.Merge(hist)
			res.Requests += reqs
			res.Lines += lines
			res.Bytes += bytes
			for k, v := range errs {
				res.Errors[k] += v
			}
		})
	}
	wg.Wait()
	res.Elapsed = cfg.clock.Now().Sub(start)
	if res.Requests == 0 && firstErr != nil {
		return res, firstErr
	}
	return res, nil
}

// Report writes r as text.
func (r *Result) Report(w io.Writer) {
	secs := r.Elapsed.Seconds()
	fmt.Fprintf(w, "requests: %d in %.2f s, %.0f requests/s\n", r.Requests, secs, float64(r.Requests)/secs)
	fmt.Fprintf(w, "lines stored: %d, %.0f lines/s, %.1f MB/s sent\n", r.Lines, float64(r.Lines)/secs, float64(r.Bytes)/secs/1e6)
	if len(r.Errors) == 0 {
		fmt.Fprintln(w, "errors: none")
	} else {
		keys := make([]string, 0, len(r.Errors))
		for k := range r.Errors {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprint(w, "errors:")
		for _, k := range keys {
			fmt.Fprintf(w, " %s=%d", k, r.Errors[k])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "latency (from the intended send time):")
	for _, q := range []float64{50, 90, 99, 99.9, 99.99, 100} {
		fmt.Fprintf(w, "  p%-6g %s\n", q, time.Duration(r.Latency.ValueAtQuantile(q))*time.Microsecond)
	}
}

// conn sends one body at a time.
type conn interface {
	send(ctx context.Context, body []byte) (status int, err error)
	close()
}

type httpConn struct {
	client *http.Client
	url    string
	ctype  string
	tenant string
	rd     bytes.Reader
}

func (c *httpConn) send(ctx context.Context, body []byte) (int, error) {
	c.rd.Reset(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, &c.rd)
	if err != nil {
		return 0, err
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", c.ctype)
	if c.tenant != "" {
		req.Header.Set("X-Scope-OrgID", c.tenant)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func (c *httpConn) close() {}

// streamConn writes syslog messages: over TCP a write is the latency
// (syslog has no acknowledgement), over UDP each message a datagram.
type streamConn struct {
	c net.Conn
}

func (c *streamConn) send(ctx context.Context, body []byte) (int, error) {
	if _, ok := c.c.(*net.UDPConn); ok {
		for len(body) > 0 {
			i := bytes.IndexByte(body, '\n')
			if i < 0 {
				i = len(body) - 1
			}
			if _, err := c.c.Write(body[:i]); err != nil {
				return 0, err
			}
			body = body[i+1:]
		}
		return 200, nil
	}
	if _, err := c.c.Write(body); err != nil {
		return 0, err
	}
	return 200, nil
}

func (c *streamConn) close() { c.c.Close() }
