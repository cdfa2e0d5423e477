package server

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// transports are the two ingest servers (Config.IngestServer).
var transports = []string{IngestNetHTTP, IngestFastHTTP}

// trName is a transport in a test's name: "nethttp" or "fasthttp" (a
// slash would make a level of its own).
func trName(tr string) string { return strings.ReplaceAll(tr, "/", "") }

// fastConns is the number of connections the fasthttp server holds open
// (0 when it does not serve).
func (f *fixture) fastConns() int32 {
	fs := f.srv.fast.Load()
	if fs == nil {
		return 0
	}
	return fs.GetOpenConnectionsCount()
}

// rawExchange writes req on c and reads one answer.
func rawExchange(t *testing.T, c net.Conn, r *bufio.Reader, req string) (*http.Response, string) {
	t.Helper()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("read answer to %q: %v", strings.SplitN(req, "\r\n", 2)[0], err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestIngestTransports pushes every ingest protocol, plain, gzip,
// chunked and with Expect: 100-continue, over each transport, through
// one keep-alive connection that then asks for a non-ingest endpoint:
// the answers and the lines stored are the same on both, and with
// fasthttp the connection is fasthttp's.
func TestIngestTransports(t *testing.T) {
	var gzBody bytes.Buffer
	zw := gzip.NewWriter(&gzBody)
	zw.Write([]byte(`{"msg":"gzipped","service":"api"}` + "\n"))
	zw.Close()
	loki := `{"streams":[{"stream":{"service":"api"},"values":[["1768464000000000000","loki json"]]}]}`
	lokiProto := pushProto(`{service="api"}`, "loki proto")
	otlpJSON := `{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"api"}}]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"1768464000000000000","body":{"stringValue":"otlp json"}}]}]}]}`
	bulk := `{"index":{"_index":"logs"}}` + "\n" + `{"message":"bulk","service":"api"}` + "\n"
	type push struct {
		name, path, ctype, encoding string
		body                        []byte
		chunked, expect             bool
		code                        int
	}
	pushes := []push{
		{name: "jsonline", path: "/insert/jsonline", ctype: "application/x-ndjson", body: []byte(`{"msg":"plain","service":"api"}` + "\n"), code: 200},
		{name: "jsonline gzip", path: "/insert/jsonline", encoding: "gzip", body: gzBody.Bytes(), code: 200},
		{name: "jsonline chunked", path: "/insert/jsonline", body: []byte(`{"msg":"chunked","service":"api"}` + "\n"), chunked: true, code: 200},
		{name: "jsonline expect", path: "/insert/jsonline", body: []byte(`{"msg":"expect","service":"api"}` + "\n"), expect: true, code: 200},
		{name: "lines", path: "/insert/lines?format=logfmt", body: []byte("msg=logfmt service=api\n"), code: 200},
		{name: "loki json", path: "/loki/api/v1/push", ctype: "application/json", body: []byte(loki), code: 204},
		{name: "loki proto", path: "/loki/api/v1/push", ctype: "application/x-protobuf", encoding: "snappy", body: lokiProto, code: 204},
		{name: "otlp json", path: "/v1/logs", ctype: "application/json", body: []byte(otlpJSON), code: 200},
		{name: "bulk", path: "/_bulk", ctype: "application/x-ndjson", body: []byte(bulk), code: 200},
		{name: "index bulk chunked", path: "/logs/_bulk", ctype: "application/x-ndjson", body: []byte(`{"create":{}}` + "\n" + `{"message":"index bulk","service":"api"}` + "\n"), chunked: true, code: 200},
		{name: "bad json", path: "/insert/jsonline", body: []byte("{not json\n"), code: 400},
	}
	for _, tr := range transports {
		t.Run("server="+trName(tr), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.IngestServer = tr
			f := newFixture(t, cfg)
			addr := f.serving()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r := bufio.NewReader(c)
			for _, p := range pushes {
				var req strings.Builder
				fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: x\r\nX-Scope-OrgID: team-a\r\n", p.path)
				if p.ctype != "" {
					fmt.Fprintf(&req, "Content-Type: %s\r\n", p.ctype)
				}
				if p.encoding != "" {
					fmt.Fprintf(&req, "Content-Encoding: %s\r\n", p.encoding)
				}
				if p.chunked {
					fmt.Fprintf(&req, "Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(p.body), p.body)
				} else {
					fmt.Fprintf(&req, "Content-Length: %d\r\n", len(p.body))
					if p.expect {
						req.WriteString("Expect: 100-continue\r\n")
					}
					req.WriteString("\r\n")
				}
				if p.expect {
					// The head alone; the body once the server says 100.
					io.WriteString(c, req.String())
					line, err := r.ReadString('\n')
					if err != nil || !strings.Contains(line, "100 Continue") {
						t.Fatalf("%s: %q %v, want 100 Continue", p.name, line, err)
					}
					if blank, _ := r.ReadString('\n'); blank != "\r\n" {
						t.Fatalf("%s: after 100 Continue %q", p.name, blank)
					}
					req.Reset()
					req.Write(p.body)
				} else if !p.chunked {
					req.Write(p.body)
				}
				resp, body := rawExchange(t, c, r, req.String())
				if resp.StatusCode != p.code || resp.Close {
					t.Errorf("%s: %d (close %v) %s, want %d", p.name, resp.StatusCode, resp.Close, body, p.code)
				}
			}
			// A body-carrying request that is not an ingest route goes
			// to the mux, its body streamed (an Elasticsearch document).
			doc := `{"message":"a doc","service":"api"}`
			resp, body := rawExchange(t, c, r, fmt.Sprintf("POST /logs/_doc HTTP/1.1\r\nHost: x\r\nX-Scope-OrgID: team-a\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(doc), doc))
			if resp.StatusCode != 201 || !strings.Contains(body, `"result":"created"`) {
				t.Errorf("POST /logs/_doc after the pushes: %d %s", resp.StatusCode, body)
			}
			// A query on the same connection is answered too.
			resp, body = rawExchange(t, c, r, "GET /ready HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp.StatusCode != 200 || body != "ready\n" {
				t.Errorf("GET /ready after the pushes: %d %q", resp.StatusCode, body)
			}
			resp, body = rawExchange(t, c, r, "GET /loki/api/v1/labels HTTP/1.1\r\nHost: x\r\nX-Scope-OrgID: team-a\r\n\r\n")
			if resp.StatusCode != 200 || !strings.Contains(body, `"service"`) {
				t.Errorf("GET labels after the pushes: %d %q", resp.StatusCode, body)
			}
			want := int32(0)
			if tr == IngestFastHTTP {
				want = 1
			}
			if got := f.fastConns(); got != want {
				t.Errorf("fasthttp holds %d connections, want %d", got, want)
			}
			got := f.stored("team-a")
			for _, line := range []string{"plain", "gzipped", "chunked", "expect", "logfmt", "loki json", "loki proto", "otlp json", "bulk", "index bulk", "a doc"} {
				found := false
				for _, g := range got {
					found = found || strings.Contains(g, line)
				}
				if !found {
					t.Errorf("line %q not stored; stored: %q", line, got)
				}
			}
			if len(got) != 11 {
				t.Errorf("%d lines stored, want 11: %q", len(got), got)
			}
		})
	}
}

// TestIngestDispatch: a connection whose first request is not an ingest
// POST goes to net/http, and a push on it later is served there; one
// whose first request is goes to fasthttp.
func TestIngestDispatch(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IngestServer = IngestFastHTTP
	f := newFixture(t, cfg)
	addr := f.serving()
	push := "POST /insert/jsonline HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n\r\n" + `{"msg":"one","service":"api"}` + "\n"
	for _, c := range []struct {
		name, first string
		fast        int32
	}{
		{"query first", "GET /ready HTTP/1.1\r\nHost: x\r\n\r\n", 0},
		{"push first", push, 1},
		{"push split in bytes", push, 1},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(conn)
		if c.name == "push split in bytes" {
			// The request line arrives a byte at a time: the peek
			// waits for its end.
			for i := range 20 {
				conn.Write([]byte{c.first[i]})
			}
			c.first = c.first[20:]
		}
		resp, body := rawExchange(t, conn, r, c.first)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", c.name, resp.StatusCode, body)
		}
		resp, body = rawExchange(t, conn, r, push)
		if resp.StatusCode != 200 {
			t.Errorf("%s, then a push: %d %s", c.name, resp.StatusCode, body)
		}
		// fasthttp's count of open connections is read while its
		// accounting of the connection before may still be settling
		// (it was seen at -1 for a moment): it must reach c.fast.
		got := f.fastConns()
		for deadline := time.Now().Add(2 * time.Second); got != c.fast && time.Now().Before(deadline); got = f.fastConns() {
			time.Sleep(5 * time.Millisecond)
		}
		if got != c.fast {
			t.Errorf("%s: fasthttp holds %d connections, want %d", c.name, got, c.fast)
		}
		conn.Close()
		waitFor(t, func() bool { return f.fastConns() == 0 })
	}
	if got := testutil.ToFloat64(f.srv.metrics.connsServed.WithLabelValues(IngestFastHTTP)); got != 2 {
		t.Errorf("sluice_http_connections_total{server=fasthttp} %v, want 2", got)
	}
	if got := testutil.ToFloat64(f.srv.metrics.connsServed.WithLabelValues(IngestNetHTTP)); got != 1 {
		t.Errorf("sluice_http_connections_total{server=net/http} %v, want 1", got)
	}
}

// TestRequestLine: the method and path of a request's first line.
func TestRequestLine(t *testing.T) {
	for _, c := range []struct {
		head, method, path string
		ok                 bool
	}{
		{"POST /insert/jsonline HTTP/1.1\r\n", "POST", "/insert/jsonline", true},
		{"\r\nPOST /v1/logs?x=1 HTTP/1.1\r\nHost", "POST", "/v1/logs", true},
		{"PUT /idx/_bulk HTTP/1.0\n", "PUT", "/idx/_bulk", true},
		{"POST http://h/insert/jsonline HTTP/1.1\r\n", "", "", false},
		{"POST /insert/jsonline", "", "", false},
		{"GARBAGE\r\n", "", "", false},
	} {
		m, p, ok := requestLine([]byte(c.head))
		if ok != c.ok || string(m) != c.method || string(p) != c.path {
			t.Errorf("%q: %q %q %v", c.head, m, p, ok)
		}
	}
}

// TestFastRoute: which methods and paths fasthttp serves itself.
func TestFastRoute(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	for _, c := range []struct {
		method, path string
		want         bool
	}{
		{"POST", "/insert/jsonline", true},
		{"POST", "/insert/lines", true},
		{"POST", "/loki/api/v1/push", true},
		{"POST", "/v1/logs", true},
		{"POST", "/_bulk", true},
		{"PUT", "/_bulk", true},
		{"POST", "/logs-2026/_bulk", true},
		{"PUT", "/logs/_bulk", true},
		{"PUT", "/insert/jsonline", false},
		{"GET", "/insert/jsonline", false},
		{"POST", "/a/b/_bulk", false},
		{"POST", "//_bulk", false},
		{"POST", "/logs/_doc", false},
		{"GET", "/ready", false},
	} {
		if got := f.srv.isIngestRoute([]byte(c.method), []byte(c.path)); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.method, c.path, got, c.want)
		}
	}
}

// TestRefusalsOverFastHTTP: a request refused before its body is read
// (auth) has its body drained and gets its status, on both transports.
func TestRefusalsOverTransports(t *testing.T) {
	for _, tr := range transports {
		t.Run("server="+trName(tr), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.IngestServer = tr
			cfg.Auth = []Credential{{Token: "secret", Tenants: []string{"*"}}}
			f := newFixture(t, cfg)
			addr := f.serving()
			body := strings.Repeat(`{"msg":"refused","service":"api"}`+"\n", 20000) // ~700 KB
			resp, err := http.Post("http://"+addr+"/insert/jsonline", "application/x-ndjson", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("no credential: %d %q %v", resp.StatusCode, b, resp.Header)
			}
			req, _ := http.NewRequest("POST", "http://"+addr+"/insert/jsonline", strings.NewReader(`{"msg":"let in","service":"api"}`+"\n"))
			req.Header.Set("Authorization", "Bearer secret")
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"accepted":1`) {
				t.Errorf("with the token: %d %s", resp.StatusCode, b)
			}
		})
	}
}

// flakyListener fails its first Accept with EMFILE, as a process out of
// descriptors does.
type flakyListener struct {
	net.Listener
	failed bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if !l.failed {
		l.failed = true
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// TestSplitAcceptRetries: an Accept error that passes (out of
// descriptors) does not stop the split; the next connection is served.
func TestSplitAcceptRetries(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sp := newSplit(&flakyListener{Listener: ln}, time.Second, func(method, path []byte) bool { return true }, func(bool) {})
	done := make(chan error, 1)
	go func() { done <- sp.Run() }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST /insert/jsonline HTTP/1.1\r\n")); err != nil {
		t.Fatal(err)
	}
	got, err := sp.ingest.Accept()
	if err != nil {
		t.Fatalf("the connection after EMFILE: %v", err)
	}
	got.Close()
	sp.close()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestExpectContinueChecksTheHeadFirst: a request that says Expect:
// 100-continue and is refused on its head (no credential, a declared
// body over --max-body-bytes) gets its answer instead of a 100, on both
// transports, without sending its body; the connection closes after the
// answer (net/http then waits for the client to close it, reading what
// it may still send of a small body). One let in gets its 100, then its
// answer.
func TestExpectContinueChecksTheHeadFirst(t *testing.T) {
	for _, tr := range transports {
		t.Run("server="+trName(tr), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.IngestServer = tr
			cfg.MaxBodyBytes = 1000
			cfg.Auth = []Credential{{Token: "secret", Tenants: []string{"*"}}}
			f := newFixture(t, cfg)
			addr := f.serving()
			line := `{"msg":"expect","service":"api"}` + "\n"
			cases := []struct {
				name, auth string
				length     int
				code       int
				says       string
			}{
				{"no credential", "", len(line), 401, "Unauthorized"},
				{"declared over the limit", "Bearer secret", 5000, 413, "--max-body-bytes bounds the body as sent to 1000 bytes"},
				{"let in", "Bearer secret", len(line), 200, `"accepted":1`},
			}
			for _, tc := range cases {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				r := bufio.NewReader(c)
				head := fmt.Sprintf("POST /insert/jsonline HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\nExpect: 100-continue\r\n", tc.length)
				if tc.auth != "" {
					head += "Authorization: " + tc.auth + "\r\n"
				}
				if _, err := io.WriteString(c, head+"\r\n"); err != nil {
					t.Fatal(err)
				}
				resp, err := http.ReadResponse(r, nil)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				if tc.code == 200 {
					if resp.StatusCode != 100 {
						t.Fatalf("%s: %d, want 100 Continue", tc.name, resp.StatusCode)
					}
					io.WriteString(c, line)
					if resp, err = http.ReadResponse(r, nil); err != nil {
						t.Fatalf("%s: %v", tc.name, err)
					}
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.says) {
					t.Errorf("%s: %d %q, want %d saying %q", tc.name, resp.StatusCode, b, tc.code, tc.says)
				}
				if tc.code == 200 {
					continue
				}
				if !resp.Close {
					t.Errorf("%s: the connection stays open after a refusal whose body was never sent", tc.name)
				}
				if tc.code == 401 && resp.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s: no WWW-Authenticate", tc.name)
				}
			}
			// Go's own client, which waits for the 100 (ExpectContinueTimeout)
			// and sends nothing of the body on a final answer.
			client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
			defer client.CloseIdleConnections()
			body := &countingReader{r: strings.NewReader(strings.Repeat(line, 100))}
			req, _ := http.NewRequest("POST", "http://"+addr+"/insert/jsonline", body)
			req.Header.Set("Expect", "100-continue")
			req.ContentLength = int64(100 * len(line))
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 401 || body.n != 0 {
				t.Errorf("net/http client: %d after sending %d bytes of the body, want 401 and none", resp.StatusCode, body.n)
			}
			if got := testutil.ToFloat64(f.srv.metrics.requests.WithLabelValues("jsonline", "401")); got != 2 {
				t.Errorf("jsonline 401s counted: %v, want 2", got)
			}
			if got := testutil.ToFloat64(f.srv.metrics.requests.WithLabelValues("jsonline", "413")); got != 1 {
				t.Errorf("jsonline 413s counted: %v, want 1", got)
			}
		})
	}
}

// TestHeaderLimit: a request head up to --max-header-bytes (plus 4 KiB,
// as net/http counts it) is served on both transports, on a keep-alive
// connection that goes on serving after it (fasthttp hands a head longer
// than its buffer to net/http); a longer one gets 431, naming the limit
// over fasthttp (net/http's own 431 says only its status), and the
// connection closes.
func TestHeaderLimit(t *testing.T) {
	for _, tr := range transports {
		t.Run("server="+trName(tr), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.IngestServer = tr
			cfg.MaxHeaderBytes = 32 << 10
			f := newFixture(t, cfg)
			addr := f.serving()
			push := func(c net.Conn, r *bufio.Reader, pad int) (*http.Response, string) {
				line := `{"msg":"padded","service":"api"}` + "\n"
				req := fmt.Sprintf("POST /insert/jsonline HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\nContent-Length: %d\r\n\r\n%s",
					strings.Repeat("p", pad), len(line), line)
				return rawExchange(t, c, r, req)
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r := bufio.NewReader(c)
			for i, pad := range []int{10, 9 << 10, 20 << 10, 33 << 10, 10} {
				resp, body := push(c, r, pad)
				if resp.StatusCode != 200 || !strings.Contains(body, `"accepted":1`) || resp.Close {
					t.Fatalf("push %d (a %d-byte header): %d %q close=%v", i, pad, resp.StatusCode, body, resp.Close)
				}
			}
			// A long head as a connection's first request, then another.
			c1, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c1.Close()
			r1 := bufio.NewReader(c1)
			for i, pad := range []int{20 << 10, 10} {
				if resp, body := push(c1, r1, pad); resp.StatusCode != 200 || resp.Close {
					t.Fatalf("first connection push %d (a %d-byte header): %d %q", i, pad, resp.StatusCode, body)
				}
			}
			if tr == IngestFastHTTP {
				// Both connections were handed to net/http (counted before
				// it served them).
				if got := testutil.ToFloat64(f.srv.metrics.connsServed.WithLabelValues(IngestNetHTTP)); got != 2 {
					t.Errorf("connections handed to net/http: %v, want 2", got)
				}
			}
			c2, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			r2 := bufio.NewReader(c2)
			if resp, _ := push(c2, r2, 10); resp.StatusCode != 200 {
				t.Fatalf("first push: %d", resp.StatusCode)
			}
			resp, body := push(c2, r2, 40<<10)
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Fatalf("a 40 KiB header: %d %q, want 431", resp.StatusCode, body)
			}
			if tr == IngestFastHTTP && !strings.Contains(body, "--max-header-bytes bounds a request's line and headers to 32768 bytes") {
				t.Errorf("431 says %q, want the limit named", body)
			}
			if _, err := r2.ReadByte(); err == nil {
				t.Errorf("the connection stays open after a 431")
			}
		})
	}
}

// TestFastRequestContext: over fasthttp a request's context is canceled
// when its client goes away after sending the body, as net/http's is;
// a client that sends its next request instead is served as before (the
// byte the watch read goes back in front of the stream).
func TestFastRequestContext(t *testing.T) {
	for _, tr := range transports {
		t.Run("server="+trName(tr), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.IngestServer = tr
			f := newFixture(t, cfg)
			waiting, ended := make(chan struct{}, 1), make(chan error, 1)
			proceed := make(chan struct{})
			f.srv.mux.HandleFunc("POST /test/wait", func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				done := r.Context().Done()
				waiting <- struct{}{}
				select {
				case <-done:
					ended <- r.Context().Err()
				case <-proceed:
					ended <- nil
				}
			})
			addr := f.serving()
			push := "POST /insert/jsonline HTTP/1.1\r\nHost: x\r\nContent-Length: 33\r\n\r\n" + `{"msg":"first","service":"api"}` + "\n\n"
			wait := "POST /test/wait HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody"
			dial := func() (net.Conn, *bufio.Reader) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				r := bufio.NewReader(c)
				// An ingest request first: the connection is fasthttp's
				// when that is the transport.
				if resp, body := rawExchange(t, c, r, push); resp.StatusCode != 200 {
					t.Fatalf("push: %d %s", resp.StatusCode, body)
				}
				return c, r
			}

			c, _ := dial()
			io.WriteString(c, wait)
			<-waiting
			c.Close()
			if err := <-ended; !errors.Is(err, context.Canceled) {
				t.Errorf("client gone: the request's context says %v, want canceled", err)
			}

			c, r := dial()
			io.WriteString(c, wait)
			<-waiting
			// The next request, pipelined, while the handler waits.
			io.WriteString(c, push)
			close(proceed)
			if err := <-ended; err != nil {
				t.Errorf("client still there: %v", err)
			}
			for _, want := range []int{200, 200} {
				resp, err := http.ReadResponse(r, nil)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("after the wait: %d %s, want %d", resp.StatusCode, b, want)
				}
			}
		})
	}
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
