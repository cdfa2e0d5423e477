package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
	"github.com/sluicelog/sluice/internal/wal"
)

// smallPushes are the one-line pushes of issue 18's small-request figure,
// as `sluice bench --batch 1` sends them.
var smallPushes = []struct {
	name, path, ctype, body string
	code                    int
}{
	{"jsonline", "/insert/jsonline", "application/x-ndjson",
		`{"level":"info","msg":"GET /api/users 200","method":"GET","path":"/api/users","status":200,"bytes":5120,"duration_ms":12.500,"client":"10.1.2.3","trace_id":"00000000deadbeef"}` + "\n", 200},
	{"loki-json", "/loki/api/v1/push", "application/json",
		`{"streams":[{"stream":{"job":"sluice-bench"},"values":[["1768435200000000000","{\"level\":\"info\",\"msg\":\"GET /api/users 200\",\"status\":200}"]]}]}`, 204},
}

// openBenchStore opens a store on the real filesystem, so that every
// acknowledgement waits for an fdatasync (the WAL's group commit).
func openBenchStore(b *testing.B) *store.Store {
	return openBenchStoreSync(b, wal.SyncPolicy{Mode: wal.SyncAlways})
}

// openBenchStoreSync is openBenchStore with the WAL's sync policy: under
// SyncNever a request's time is its CPU, not an fdatasync's wait.
func openBenchStoreSync(b *testing.B, sync wal.SyncPolicy) *store.Store {
	b.Helper()
	st, err := store.Open(store.Options{FS: vfs.OS, Dir: b.TempDir(), Logger: quiet, Sync: sync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// discardWriter is a ResponseWriter that keeps the status and drops the
// body, reused across requests so that the benchmark counts the
// handler's allocations alone.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

// SetReadDeadline is there as the server's ResponseWriter has it (the
// body's pacing sets deadlines); there is no connection.
func (w *discardWriter) SetReadDeadline(time.Time) error { return nil }

// BenchmarkSmallPush is one one-line push, durable, through the server's
// handler (the mux, the ingest wrapper, the body, the parse, the flow, the
// WAL's group commit with an fdatasync, the head): allocs/op and B/op are
// the handler's own, the request and the ResponseWriter being reused.
// sync=never leaves the fdatasync out (not durable): ns/op is then the
// handler's CPU, what a cut in it shows in.
//
//	go test -run '^$' -bench SmallPush -benchmem ./internal/server/
func BenchmarkSmallPush(b *testing.B) {
	syncs := []struct {
		name   string
		policy wal.SyncPolicy
	}{{"always", wal.SyncPolicy{Mode: wal.SyncAlways}}, {"never", wal.SyncPolicy{Mode: wal.SyncNever}}}
	for _, p := range smallPushes {
		for _, sy := range syncs {
			b.Run("proto="+p.name+"/sync="+sy.name, func(b *testing.B) {
				benchSmallPush(b, p.path, p.ctype, p.body, p.code, openBenchStoreSync(b, sy.policy))
			})
		}
	}
	// The same through fasthttp's side of the seam (fastExchange): a
	// RequestCtx reused, its body a stream, as the fasthttp server hands
	// it over (its parsing of the request is not in it).
	for _, p := range smallPushes {
		for _, sy := range syncs {
			b.Run("server=fasthttp/proto="+p.name+"/sync="+sy.name, func(b *testing.B) {
				benchSmallPushFast(b, p.path, p.ctype, p.body, p.code, openBenchStoreSync(b, sy.policy))
			})
		}
	}
}

// benchSmallPushFast is benchSmallPush through serveExchange.
func benchSmallPushFast(b *testing.B, path, ctype, payload string, want int, st *store.Store) {
	srv, h := fastPushServer(b, st, path)
	body := []byte(payload)
	ctx := newPushCtx(tcpConn(b), path, ctype)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if code := servePush(srv, h, ctx, body); code != want {
			b.Fatalf("status %d: %s", code, ctx.Response.Body())
		}
	}
}

// fastPushServer returns a server on st and its fasthttp handler of the
// ingest route path.
func fastPushServer(tb testing.TB, st *store.Store, path string) (*Server, http.HandlerFunc) {
	srv := New(plainConfig(), st, quiet, prometheus.NewRegistry())
	h := srv.fastRoute([]byte("POST"), []byte(path)).h
	if h == nil {
		tb.Fatalf("%s is no ingest route", path)
	}
	return srv, h
}

// tcpConn returns one end of a loopback TCP connection, closed at the
// test's end: what a RequestCtx needs for the paced reads' deadlines
// (Init's has none; net.Pipe's allocate a timer per deadline, a TCP
// one's do not). Its deadlines may be set from many goroutines.
func tcpConn(tb testing.TB) net.Conn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		conn.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		peer.Close()
	})
	return conn
}

// pushCtx is a RequestCtx holding a POST, as the fasthttp server hands
// one over (its parsing of the request is not in it), and the reader of
// its body.
type pushCtx struct {
	fasthttp.RequestCtx
	rd bytes.Reader
}

// newPushCtx returns a pushCtx on conn of a POST of path.
func newPushCtx(conn net.Conn, path, ctype string) *pushCtx {
	c := new(pushCtx)
	c.Init2(conn, log.New(io.Discard, "", 0), false)
	c.Request.Header.SetMethod("POST")
	c.Request.SetRequestURI("http://127.0.0.1" + path)
	c.Request.Header.SetContentType(ctype)
	return c
}

// servePush serves c's request with body, a stream, through h, and
// returns the status.
func servePush(srv *Server, h http.HandlerFunc, c *pushCtx, body []byte) int {
	c.rd.Reset(body)
	c.Request.SetBodyStream(&c.rd, len(body))
	c.Response.Reset()
	srv.serveExchange(&c.RequestCtx, h)
	return c.Response.StatusCode()
}

// BenchmarkSmallPushConcurrent is BenchmarkSmallPush's fasthttp side with
// 256 requests in flight at once, as the small-request figure has them
// (bench/small.sh): the WAL's group commit takes a group of them per write,
// and a request waiting for its group lets the others run, so that ns/op
// under -cpu 1 is the server's CPU per request after the HTTP parsing
// (no socket I/O of the request's own), the WAL writer's and the head's
// share included. sync=never keeps the fdatasync's wait out of it (the
// CPU is the same either way; with the wait, a core idles). cpu-ns/op is
// the process's CPU time per request: on a shared machine the wall time
// counts the other processes' turns too.
//
//	taskset -c 1 go test -run '^$' -bench SmallPushConcurrent -benchmem -cpu 1 ./internal/server/
func BenchmarkSmallPushConcurrent(b *testing.B) {
	for _, p := range smallPushes {
		b.Run("proto="+p.name, func(b *testing.B) {
			srv, h := fastPushServer(b, openBenchStoreSync(b, wal.SyncPolicy{Mode: wal.SyncNever}), p.path)
			body := []byte(p.body)
			conn := tcpConn(b)
			const inFlight = 256
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			b.SetParallelism((inFlight + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			var ru0, ru1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			b.RunParallel(func(pb *testing.PB) {
				ctx := newPushCtx(conn, p.path, p.ctype)
				for pb.Next() {
					if code := servePush(srv, h, ctx, body); code != p.code {
						b.Errorf("status %d: %s", code, ctx.Response.Body())
						return
					}
				}
			})
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			used := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
			b.ReportMetric(float64(used)/float64(b.N), "cpu-ns/op")
		})
	}
}

// TestOneLinePushAllocs counts the allocations of a one-line jsonline push
// through the fasthttp side of the seam: one, the request's header string
// (the blocks, their data and the Pendings are carved from slabs shared by
// many requests). A request that takes its in-flight slot at once asks its
// context for no Done channel (goneCtx makes one).
func TestOneLinePushAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	st, err := store.Open(store.Options{FS: vfs.OS, Dir: t.TempDir(), Logger: quiet, Sync: wal.SyncPolicy{Mode: wal.SyncNever}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := smallPushes[0]
	srv, h := fastPushServer(t, st, p.path)
	ctx := newPushCtx(tcpConn(t), p.path, p.ctype)
	body := []byte(p.body)
	var code int
	allocs := testing.AllocsPerRun(200, func() { code = servePush(srv, h, ctx, body) })
	if code != p.code {
		t.Fatalf("status %d: %s", code, ctx.Response.Body())
	}
	if allocs > 1 {
		t.Errorf("%.0f allocations per one-line push through fasthttp, want at most 1", allocs)
	}
}

// benchSmallPush sends the push p, over and over, through a server on st.
func benchSmallPush(b *testing.B, path, ctype, payload string, want int, st *store.Store) {
	h := New(plainConfig(), st, quiet, prometheus.NewRegistry()).Handler()
	body := []byte(payload)
	req, err := http.NewRequest("POST", "http://127.0.0.1"+path, nil)
	if err != nil {
		b.Fatal(err)
	}
	req = req.WithContext(context.Background())
	req.Header.Set("Content-Type", ctype)
	serveOver(b, h, req, body, len(body), func(code int) bool { return code == want || code == 0 && want == 200 })
}

// serveOver is a benchmark's loop: req with body, through h, over and
// over, each answer's status checked by ok; an op counts opBytes.
func serveOver(b *testing.B, h http.Handler, req *http.Request, body []byte, opBytes int, ok func(code int) bool) {
	rd := bytes.NewReader(body)
	req.ContentLength = int64(len(body))
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.SetBytes(int64(opBytes))
	for b.Loop() {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		clear(w.h)
		w.code = 0
		h.ServeHTTP(w, req)
		if !ok(w.code) {
			b.Fatalf("status %d", w.code)
		}
	}
}

// BenchmarkSmallPushLoopback is one one-line push, durable, over a
// keep-alive loopback connection to the server (net/http included):
// conns connections, each with one request in flight, written by a bare
// client that allocates nothing per request, so that allocs/op and B/op
// are the server's per request (runtime.MemStats over the run, which
// counts every goroutine).
//
//	go test -run '^$' -bench SmallPushLoopback -benchmem ./internal/server/
func BenchmarkSmallPushLoopback(b *testing.B) {
	for _, tr := range transports {
		for _, p := range smallPushes {
			for _, conns := range []int{1, 64, 256} {
				b.Run(fmt.Sprintf("server=%s/proto=%s/conns=%d", trName(tr), p.name, conns), func(b *testing.B) {
					benchSmallPushLoopback(b, tr, p.path, p.ctype, p.body, p.code, conns)
				})
			}
		}
	}
}

// benchSmallPushLoopback pushes payload to path over conns kept-alive
// loopback connections to a server whose ingest is on transport.
func benchSmallPushLoopback(b *testing.B, transport, path, ctype, payload string, want, conns int) {
	cfg := plainConfig()
	cfg.IngestServer = transport
	srv := New(cfg, openBenchStore(b), quiet, prometheus.NewRegistry())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			b.Error(err)
		}
	}()
	req := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
		path, ctype, len(payload), payload)
	pool := make(chan *rawClient, conns)
	for range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		pool <- &rawClient{c: c, r: bufio.NewReader(c)}
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	b.SetParallelism((conns + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		c := <-pool // at most conns goroutines of the run send
		defer func() { pool <- c }()
		for pb.Next() {
			code, err := c.roundTrip(req)
			if err != nil || code != want {
				b.Errorf("push: status %d, %v", code, err)
				return
			}
		}
	})
}

// rawClient sends a fixed request and reads its answer on one kept-alive
// connection, allocating nothing per request.
type rawClient struct {
	c net.Conn
	r *bufio.Reader
}

// roundTrip writes req and reads one answer; it returns its status.
func (c *rawClient) roundTrip(req []byte) (int, error) {
	if _, err := c.c.Write(req); err != nil {
		return 0, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	// "HTTP/1.1 204 No Content\r\n"
	if len(line) < 12 {
		return 0, fmt.Errorf("status line %q", line)
	}
	code := int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	length := 0
	for {
		line, err = c.r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(line) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("content-length")) {
			length, err = strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				return 0, fmt.Errorf("content-length %q", v)
			}
		}
	}
	if _, err := c.r.Discard(length); err != nil {
		return 0, err
	}
	return code, nil
}

// BenchmarkZstdPush is a push of 1000 NDJSON lines in a zstd body, as the
// SDK sends them, through the handler: what decompression costs per
// request beside the lines.
//
//	go test -run '^$' -bench ZstdPush -benchmem ./internal/server/
func BenchmarkZstdPush(b *testing.B) {
	h := New(plainConfig(), openBenchStore(b), quiet, prometheus.NewRegistry()).Handler()
	var raw []byte
	for i := range 1000 {
		raw = fmt.Appendf(raw, `{"level":"info","msg":"request %d served","status":200,"service":"api"}`+"\n", i)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		b.Fatal(err)
	}
	body := enc.EncodeAll(raw, nil)
	enc.Close()
	req, err := http.NewRequest("POST", "http://127.0.0.1/insert/jsonline", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Content-Encoding", "zstd")
	serveOver(b, h, req, body, len(raw), func(code int) bool { return code == 200 })
}
