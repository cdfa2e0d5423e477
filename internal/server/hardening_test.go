package server

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicelog/sluice/internal/flow"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

// serving runs the fixture's server on a loopback listener until the
// test ends, and returns its address.
func (f *fixture) serving() string {
	f.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Serve(ctx, ln) }()
	f.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			f.t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestDeflateBodies: Content-Encoding deflate is zlib, as HTTP defines
// it; raw deflate, which some clients send, is taken too.
func TestDeflateBodies(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	line := []byte(`{"msg":"deflated","service":"api"}` + "\n")
	var z, raw bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(line)
	zw.Close()
	fw, _ := flate.NewWriter(&raw, flate.BestCompression)
	fw.Write(line)
	fw.Close()
	for name, body := range map[string][]byte{"zlib": z.Bytes(), "raw": raw.Bytes()} {
		if code, reply := f.do("POST", "/insert/jsonline", body, "Content-Encoding", "deflate"); code != 200 || !strings.Contains(reply, `"accepted":1`) {
			t.Errorf("%s: %d %s", name, code, reply)
		}
	}
	if got := len(f.stored("default")); got != 2 {
		t.Errorf("%d lines stored, want 2", got)
	}
	for _, h := range [][2]byte{{0x78, 0x9c}, {0x78, 0x01}, {0x78, 0xda}, {0x58, 0x85}} {
		if !isZlibHeader(h[0], h[1]) {
			t.Errorf("%x not taken for a zlib header", h)
		}
	}
	if isZlibHeader(0x78, 0x9d) || isZlibHeader(0x88, 0x98) {
		t.Error("a bad check or window taken for a zlib header")
	}
}

// slowClient opens a request that declares size bytes of body and sends
// them one every interval, until stop is closed. It returns the reply's
// status line once one comes (or the error that ended the connection).
func slowClient(addr, path string, size int, interval time.Duration, stop <-chan struct{}) (string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, size)
	replied := make(chan struct{})
	var status string
	var rerr error
	go func() {
		defer close(replied)
		status, rerr = bufio.NewReader(c).ReadString('\n')
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-replied:
			return strings.TrimSpace(status), rerr
		case <-stop:
			c.Close()
			<-replied
			return "", errors.New("stopped")
		case <-tick.C:
			c.Write([]byte(" "))
		}
	}
}

// TestSlowBodiesAreCutOff: a body that trickles is cut off with 408, and
// while such bodies trickle their reservations stay small, so the other
// clients are served.
func TestSlowBodiesAreCutOff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BodyIdleTimeout = 300 * time.Millisecond // the trickle below sends a byte every 100 ms
	cfg.MinBodyRate = 1 << 20                    // and so falls far below this after the grace
	cfg.MaxInflightBytes = 64 << 20
	f := newFixture(t, cfg)
	addr := f.serving()
	stop := make(chan struct{})
	defer close(stop)
	type result struct {
		status string
		err    error
	}
	results := make(chan result, 8)
	for _, path := range []string{"/insert/jsonline", "/loki/api/v1/push", "/_bulk", "/v1/logs"} {
		for range 2 {
			go func() {
				s, err := slowClient(addr, path, 100<<20, 100*time.Millisecond, stop)
				results <- result{s, err}
			}()
		}
	}
	// While they trickle, a good client is served at once.
	waitFor(t, func() bool { return testutil.ToFloat64(f.srv.metrics.inflight) == 8 })
	if held := testutil.ToFloat64(f.srv.metrics.inflightBytes); held > 16<<20 {
		t.Errorf("8 slow bodies hold %v bytes of the in-flight budget; want little (memory is reserved as bytes arrive)", held)
	}
	resp, err := http.Post("http://"+addr+"/insert/jsonline", "application/json", strings.NewReader(`{"msg":"fast","service":"api"}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a good client while slow ones trickle: %d", resp.StatusCode)
	}
	for range 8 {
		r := <-results
		if r.err != nil || !strings.Contains(r.status, "408") {
			t.Errorf("slow client: %q %v, want 408", r.status, r.err)
		}
	}
	waitFor(t, func() bool { return testutil.ToFloat64(f.srv.metrics.inflightBytes) == 0 })
}

// TestIdleConnectionsClose: a keep-alive connection idle past IdleTimeout
// is closed by the server.
func TestIdleConnectionsClose(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IdleTimeout = 50 * time.Millisecond
	f := newFixture(t, cfg)
	addr := f.serving()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /ready HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	// Now idle: the server closes it; the read ends with EOF.
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("idle connection: read gave %v, want EOF", err)
	}
}

// TestConnectionLimit: past MaxConnections a new connection is answered
// 503 and closed, counted, while the open ones keep working and the
// server keeps accepting once they close.
func TestConnectionLimit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxConnections = 3
	f := newFixture(t, cfg)
	addr := f.serving()
	var open []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		open = append(open, c)
	}
	waitFor(t, func() bool { return testutil.ToFloat64(f.srv.metrics.conns) == 3 })
	resp, err := http.Get("http://" + addr + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "max_connections") {
		t.Errorf("over the limit: %d %q, want 503 naming max_connections", resp.StatusCode, body)
	}
	if n := testutil.ToFloat64(f.srv.metrics.connsRefused); n != 1 {
		t.Errorf("refused connections counted %v, want 1", n)
	}
	// An open one still works.
	fmt.Fprintf(open[0], "GET /ready HTTP/1.1\r\nHost: x\r\n\r\n")
	if r, err := http.ReadResponse(bufio.NewReader(open[0]), nil); err != nil || r.StatusCode != 200 {
		t.Errorf("an open connection: %v %v", r, err)
	}
	open[1].Close()
	waitFor(t, func() bool { return testutil.ToFloat64(f.srv.metrics.conns) == 2 })
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if r, err := c.Get("http://" + addr + "/ready"); err != nil || r.StatusCode != 200 {
		t.Errorf("after one closed: %v %v", r, err)
	} else {
		r.Body.Close()
	}
}

// TestStreamLimit: each protocol refuses lines of new streams past the
// tenant's limit, as it can say so: line protocols per line, Loki whole
// (so a retry stores nothing twice), Elasticsearch per item with 429,
// OTLP as a partial success. Known streams and other tenants pass.
func TestStreamLimit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxStreamsPerTenant = 2
	f := newFixture(t, cfg)
	lines := func(services ...string) []byte {
		var b bytes.Buffer
		for _, s := range services {
			fmt.Fprintf(&b, `{"msg":"m","service":%q}`+"\n", s)
		}
		return b.Bytes()
	}
	code, reply := f.do("POST", "/insert/jsonline", lines("a", "b", "c", "a", "d"))
	if code != 200 || !strings.Contains(reply, `"accepted":3`) || !strings.Contains(reply, `"rejected":2`) ||
		!strings.Contains(reply, "max_streams_per_tenant") {
		t.Errorf("jsonline over the limit: %d %s", code, reply)
	}
	if code, reply := f.do("POST", "/insert/jsonline", lines("e")); code != 429 || !strings.Contains(reply, "limit of 2 active streams") {
		t.Errorf("only new streams: %d %s, want 429", code, reply)
	}
	if code, _ := f.do("POST", "/insert/jsonline", lines("b"), "X-Scope-OrgID", "other"); code != 200 {
		t.Errorf("another tenant: %d", code)
	}
	push := `{"streams":[{"stream":{"service":"a"},"values":[["1768464000000000000","known"]]},` +
		`{"stream":{"service":"z"},"values":[["1768464000000000000","new"]]}]}`
	if code, reply := f.do("POST", "/loki/api/v1/push", []byte(push), "Content-Type", "application/json"); code != 429 ||
		!strings.Contains(reply, "nothing of the push was stored") {
		t.Errorf("loki: %d %s, want 429", code, reply)
	}
	bulk := "{\"index\":{}}\n{\"msg\":\"ok\",\"service\":\"a\"}\n{\"index\":{}}\n{\"msg\":\"new\",\"service\":\"y\"}\n{\"index\":{}}\n{\"msg\":\"ok\",\"service\":\"b\"}\n"
	code, reply = f.do("POST", "/logs/_bulk?_stream_fields=service", []byte(bulk), "Content-Type", "application/x-ndjson")
	var br struct {
		Items []map[string]struct {
			Status int `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(reply), &br); err != nil || code != 200 || len(br.Items) != 3 ||
		br.Items[0]["index"].Status != 201 || br.Items[1]["index"].Status != 429 || br.Items[2]["index"].Status != 201 {
		t.Errorf("bulk: %d %s", code, reply)
	}
	if code, reply := f.do("POST", "/logs/_doc?_stream_fields=service", []byte(`{"msg":"new","service":"x"}`), "Content-Type", "application/json"); code != 429 ||
		!strings.Contains(reply, "es_rejected_execution_exception") || !strings.Contains(reply, "max_streams_per_tenant") {
		t.Errorf("_doc of a new stream: %d %s, want 429", code, reply)
	}
	want := []string{`{service="a"} {"msg":"m","service":"a"}`, `{service="a"} {"msg":"m","service":"a"}`, `{service="a"} {"msg":"ok","service":"a"}`,
		`{service="b"} {"msg":"m","service":"b"}`, `{service="b"} {"msg":"ok","service":"b"}`}
	if got := f.stored("default"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A stream idle for longer than flow.StreamIdle no longer counts.
	f.srv.streams.Now = func() time.Time { return time.Now().Add(flow.StreamIdle + 2*time.Minute) }
	if code, reply := f.do("POST", "/insert/jsonline", lines("e", "f")); code != 200 || !strings.Contains(reply, `"accepted":2`) {
		t.Errorf("after the others went idle: %d %s", code, reply)
	}
}

// TestTimeFallbacks: a timestamp that is present but unusable is stored
// at the receive time and said so, in the reply and the metrics.
func TestTimeFallbacks(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	body := `{"time":"2026-01-15T08:00:00Z","msg":"good"}
{"time":"0000-01-01T00:00:00Z","msg":"year 0"}
{"time":"9999-12-31T00:00:00Z","msg":"year 9999"}
{"time":-5,"msg":"negative"}
{"time":1e30,"msg":"huge"}
{"time":"NaN","msg":"nan"}
{"msg":"no time at all"}
`
	code, reply := f.do("POST", "/insert/jsonline", []byte(body))
	if code != 200 || !strings.Contains(reply, `"accepted":7`) || !strings.Contains(reply, `"time_fallbacks":5`) {
		t.Errorf("%d %s, want 7 accepted and 5 time fallbacks", code, reply)
	}
	if _, m := f.do("GET", "/metrics", nil); !strings.Contains(m, `sluice_ingest_time_fallbacks_total{protocol="jsonline"} 5`) {
		t.Error("the metric lacks the 5 fallbacks")
	}
}

// TestBulkMalformedAction: a malformed action line refuses the whole
// request with 400, as Elasticsearch does, and stores nothing.
func TestBulkMalformedAction(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	bulk := "{\"index\":{}}\n{\"msg\":\"one\"}\nnot an action\n{\"msg\":\"two\"}\n"
	code, reply := f.do("POST", "/_bulk", []byte(bulk), "Content-Type", "application/x-ndjson")
	if code != 400 || !strings.Contains(reply, `"status":400`) || !strings.Contains(reply, "line [3]") {
		t.Errorf("%d %s, want 400 naming line 3", code, reply)
	}
	if got := f.stored("default"); len(got) != 0 {
		t.Errorf("stored %q, want nothing", got)
	}
}

// TestReadyFollowsTheStore: /ready says not ready, with the reason, while
// writes would be refused: the disk nearly full, the WAL broken.
func TestReadyFollowsTheStore(t *testing.T) {
	cfg := DefaultConfig()
	free := uint64(1 << 30)
	var mu sync.Mutex
	cfg.FreeSpace = func() (uint64, error) { mu.Lock(); defer mu.Unlock(); return free, nil }
	mem := vfs.NewMem()
	ffs := vfs.NewFault(mem, nil)
	st, err := store.Open(store.Options{FS: ffs, Dir: "data", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := New(cfg, st, quiet, prometheus.NewRegistry())
	f := &fixture{t: t, fs: mem, st: st, srv: srv}
	close(srv.ready)
	if code, body := f.do("GET", "/ready", nil); code != 200 {
		t.Fatalf("ready: %d %s", code, body)
	}
	mu.Lock()
	free = 1 << 20
	mu.Unlock()
	srv.disk.checked = time.Time{} // read the free space anew
	if code, body := f.do("GET", "/ready", nil); code != 503 || !strings.Contains(body, "disk is nearly full") {
		t.Errorf("disk nearly full: %d %s", code, body)
	}
	mu.Lock()
	free = 1 << 30
	mu.Unlock()
	srv.disk.checked = time.Time{}
	ffs.SetInjector(vfs.FailWhen(func(op vfs.Op, name string) bool { return op == vfs.OpSync && strings.Contains(name, "wal") }, errors.New("injected EIO")))
	if code, _ := f.do("POST", "/insert/jsonline", []byte(`{"msg":"x"}`+"\n")); code < 500 {
		t.Errorf("a write with a failing fdatasync: %d, want 5xx", code)
	}
	if code, body := f.do("GET", "/ready", nil); code != 503 || !strings.Contains(body, "WAL is broken") {
		t.Errorf("WAL broken: %d %s", code, body)
	}
}

// TestOperationalEndpointsNeedAdmin: with auth on, /metrics, pprof and
// build info are closed to anonymous clients; /metrics and pprof to all
// but admin credentials; /ready stays open.
func TestOperationalEndpointsNeedAdmin(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Pprof = true
	cfg.Auth = []Credential{{Token: "tenant-token", Tenants: []string{"a"}}, {Token: "admin-token", Tenants: []string{"*"}, Admin: true}}
	f := newFixture(t, cfg)
	close(f.srv.ready)
	for _, c := range []struct {
		path  string
		token string
		want  int
	}{
		{"/ready", "", 200},
		{"/metrics", "", 401},
		{"/metrics", "tenant-token", 403},
		{"/metrics", "admin-token", 200},
		{"/debug/pprof/", "", 401},
		{"/debug/pprof/", "tenant-token", 403},
		{"/debug/pprof/", "admin-token", 200},
		{"/loki/api/v1/status/buildinfo", "", 401},
		{"/loki/api/v1/status/buildinfo", "tenant-token", 200},
	} {
		var h []string
		if c.token != "" {
			h = []string{"Authorization", "Bearer " + c.token}
		}
		if code, _ := f.do("GET", c.path, nil, h...); code != c.want {
			t.Errorf("%s with %q: %d, want %d", c.path, c.token, code, c.want)
		}
	}
}

// waitFor polls cond until it holds; the test's own deadline stops a
// hang.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(5 * time.Millisecond)
	}
}

// A body over MaxBodyBytes is answered 413 naming the limit, and the
// connection, whose rest of the body is unread, is closed after the
// answer; a body within it keeps its connection alive for the next
// request.
func TestBodyLimitClosesTheConnection(t *testing.T) {
	for _, tr := range transports {
		t.Run("server="+trName(tr), func(t *testing.T) { testBodyLimitClosesTheConnection(t, tr) })
	}
}

func testBodyLimitClosesTheConnection(t *testing.T, transport string) {
	cfg := DefaultConfig()
	cfg.IngestServer = transport
	cfg.MaxBodyBytes = 1 << 10
	f := newFixture(t, cfg)
	addr := f.serving()
	srvURL := "http://" + addr
	line := `{"msg":"within","service":"api"}` + "\n"
	post := func(c net.Conn, r *bufio.Reader, body string, chunked bool) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srvURL+"/insert/jsonline", strings.NewReader(body))
		if chunked {
			req.ContentLength = -1
		}
		if err := req.Write(c); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, chunked := range []bool{false, true} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		for i := range 2 {
			if resp, body := post(c, r, line, chunked); resp.StatusCode != 200 || resp.Close {
				t.Fatalf("chunked %v, request %d within the limit: %d, close %v: %s", chunked, i, resp.StatusCode, resp.Close, body)
			}
		}
		resp, body := post(c, r, strings.Repeat(line, 100), chunked)
		if resp.StatusCode != 413 || !resp.Close || !strings.Contains(body, "too large") {
			t.Errorf("chunked %v, over the limit: %d, close %v: %s", chunked, resp.StatusCode, resp.Close, body)
			c.Close()
			continue // a connection kept alive would block the read below
		}
		if _, err := r.ReadByte(); err != io.EOF {
			t.Errorf("chunked %v: after the 413 the connection reads %v, want io.EOF", chunked, err)
		}
		c.Close()
	}
}

// TestBodyLimitsNameTheirFlag: a body over each of the three size limits
// is answered 413 naming that limit's flag and value, not another's: as
// sent (--max-body-bytes), decompressed (--max-decoded-bytes, a small
// gzip body of many lines) and decoded whole (--max-whole-body-bytes, a
// Loki JSON push).
func TestBodyLimitsNameTheirFlag(t *testing.T) {
	for _, tr := range transports {
		t.Run("server="+trName(tr), func(t *testing.T) { testBodyLimitsNameTheirFlag(t, tr) })
	}
}

func testBodyLimitsNameTheirFlag(t *testing.T, transport string) {
	cfg := DefaultConfig()
	cfg.IngestServer = transport
	cfg.MaxBodyBytes, cfg.MaxDecodedBytes, cfg.MaxWholeBodyBytes = 4<<10, 64<<10, 2<<10
	f := newFixture(t, cfg)
	addr := f.serving()
	srvURL := "http://" + addr
	line := `{"msg":"a line of the body","service":"api"}` + "\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Repeat(line, 5000))) // ~230 KB decompressed, a few KB sent
	zw.Close()
	if gz.Len() > 4<<10 {
		t.Fatalf("the gzip body is %d bytes: over the as-sent limit too", gz.Len())
	}
	loki := `{"streams":[{"stream":{"service":"api"},"values":[["1768464000000000000","` + strings.Repeat("x", 3<<10) + `"]]}]}`
	for _, c := range []struct {
		name, path, encoding, ctype, body, want string
	}{
		{"as sent", "/insert/jsonline", "", "", strings.Repeat(line, 200), "--max-body-bytes bounds the body as sent to 4096 bytes"},
		{"decompressed", "/insert/jsonline", "gzip", "", gz.String(), "--max-decoded-bytes bounds the body decompressed to 65536 bytes"},
		{"whole", "/loki/api/v1/push", "", "application/json", loki, "--max-whole-body-bytes bounds a Loki, OTLP or Elasticsearch body decompressed to 2048 bytes"},
	} {
		req, _ := http.NewRequest("POST", srvURL+c.path, strings.NewReader(c.body))
		if c.encoding != "" {
			req.Header.Set("Content-Encoding", c.encoding)
		}
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %q, want 413 naming %q", c.name, resp.StatusCode, b, c.want)
		}
	}
}
