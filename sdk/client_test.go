package sdk

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/encoding/protowire"
)

// sink is a test server that decodes what a Client sends.
type sink struct {
	mu       sync.Mutex
	requests int
	lines    []map[string]any // NDJSON records
	entries  []lokiEntry      // Loki records
	queries  []string
	// answer, if set, decides each request's status (0: 204, -1: it
	// answered itself) before its body is read; n counts from 1.
	answer func(n int, w http.ResponseWriter, r *http.Request) int
}

type lokiEntry struct {
	labels string
	ns     int64
	line   string
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	n := s.requests
	s.mu.Unlock()
	if s.answer != nil {
		switch code := s.answer(n, w, r); {
		case code < 0: // answered
			return
		case code > 0:
			http.Error(w, "refused by test", code)
			return
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	switch r.Header.Get("Content-Encoding") {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			http.Error(w, "gzip: "+err.Error(), 400)
			return
		}
	case "zstd":
		zr, _ := zstd.NewReader(nil)
		body, err = zr.DecodeAll(body, nil)
		zr.Close()
		if err != nil {
			http.Error(w, "zstd: "+err.Error(), 400)
			return
		}
	case "":
	default:
		http.Error(w, "encoding", 415)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = append(s.queries, r.URL.RawQuery)
	if r.URL.Path == "/loki/api/v1/push" {
		if r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "content type", 415)
			return
		}
		raw, err := snappy.Decode(nil, body)
		if err != nil {
			http.Error(w, "snappy: "+err.Error(), 400)
			return
		}
		es, err := decodePush(raw)
		if err != nil {
			http.Error(w, "protobuf: "+err.Error(), 400)
			return
		}
		s.entries = append(s.entries, es...)
		w.WriteHeader(204)
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			http.Error(w, fmt.Sprintf("line %q: %v", sc.Text(), err), 400)
			return
		}
		s.lines = append(s.lines, m)
	}
	w.WriteHeader(204)
}

// decodePush decodes a logproto.PushRequest.
func decodePush(b []byte) ([]lokiEntry, error) {
	var out []lokiEntry
	fields := func(b []byte, f func(num protowire.Number, v []byte, x uint64) error) error {
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			switch typ {
			case protowire.BytesType:
				v, n := protowire.ConsumeBytes(b)
				if n < 0 {
					return protowire.ParseError(n)
				}
				b = b[n:]
				if err := f(num, v, 0); err != nil {
					return err
				}
			case protowire.VarintType:
				x, n := protowire.ConsumeVarint(b)
				if n < 0 {
					return protowire.ParseError(n)
				}
				b = b[n:]
				if err := f(num, nil, x); err != nil {
					return err
				}
			default:
				return fmt.Errorf("unexpected wire type %d", typ)
			}
		}
		return nil
	}
	err := fields(b, func(_ protowire.Number, stream []byte, _ uint64) error {
		var labels string
		return fields(stream, func(num protowire.Number, v []byte, _ uint64) error {
			if num == 1 {
				labels = string(v)
				return nil
			}
			e := lokiEntry{labels: labels}
			err := fields(v, func(num protowire.Number, v []byte, _ uint64) error {
				if num == 2 {
					e.line = string(v)
					return nil
				}
				return fields(v, func(num protowire.Number, _ []byte, x uint64) error {
					if num == 1 {
						e.ns += int64(x) * 1e9
					} else {
						e.ns += int64(x)
					}
					return nil
				})
			})
			out = append(out, e)
			return err
		})
	})
	return out, err
}

func (s *sink) snapshot() (requests int, lines []map[string]any, entries []lokiEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, append([]map[string]any(nil), s.lines...), append([]lokiEntry(nil), s.entries...)
}

func newSink(t *testing.T, s *sink) string {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL
}

func mustNew(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Tests that need delivery Close it themselves: this one only
		// stops the goroutines.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = c.Close(ctx)
	})
	return c
}

func TestNDJSONBatchesByCount(t *testing.T) {
	for _, comp := range []Compression{CompressionNone, CompressionGzip, CompressionZstd} {
		t.Run(comp.String(), func(t *testing.T) {
			s := &sink{}
			c := mustNew(t, Config{URL: newSink(t, s), Compression: comp, BatchRecords: 10, Linger: time.Hour,
				Labels: []Label{{"service", "api"}}})
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
			for i := range 35 {
				line := fmt.Sprintf("plain line %d with \"quotes\"", i)
				if i%2 == 1 {
					line = fmt.Sprintf("{\"n\": %d,\n \"k\":\"v\"}", i)
				}
				if err := c.Send(t0.Add(time.Duration(i)), []byte(line), Label{"host", "h1"}); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			reqs, lines, _ := s.snapshot()
			if reqs != 4 {
				t.Errorf("requests = %d, want 4 (10, 10, 10, 5)", reqs)
			}
			if len(lines) != 35 {
				t.Fatalf("lines = %d, want 35", len(lines))
			}
			seen := map[string]bool{}
			for _, m := range lines {
				if m["service"] != "api" || m["host"] != "h1" {
					t.Errorf("labels missing in %v", m)
				}
				ts, err := time.Parse(time.RFC3339Nano, m["_time"].(string))
				if err != nil {
					t.Fatalf("_time of %v: %v", m, err)
				}
				i := int(ts.Sub(t0))
				if i%2 == 1 {
					if m["n"] != float64(i) || m["k"] != "v" {
						t.Errorf("record %d: object fields not kept: %v", i, m)
					}
				} else if m["_msg"] != fmt.Sprintf("plain line %d with \"quotes\"", i) {
					t.Errorf("record %d: _msg = %v", i, m["_msg"])
				}
				seen[m["_time"].(string)] = true
			}
			if len(seen) != 35 {
				t.Errorf("%d distinct records, want 35", len(seen))
			}
			s.mu.Lock()
			q := s.queries[0]
			s.mu.Unlock()
			if !strings.Contains(q, "_stream_fields=") || !strings.Contains(q, "service") || !strings.Contains(q, "host") {
				t.Errorf("query %q does not name the stream fields", q)
			}
			st := c.Stats()
			if st.Sent != 35 || st.Dropped != 0 || st.Failed != 0 || st.Buffered != 0 {
				t.Errorf("stats = %+v", st)
			}
		})
	}
}

func TestBatchesByBytesAndLinger(t *testing.T) {
	s := &sink{}
	c := mustNew(t, Config{URL: newSink(t, s), BatchBytes: 1000, Linger: time.Hour})
	line := bytes.Repeat([]byte("x"), 300)
	for range 10 {
		if err := c.Send(time.Time{}, line); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	reqs, lines, _ := s.snapshot()
	if len(lines) != 10 || reqs < 4 {
		t.Errorf("%d lines in %d requests; want 10 lines in at least 4 (under 1000 bytes each)", len(lines), reqs)
	}
	if _, ok := lines[0]["_time"]; ok {
		t.Errorf("a zero time was sent as _time: %v", lines[0])
	}

	// Linger: a lone record is sent without Flush.
	s2 := &sink{}
	got := make(chan struct{})
	s2.answer = func(int, http.ResponseWriter, *http.Request) int { close(got); return 0 }
	c2 := mustNew(t, Config{URL: newSink(t, s2), Linger: time.Millisecond})
	if err := c2.Send(time.Now(), []byte("alone")); err != nil {
		t.Fatal(err)
	}
	<-got
}

func TestLokiProtobuf(t *testing.T) {
	s := &sink{}
	c := mustNew(t, Config{URL: newSink(t, s), Protocol: LokiProtobuf, Labels: []Label{{"job", "test"}}, Linger: time.Hour})
	t0 := time.Unix(1700000000, 123)
	for i := range 20 {
		if err := c.Send(t0.Add(time.Duration(i)*time.Second), fmt.Appendf(nil, "line %d", i), Label{"pod", fmt.Sprint("p", i%3)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, _, es := s.snapshot()
	if len(es) != 20 {
		t.Fatalf("%d entries, want 20", len(es))
	}
	for _, e := range es {
		var i int
		if _, err := fmt.Sscanf(e.line, "line %d", &i); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{job="test", pod="p%d"}`, i%3); e.labels != want {
			t.Errorf("entry %d: labels %s, want %s", i, e.labels, want)
		}
		if want := t0.Add(time.Duration(i) * time.Second).UnixNano(); e.ns != want {
			t.Errorf("entry %d: time %d, want %d", i, e.ns, want)
		}
	}
	if _, err := New(Config{URL: "http://x", Protocol: LokiProtobuf, Compression: CompressionGzip}); err == nil {
		t.Error("LokiProtobuf with gzip accepted")
	}
	c2 := mustNew(t, Config{URL: "http://127.0.0.1:1", Protocol: LokiProtobuf})
	if err := c2.Send(time.Now(), []byte("x")); !errors.Is(err, ErrNoLabels) {
		t.Errorf("Send without labels: %v, want ErrNoLabels", err)
	}
	if err := c2.Send(time.Now(), []byte("x"), Label{"bad-name", "v"}); err == nil || !strings.Contains(err.Error(), "bad-name") {
		t.Errorf("Send with a bad label name: %v", err)
	}
}

func TestRetries(t *testing.T) {
	s := &sink{}
	var times []time.Time
	s.answer = func(n int, w http.ResponseWriter, _ *http.Request) int {
		times = append(times, time.Now())
		switch n {
		case 1:
			w.Header().Set("Retry-After", "1")
			return 429
		case 2:
			return 503
		case 3:
			return 500
		}
		return 0
	}
	var errs atomic.Int32
	c := mustNew(t, Config{URL: newSink(t, s), Senders: 1, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
		OnError: func(error) { errs.Add(1) }})
	for range 5 {
		if err := c.Send(time.Now(), []byte("r")); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	reqs, lines, _ := s.snapshot()
	st := c.Stats()
	if reqs != 4 || len(lines) != 5 || st.Sent != 5 || st.Retries != 3 || st.Requests != 4 || errs.Load() != 0 {
		t.Errorf("%d requests, %d lines, stats %+v, %d errors; want 4 requests, 5 lines, 3 retries", reqs, len(lines), st, errs.Load())
	}
	// Retry-After: 1 is honoured (a lower bound: a slow machine only
	// makes the gap longer).
	if gap := times[1].Sub(times[0]); gap < time.Second {
		t.Errorf("retried %v after a 429 with Retry-After: 1", gap)
	}
}

func TestRefusedForGood(t *testing.T) {
	s := &sink{answer: func(int, http.ResponseWriter, *http.Request) int { return 400 }}
	var msgs []string
	var mu sync.Mutex
	c := mustNew(t, Config{URL: newSink(t, s), OnError: func(err error) {
		mu.Lock()
		msgs = append(msgs, err.Error())
		mu.Unlock()
	}})
	_ = c.Send(time.Now(), []byte("bad"))
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	reqs, _, _ := s.snapshot()
	if reqs != 1 || st.Failed != 1 || st.Retries != 0 {
		t.Errorf("%d requests, stats %+v; want 1 request, 1 failed", reqs, st)
	}
	if len(msgs) != 1 || !strings.Contains(msgs[0], "400") || !strings.Contains(msgs[0], "refused by test") {
		t.Errorf("OnError got %q", msgs)
	}

	// Out of attempts.
	s2 := &sink{answer: func(int, http.ResponseWriter, *http.Request) int { return 503 }}
	c2 := mustNew(t, Config{URL: newSink(t, s2), MaxAttempts: 3, MinBackoff: time.Millisecond})
	_ = c2.Send(time.Now(), []byte("x"))
	if err := c2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if reqs, _, _ := s2.snapshot(); reqs != 3 || c2.Stats().Failed != 1 {
		t.Errorf("%d requests, stats %+v; want 3 and 1 failed", reqs, c2.Stats())
	}
}

func TestRequestTimeoutRetried(t *testing.T) {
	s := &sink{}
	s.answer = func(n int, _ http.ResponseWriter, r *http.Request) int {
		if n == 1 {
			// Hang until the client gives up: with the body read, the
			// server sees the connection close.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return 500
		}
		return 0
	}
	c := mustNew(t, Config{URL: newSink(t, s), RequestTimeout: 50 * time.Millisecond, MinBackoff: time.Millisecond})
	_ = c.Send(time.Now(), []byte("slow"))
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if _, lines, _ := s.snapshot(); len(lines) != 1 || st.Sent != 1 || st.Retries < 1 {
		t.Errorf("%d lines, stats %+v; want the record delivered after a retry", len(lines), st)
	}
}

// unreachable returns a URL where nothing listens.
func unreachable(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestBoundedDropOldest(t *testing.T) {
	c := mustNew(t, Config{URL: unreachable(t), BatchRecords: 10, BatchBytes: 4096, MaxBufferedBytes: 2 * 4096,
		Overflow: OverflowDropOldest, Senders: 1, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Linger: time.Hour})
	const n = 1000
	for range n {
		if err := c.Send(time.Now(), []byte("r")); err != nil {
			t.Fatal(err)
		}
	}
	st := c.Stats()
	// At most the queue (2 batches), one in flight and one filling.
	if st.Buffered > 4*10 {
		t.Errorf("%d records buffered, want at most 40", st.Buffered)
	}
	if st.Dropped < n-40 || st.Blocked != 0 {
		t.Errorf("stats %+v: want at least %d dropped and none blocked", st, n-40)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Close(ctx); err == nil || !strings.Contains(err.Error(), "undelivered") {
		t.Errorf("Close with the server gone: %v", err)
	}
	st = c.Stats()
	if st.Dropped+st.Failed != n || st.Sent != 0 || st.Buffered != 0 {
		t.Errorf("after Close: %+v; want all %d dropped", st, n)
	}
}

func TestBoundedBlock(t *testing.T) {
	c := mustNew(t, Config{URL: unreachable(t), BatchRecords: 10, BatchBytes: 4096, MaxBufferedBytes: 4096,
		Overflow: OverflowBlock, Senders: 1, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Linger: time.Hour})
	done := make(chan int)
	go func() {
		i := 0
		for ; i < 1000; i++ {
			if err := c.Send(time.Now(), []byte("r")); err != nil {
				break
			}
		}
		done <- i
	}()
	// Wait for the Send that blocks: one batch in flight, one queued,
	// one filling.
	for c.Stats().Blocked == 0 {
		runtime.Gosched()
	}
	if st := c.Stats(); st.Buffered > 30 || st.Dropped != 0 {
		t.Errorf("blocked with stats %+v: want at most 30 buffered, none dropped", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Close(ctx); err == nil {
		t.Error("Close with the server gone returned nil")
	}
	accepted := <-done
	st := c.Stats()
	if accepted > 31 || st.Dropped+st.Failed != uint64(accepted) {
		t.Errorf("%d accepted, stats %+v", accepted, st)
	}
}

func TestCloseDeliversEverything(t *testing.T) {
	s := &sink{}
	// OverflowBlock: eight goroutines outrun one test server, and this
	// test wants every record, not the newest.
	c := mustNew(t, Config{URL: newSink(t, s), BatchRecords: 100, Linger: time.Hour, Senders: 3, Overflow: OverflowBlock,
		Labels: []Label{{"app", "x"}}})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				if err := c.Send(time.Now(), fmt.Appendf(nil, `{"g":%d,"i":%d}`, g, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, lines, _ := s.snapshot()
	seen := map[[2]float64]bool{}
	for _, m := range lines {
		seen[[2]float64{m["g"].(float64), m["i"].(float64)}] = true
	}
	if len(lines) != 8000 || len(seen) != 8000 {
		t.Errorf("%d lines, %d distinct; want 8000", len(lines), len(seen))
	}
	if err := c.Send(time.Now(), []byte("late")); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
}

func TestSendAllocs(t *testing.T) {
	for _, p := range []Protocol{NDJSON, LokiProtobuf} {
		c := mustNew(t, Config{URL: "http://127.0.0.1:1", Protocol: p, BatchRecords: 1 << 20, BatchBytes: 64 << 20,
			Linger: time.Hour, Labels: []Label{{"app", "x"}}})
		line := []byte(`{"level":"info","msg":"hello"}`)
		ts := time.Now()
		_ = c.Send(ts, line, Label{"pod", "a"})
		allocs := testing.AllocsPerRun(1000, func() {
			_ = c.Send(ts, line, Label{"pod", "a"})
		})
		if allocs != 0 {
			t.Errorf("%s: Send allocates %v times per record", p, allocs)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{URL: "ftp://x"},
		{URL: "http://x", Compression: CompressionSnappy},
		{URL: "http://x", Protocol: 7},
		{URL: "http://x", Labels: []Label{{"", "v"}}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestRetryAfterAndBackoff(t *testing.T) {
	if d := retryAfter("3"); d != 3*time.Second {
		t.Errorf("retryAfter(3) = %v", d)
	}
	if d := retryAfter(time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)); d < 59*time.Minute {
		t.Errorf("retryAfter(date) = %v", d)
	}
	if d := retryAfter("soon"); d != 0 {
		t.Errorf("retryAfter(soon) = %v", d)
	}
	for attempt := 1; attempt < 40; attempt++ {
		d := backoff(100*time.Millisecond, 10*time.Second, attempt)
		if d < 50*time.Millisecond || d > 10*time.Second {
			t.Errorf("backoff(%d) = %v", attempt, d)
		}
	}
}

func TestPartialRejectCounted(t *testing.T) {
	s := &sink{answer: func(_ int, w http.ResponseWriter, r *http.Request) int {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"accepted":3,"rejected":2,"errors":["1:1: bad JSON"]}`+"\n")
		return -1
	}}
	var got []string
	var mu sync.Mutex
	c := mustNew(t, Config{URL: newSink(t, s), OnError: func(err error) {
		mu.Lock()
		got = append(got, err.Error())
		mu.Unlock()
	}})
	for range 5 {
		_ = c.Send(time.Now(), []byte("x"))
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Sent != 3 || st.Failed != 2 {
		t.Errorf("stats %+v, want 3 sent and 2 failed", st)
	}
	if len(got) != 1 || !strings.Contains(got[0], "refused 2 of 5") || !strings.Contains(got[0], "bad JSON") {
		t.Errorf("OnError got %q", got)
	}
}

// With the server unreachable, batches go to the spool directory, not
// memory; a later Client with the same directory sends them once the
// server is there.
func TestSpoolWhileUnreachable(t *testing.T) {
	dir := t.TempDir()
	c := mustNew(t, Config{URL: unreachable(t), SpoolDir: dir, BatchRecords: 10, Linger: time.Hour,
		MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	for i := range 95 {
		if err := c.Send(time.Now(), fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Spooled != 95 || st.Buffered != 0 || st.Dropped != 0 {
		t.Errorf("stats %+v, want 95 spooled and none buffered", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close with everything spooled: %v", err)
	}
	files, _ := os.ReadDir(dir)
	if len(files) != 10 {
		t.Errorf("%d spool files, want 10", len(files))
	}

	s := &sink{}
	c2 := mustNew(t, Config{URL: newSink(t, s), SpoolDir: dir})
	// Wait for the spool to be sent: the event is the count.
	for c2.Stats().Sent < 95 {
		runtime.Gosched()
	}
	_, lines, _ := s.snapshot()
	seen := map[float64]bool{}
	for _, m := range lines {
		seen[m["i"].(float64)] = true
	}
	if len(seen) != 95 || len(lines) != 95 {
		t.Errorf("%d records, %d distinct from the spool, want 95", len(lines), len(seen))
	}
	if err := c2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := c2.Stats(); st.Sent != 95 {
		t.Errorf("second client stats %+v, want 95 sent", st)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("%d spool files left", len(files))
	}
}

// A timeCache appends what appendTime does, within a second, across
// seconds and for years it does not cache.
func TestTimeCache(t *testing.T) {
	var tc timeCache
	base := time.Date(2026, 1, 15, 8, 0, 59, 0, time.FixedZone("x", 3600))
	for _, ts := range []time.Time{
		base, base.Add(1), base.Add(999999999), base.Add(time.Second), base.Add(time.Second + 12345678),
		base.Add(-time.Hour * 24 * 400), time.Date(10000, 1, 1, 0, 0, 0, 5, time.UTC), base.Add(123456789),
		time.Unix(0, 1), time.Unix(0, 100000000),
	} {
		if got, want := string(tc.append([]byte("x"), ts)), "x"+string(appendTime(nil, ts)); got != want {
			t.Errorf("timeCache.append(%v) = %s, want %s", ts, got, want)
		}
	}
}

func TestAppendTime(t *testing.T) {
	for _, ts := range []time.Time{
		time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("x", 3600)),
		time.Unix(0, 1),
	} {
		got, err := time.Parse(time.RFC3339Nano, string(appendTime(nil, ts)))
		if err != nil || !got.Equal(ts) {
			t.Errorf("appendTime(%v) = %s (%v)", ts, appendTime(nil, ts), err)
		}
	}
}
