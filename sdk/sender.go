package sdk

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// sender takes sealed batches off the queue, encodes and compresses each
// into buffers of its own, and posts it until it is taken or given up.
type sender struct {
	c     *Client
	raw   []byte
	out   []byte
	order []int32
	sbuf  []byte
	gz    *gzip.Writer
	gzbuf bytes.Buffer
	zs    *zstd.Encoder
	body  bytes.Reader
	timer *time.Timer
	// Of the last request taken: the records the server refused in its
	// answer, and why.
	rejected  int
	rejectMsg string
	spooled   bool // the last batch delivered went to the spool
}

func newSender(c *Client) *sender {
	s := &sender{c: c}
	switch c.cfg.Compression {
	case CompressionGzip:
		s.gz, _ = gzip.NewWriterLevel(&s.gzbuf, gzip.DefaultCompression)
	case CompressionZstd:
		// Errors only for bad options.
		s.zs, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	}
	s.timer = time.NewTimer(time.Hour)
	s.timer.Stop()
	return s
}

func (s *sender) run() {
	c := s.c
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.stopping {
			c.notEmpty.Wait()
		}
		if len(c.queue) == 0 {
			c.mu.Unlock()
			if s.zs != nil {
				s.zs.Close()
			}
			return
		}
		b := c.queue[0]
		copy(c.queue, c.queue[1:])
		c.queue = c.queue[:len(c.queue)-1]
		c.inflight++
		c.notFull.Broadcast()
		streams, u := c.streamList, c.ndjsonURL
		c.mu.Unlock()

		s.spooled = false
		sent, retries, requests, err := s.deliver(b, streams, u)
		rejected := 0
		if sent && s.rejected > 0 {
			rejected = min(s.rejected, b.n)
			err = fmt.Errorf("sdk: the server refused %d of %d records: %s", rejected, b.n, s.rejectMsg)
		}

		c.mu.Lock()
		c.inflight--
		c.stats.Buffered -= b.n
		c.stats.Retries += uint64(retries)
		c.stats.Requests += uint64(requests)
		switch {
		case s.spooled:
			c.stats.Spooled += uint64(b.n)
		case sent:
			c.stats.Sent += uint64(b.n - rejected)
			c.stats.Failed += uint64(rejected)
		case c.ctx.Err() != nil:
			c.stats.Dropped += uint64(b.n)
		default:
			c.stats.Failed += uint64(b.n)
		}
		c.recycle(b)
		c.idle.Broadcast()
		c.mu.Unlock()
		if err != nil {
			c.report(err)
		}
	}
}

// body returns b encoded and compressed, and its Content-Type and
// Content-Encoding.
func (s *sender) encode(b *batch, streams []stream) (body []byte, ctype, cenc string) {
	c := s.c
	if c.cfg.Protocol == LokiProtobuf {
		s.raw, s.order, s.sbuf = appendPushRequest(s.raw[:0], b, streams, s.order, s.sbuf)
		n := snappy.MaxEncodedLen(len(s.raw))
		if cap(s.out) < n {
			s.out = make([]byte, n)
		}
		return snappy.Encode(s.out[:n], s.raw), "application/x-protobuf", ""
	}
	switch c.cfg.Compression {
	case CompressionGzip:
		s.gzbuf.Reset()
		s.gz.Reset(&s.gzbuf)
		_, _ = s.gz.Write(b.data) // a bytes.Buffer does not fail
		_ = s.gz.Close()
		return s.gzbuf.Bytes(), "application/x-ndjson", "gzip"
	case CompressionZstd:
		s.out = s.zs.EncodeAll(b.data, s.out[:0])
		return s.out, "application/x-ndjson", "zstd"
	}
	return b.data, "application/x-ndjson", ""
}

// deliver posts b until it is taken, refused for good, out of attempts,
// or the Client gives up (c.ctx). It returns whether b was taken, the
// retries and requests made, and the error that ended it otherwise.
func (s *sender) deliver(b *batch, streams []stream, u string) (sent bool, retries, requests int, err error) {
	c := s.c
	body, ctype, cenc := s.encode(b, streams)
	for attempt := 1; ; attempt++ {
		requests++
		status, wait, err := s.post(c.ctx, u, body, ctype, cenc)
		if err == nil {
			return true, retries, requests, nil
		}
		if status == 0 && c.spool != nil && c.ctx.Err() == nil {
			// Unreachable: the batch waits on disk, not in memory.
			h := spoolHeader{Path: strings.TrimPrefix(u, c.base), Type: ctype, Encoding: cenc, Records: b.n}
			if c.spool.put(h, body) == nil {
				s.spooled = true
				return false, retries, requests, nil
			}
		}
		if !retryable(status) {
			return false, retries, requests, fmt.Errorf("sdk: batch of %d records refused: %w", b.n, err)
		}
		if c.cfg.MaxAttempts > 0 && attempt >= c.cfg.MaxAttempts {
			return false, retries, requests, fmt.Errorf("sdk: batch of %d records given up after %d attempts: %w", b.n, attempt, err)
		}
		if d := backoff(c.cfg.MinBackoff, c.cfg.MaxBackoff, attempt); d > wait {
			wait = d
		}
		s.timer.Reset(wait)
		select {
		case <-s.timer.C:
		case <-c.ctx.Done():
			s.timer.Stop()
			return false, retries, requests, fmt.Errorf("sdk: batch of %d records undelivered at close: %w", b.n, err)
		}
		retries++
	}
}

// errStatus is a server's refusal.
type errStatus struct {
	code int
	msg  string
}

func (e *errStatus) Error() string {
	return fmt.Sprintf("server answered %d: %s", e.code, e.msg)
}

// post sends one request. It returns the status (0 for a transport
// error), the wait the server asked for (Retry-After), and an error
// unless the server took the body.
func (s *sender) post(ctx context.Context, u string, body []byte, ctype, cenc string) (int, time.Duration, error) {
	c := s.c
	if c.testPost != nil {
		return 0, 0, c.testPost(body)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	s.body.Reset(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, &s.body)
	if err != nil {
		return 0, 0, fmt.Errorf("build request: %w", err)
	}
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.Header.Set("Content-Type", ctype)
	if cenc != "" {
		req.Header.Set("Content-Encoding", cenc)
	}
	if c.cfg.Tenant != "" {
		req.Header.Set("X-Scope-OrgID", c.cfg.Tenant)
	}
	for k, vs := range c.cfg.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("post %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		s.rejected, s.rejectMsg = 0, ""
		if resp.ContentLength != 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			// The line protocols' answer counts the lines refused (bad
			// JSON, a stream over its limit) among those taken.
			var reply struct {
				Rejected int      `json:"rejected"`
				Errors   []string `json:"errors"`
			}
			if json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&reply) == nil && reply.Rejected > 0 {
				s.rejected, s.rejectMsg = reply.Rejected, strings.Join(reply.Errors, "; ")
			}
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return resp.StatusCode, 0, nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return resp.StatusCode, retryAfter(resp.Header.Get("Retry-After")), &errStatus{resp.StatusCode, strings.TrimSpace(string(msg))}
}

// retryable reports whether a request answered status (0: no answer) is
// worth another try: no answer, 408, 429 and any 5xx.
func retryable(status int) bool {
	return status == 0 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// backoff returns the wait before try attempt+1: "full jitter", a random
// time up to min(hi, lo·2^(attempt-1)), but at least lo/2.
func backoff(lo, hi time.Duration, attempt int) time.Duration {
	d := hi
	if attempt < 32 {
		if e := lo << (attempt - 1); e > 0 && e < hi {
			d = e
		}
	}
	return lo/2 + rand.N(d-lo/2+1)
}
