package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/vfs"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// fasthttp's: a process-wide clock of the Date header, and the
		// worker pool's cleaner, which sees the pool stopped only at its
		// next tick (10 s).
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"))
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type fixture struct {
	t   *testing.T
	fs  *vfs.MemFS
	st  *store.Store
	srv *Server
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	fs := vfs.NewMem()
	st, err := store.Open(store.Options{FS: fs, Dir: "data", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &fixture{t: t, fs: fs, st: st, srv: New(cfg, st, quiet, prometheus.NewRegistry())}
}

func (f *fixture) do(method, path string, body []byte, headers ...string) (int, string) {
	f.t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// stored returns the lines of a tenant, each as "stream line".
func (f *fixture) stored(tenant string) []string {
	f.t.Helper()
	sn := f.st.Snapshot()
	defer sn.Release()
	var out []string
	err := sn.Lines(context.Background(), []string{tenant}, math.MinInt64, math.MaxInt64, nil, func(_ string, ls record.Labels, r *rows.Row) error {
		out = append(out, ls.String()+" "+string(r.Line))
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

func TestJSONLine(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	body := []byte(`{"time":"2026-01-15T08:00:00Z","msg":"hello","service":"api","app":"a1"}
{"bad json
{"ts":1768464000001,"message":"two","service":"web"}
`)
	code, reply := f.do("POST", "/insert/jsonline?_stream_fields=service", body)
	if code != 200 || !strings.Contains(reply, `"accepted":2`) || !strings.Contains(reply, `"rejected":1`) || !strings.Contains(reply, `2:11: json`) {
		t.Fatalf("reply %d %s", code, reply)
	}
	// Visible at once, streams as asked (app is not a stream field here).
	want := []string{
		`{service="api"} {"time":"2026-01-15T08:00:00Z","msg":"hello","service":"api","app":"a1"}`,
		`{service="web"} {"ts":1768464000001,"message":"two","service":"web"}`,
	}
	if got := f.stored("default"); !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	// The same through headers, and a time field list.
	code, _ = f.do("POST", "/insert/jsonline", []byte(`{"when":"2026-01-15T09:00:00Z","log":"x","app":"z"}`+"\n"),
		"VL-Stream-Fields", "app", "VL-Time-Field", "nope,when", "X-Scope-OrgID", "t2")
	if got := f.stored("t2"); code != 200 || len(got) != 1 || !strings.HasPrefix(got[0], `{app="z"}`) {
		t.Errorf("headers: %d %q", code, got)
	}
	// Nothing valid: 400.
	if code, reply := f.do("POST", "/insert/jsonline", []byte("not json\n")); code != 400 {
		t.Errorf("all lines bad: %d %s, want 400", code, reply)
	}
	// Unsupported parameters are refused, not ignored.
	if code, _ := f.do("POST", "/insert/jsonline?ignore_fields=a", body); code != 400 {
		t.Errorf("ignore_fields: %d, want 400", code)
	}
}

func TestLines(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	code, reply := f.do("POST", "/insert/lines?format=logfmt", []byte("ts=2026-01-15T08:00:00Z level=info msg=hi service=api\n"))
	if code != 200 || !strings.Contains(reply, `"accepted":1`) {
		t.Fatalf("logfmt: %d %s", code, reply)
	}
	if code, _ := f.do("POST", "/insert/lines?format=nope", []byte("x\n")); code != 400 {
		t.Errorf("unknown format: %d, want 400", code)
	}
}

func TestLokiJSON(t *testing.T) {
	f := newFixture(t, plainConfig())
	body := []byte(`{"streams":[{"stream":{"env":"prod","app":"x"},"values":[["1768464000000000000","line one"],["1768464000000000001","line two",{"trace_id":"abc"}]]}]}`)
	code, reply := f.do("POST", "/loki/api/v1/push", body, "Content-Type", "application/json", "X-Scope-OrgID", "team-a")
	if code != 204 {
		t.Fatalf("push: %d %s", code, reply)
	}
	want := []string{`{app="x", env="prod"} line one`, `{app="x", env="prod"} line two`}
	if got := f.stored("team-a"); !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	if got := f.stored("default"); len(got) != 0 {
		t.Errorf("tenant default sees team-a's lines: %q", got)
	}
	// A bad entry: 400 with the reason, the valid ones stored.
	body = []byte(`{"streams":[{"stream":{"app":"y"},"values":[["bad","x"],["1768464000000000002","kept"]]},{"stream":{"0bad":"v"},"values":[["1","z"]]}]}`)
	code, reply = f.do("POST", "/loki/api/v1/push", body, "Content-Type", "application/json", "X-Scope-OrgID", "team-b")
	if code != 400 || !strings.Contains(reply, "2 of 3 entries rejected") || !strings.Contains(reply, "invalid label name") {
		t.Errorf("bad entries: %d %s", code, reply)
	}
	if got := f.stored("team-b"); !slices.Equal(got, []string{`{app="y"} kept`}) {
		t.Errorf("stored %q", got)
	}
	if code, _ := f.do("POST", "/loki/api/v1/push", []byte(`{"streams":`), "Content-Type", "application/json"); code != 400 {
		t.Errorf("malformed JSON: %d, want 400", code)
	}
}

// pushProto encodes a logproto.PushRequest as the Go client does.
func pushProto(labels string, lines ...string) []byte {
	var entries []byte
	for i, l := range lines {
		var ts []byte
		ts = protowire.AppendTag(ts, 1, protowire.VarintType)
		ts = protowire.AppendVarint(ts, 1768464000)
		ts = protowire.AppendTag(ts, 2, protowire.VarintType)
		ts = protowire.AppendVarint(ts, uint64(i))
		var e []byte
		e = protowire.AppendTag(e, 1, protowire.BytesType)
		e = protowire.AppendBytes(e, ts)
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendString(e, l)
		var kv []byte
		kv = protowire.AppendTag(kv, 1, protowire.BytesType)
		kv = protowire.AppendString(kv, "i")
		kv = protowire.AppendTag(kv, 2, protowire.BytesType)
		kv = protowire.AppendString(kv, strings.Repeat("v", i+1))
		e = protowire.AppendTag(e, 3, protowire.BytesType)
		e = protowire.AppendBytes(e, kv)
		entries = protowire.AppendTag(entries, 2, protowire.BytesType)
		entries = protowire.AppendBytes(entries, e)
	}
	var s []byte
	s = protowire.AppendTag(s, 1, protowire.BytesType)
	s = protowire.AppendString(s, labels)
	s = append(s, entries...)
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendBytes(req, s)
	return snappy.Encode(nil, req)
}

func TestLokiProto(t *testing.T) {
	f := newFixture(t, plainConfig())
	body := pushProto(`{job="varlogs", host="h\"1"}`, "first", "second")
	code, reply := f.do("POST", "/loki/api/v1/push", body, "Content-Type", "application/x-protobuf")
	if code != 204 {
		t.Fatalf("push: %d %s", code, reply)
	}
	want := []string{`{host="h\"1", job="varlogs"} first`, `{host="h\"1", job="varlogs"} second`}
	if got := f.stored("default"); !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	// tracing-loki and Vector say Content-Encoding: snappy of the same
	// body; Loki ignores the header, and so does the push path.
	code, reply = f.do("POST", "/loki/api/v1/push", pushProto(`{job="rust"}`, "third"), "Content-Type", "application/x-protobuf", "Content-Encoding", "snappy")
	if code != 204 {
		t.Fatalf("push with Content-Encoding snappy: %d %s", code, reply)
	}
	if got := f.stored("default"); len(got) != 3 || got[2] != `{job="rust"} third` {
		t.Errorf("stored %q", got)
	}
	// Elsewhere snappy is not a content coding.
	if code, _ := f.do("POST", "/insert/jsonline", []byte(`{"msg":"x"}`), "Content-Encoding", "snappy"); code != 415 {
		t.Errorf("jsonline with Content-Encoding snappy: %d, want 415", code)
	}
	for _, bad := range [][]byte{[]byte("not snappy"), snappy.Encode(nil, []byte{0x0a, 0xff})} {
		if code, _ := f.do("POST", "/loki/api/v1/push", bad, "Content-Type", "application/x-protobuf"); code != 400 {
			t.Errorf("malformed protobuf: %d, want 400", code)
		}
	}
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestLimits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxBodyBytes = 64 << 10
	cfg.MaxDecodedBytes = 1 << 20
	cfg.MaxWholeBodyBytes = 1 << 20
	f := newFixture(t, cfg)
	// Compressed body within the limit.
	line := []byte(`{"msg":"zipped","service":"api"}` + "\n")
	if code, reply := f.do("POST", "/insert/jsonline", gz(line), "Content-Encoding", "gzip"); code != 200 {
		t.Fatalf("gzip: %d %s", code, reply)
	}
	// Too large as sent.
	big := bytes.Repeat(line, 4000)
	if code, _ := f.do("POST", "/insert/jsonline", big); code != 413 {
		t.Errorf("large body: %d, want 413", code)
	}
	// A decompression bomb: 64 MB of zeros in about 64 KB is cut at
	// the decoded limit.
	bomb := gz(make([]byte, 64<<20))
	if len(bomb) > int(cfg.MaxBodyBytes) {
		cfg2 := cfg
		cfg2.MaxBodyBytes = int64(len(bomb)) + 1
		f = newFixture(t, cfg2)
	}
	if code, reply := f.do("POST", "/loki/api/v1/push", bomb, "Content-Encoding", "gzip", "Content-Type", "application/json"); code != 413 {
		t.Errorf("bomb to loki: %d %.100s, want 413", code, reply)
	}
	if code, reply := f.do("POST", "/insert/jsonline", bomb, "Content-Encoding", "gzip"); code != 413 && code != 400 {
		t.Errorf("bomb to jsonline: %d %.100s, want 413", code, reply)
	}
	if code, _ := f.do("POST", "/insert/jsonline", line, "Content-Encoding", "br"); code != 415 {
		t.Errorf("unknown encoding: %d, want 415", code)
	}
}

func TestTenants(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	for _, bad := range []string{"../x", "%2e%2e%2fx", "%252e%252e", "a/b", "a b", strings.Repeat("t", 151)} {
		if code, _ := f.do("POST", "/insert/jsonline", []byte(`{"msg":"x"}`+"\n"), "X-Scope-OrgID", bad); code != 400 {
			t.Errorf("tenant %q: %d, want 400", bad, code)
		}
	}
	if code, _ := f.do("POST", "/insert/jsonline", []byte(`{"msg":"x"}`+"\n"), "X-Scope-OrgID", "team%2Da"); code != 200 {
		t.Errorf("encoded tenant: %d", code)
	}
	if got := f.stored("team-a"); len(got) != 1 {
		t.Errorf("team-a has %q", got)
	}
}

// TestDurable: once a push is answered 2xx, a power loss keeps it.
func TestDurable(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	if code, _ := f.do("POST", "/insert/jsonline", []byte(`{"msg":"durable","service":"api"}`+"\n")); code != 200 {
		t.Fatal(code)
	}
	crashed := f.fs.Crash(vfs.CrashOptions{})
	st, err := store.Open(store.Options{FS: crashed, Dir: "data", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sn := st.Snapshot()
	defer sn.Release()
	n := 0
	sn.Lines(context.Background(), nil, math.MinInt64, math.MaxInt64, nil, func(string, record.Labels, *rows.Row) error { n++; return nil })
	if n != 1 {
		t.Errorf("%d lines after a crash, want 1", n)
	}
}

func TestReadyAndMetrics(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	if code, _ := f.do("GET", "/ready", nil); code != 503 {
		t.Errorf("ready before Serve: %d, want 503", code)
	}
	close(f.srv.ready)
	if code, _ := f.do("GET", "/ready", nil); code != 200 {
		t.Errorf("ready: %d", code)
	}
	f.do("POST", "/insert/jsonline", []byte(`{"msg":"x","service":"api"}`+"\n"))
	code, body := f.do("GET", "/metrics", nil)
	for _, want := range []string{`sluice_ingest_lines_total{protocol="jsonline",tenant="default"} 1`, "sluice_store_head_rows 1", "go_goroutines"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if code, _ := f.do("GET", "/debug/pprof/", nil); code != 404 {
		t.Errorf("pprof by default: %d, want 404 (off unless enabled)", code)
	}
	cfg := DefaultConfig()
	cfg.Pprof = true
	if code, _ := newFixture(t, cfg).do("GET", "/debug/pprof/", nil); code != 200 {
		t.Errorf("pprof enabled: %d", code)
	}
}

// TestServeShutdown: Serve returns once its context is done.
func TestServeShutdown(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	ts := httptest.NewUnstartedServer(nil)
	ln := ts.Listener
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Serve(ctx, ln) }()
	resp, err := http.Post("http://"+ln.Addr().String()+"/insert/jsonline", "application/x-ndjson", strings.NewReader(`{"msg":"x"}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestAuth(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Auth = []Credential{{Token: "tok-a", Tenants: []string{"team-a"}}, {User: "u", Password: "p", Tenants: []string{"*"}}}
	f := newFixture(t, cfg)
	line := []byte(`{"msg":"x"}` + "\n")
	for _, tc := range []struct {
		headers []string
		code    int
	}{
		{nil, 401},
		{[]string{"Authorization", "Bearer nope", "X-Scope-OrgID", "team-a"}, 401},
		{[]string{"Authorization", "Bearer tok-a", "X-Scope-OrgID", "team-a"}, 200},
		{[]string{"Authorization", "Bearer tok-a", "X-Scope-OrgID", "team-b"}, 403},
		{[]string{"Authorization", "Basic dTpw", "X-Scope-OrgID", "team-b"}, 200}, // u:p
		{[]string{"Authorization", "Basic dTp4", "X-Scope-OrgID", "team-b"}, 401}, // u:x
	} {
		if code, body := f.do("POST", "/insert/jsonline", line, tc.headers...); code != tc.code {
			t.Errorf("%v: %d %s, want %d", tc.headers, code, body, tc.code)
		}
	}
	if code, _ := f.do("GET", "/ready", nil); code == 401 {
		t.Error("/ready needs no credentials")
	}
}

func TestTenantRate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TenantRate = RateLimit{LinesPerSecond: 1, Burst: 1}
	f := newFixture(t, cfg)
	lines := []byte(strings.Repeat(`{"msg":"x"}`+"\n", 50))
	if code, _ := f.do("POST", "/insert/jsonline", lines, "X-Scope-OrgID", "busy"); code != 200 {
		t.Fatalf("first request: %d", code)
	}
	req := httptest.NewRequest("POST", "/insert/jsonline", bytes.NewReader(lines))
	req.Header.Set("X-Scope-OrgID", "busy")
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Errorf("over the rate: %d (Retry-After %q), want 429", rec.Code, rec.Header().Get("Retry-After"))
	}
	if code, _ := f.do("POST", "/insert/jsonline", lines, "X-Scope-OrgID", "calm"); code != 200 {
		t.Errorf("another tenant: %d, want 200", code)
	}
}

func TestDiskFull(t *testing.T) {
	cfg := DefaultConfig()
	free := uint64(1 << 30)
	cfg.FreeSpace = func() (uint64, error) { return free, nil }
	f := newFixture(t, cfg)
	line := []byte(`{"msg":"x"}` + "\n")
	if code, _ := f.do("POST", "/insert/jsonline", line); code != 200 {
		t.Fatalf("%d", code)
	}
	free = 1 << 20
	f.srv.disk.checked = time.Time{}
	if code, _ := f.do("POST", "/insert/jsonline", line); code != 507 {
		t.Errorf("nearly full: %d, want 507", code)
	}
	free = 1 << 30
	f.srv.disk.checked = time.Time{}
	if code, _ := f.do("POST", "/insert/jsonline", line); code != 200 {
		t.Errorf("space freed: %d, want 200", code)
	}
}

// TestDiskFullMidRequest: a line request whose later chunks the store
// cannot take answers 507 saying how many of its lines were stored, and
// exactly those are.
func TestDiskFullMidRequest(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	var body []byte
	for i := 0; len(body) < 12<<20; i++ {
		body = fmt.Appendf(body, `{"ts":%d,"msg":"line %d %s"}`+"\n", 1768464000000+i, i, strings.Repeat("x", 200))
	}
	f.fs.SetCapacity(f.fs.Used() + 6<<20)
	code, reply := f.do("POST", "/insert/jsonline", body)
	if code != 507 {
		t.Fatalf("%d %s, want 507", code, reply)
	}
	var stored int
	if _, err := fmt.Sscanf(reply[strings.Index(reply, "(the first"):], "(the first %d lines", &stored); err != nil {
		t.Fatalf("the reply does not say how many lines were stored: %q", reply)
	}
	got := f.stored("default")
	if stored == 0 || len(got) != stored {
		t.Errorf("the reply says %d lines were stored; the store has %d", stored, len(got))
	}
}

// TestCompressedBodiesReuseDecoders: zstd and gzip bodies one after
// another, a corrupt one and a truncated one among them, each decoded
// by a decompressor the one before gave back: every good body is stored
// whole, the corrupt ones refused, and nothing of one leaks into the next.
func TestCompressedBodiesReuseDecoders(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	zenc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer zenc.Close()
	zst := func(b []byte) []byte { return zenc.EncodeAll(b, nil) }
	var want []string
	for i := range 6 {
		for _, enc := range []string{"zstd", "gzip"} {
			line := fmt.Sprintf(`{"msg":"%s %d","service":"api"}`, enc, i)
			body := []byte(strings.Repeat(line+"\n", i+1))
			packed := gz(body)
			if enc == "zstd" {
				packed = zst(body)
			}
			switch i {
			case 2: // corrupt after the header
				bad := slices.Clone(packed)
				for j := len(bad) / 2; j < len(bad); j++ {
					bad[j] ^= 0x5a
				}
				if code, reply := f.do("POST", "/insert/jsonline", bad, "Content-Encoding", enc); code/100 == 2 {
					t.Errorf("%s corrupt: %d %s, want an error", enc, code, reply)
				}
				continue
			case 4: // cut short (a gzip body in its trailer, whose checksum is then never read)
				if code, reply := f.do("POST", "/insert/jsonline", packed[:len(packed)-4], "Content-Encoding", enc); code/100 == 2 {
					t.Errorf("%s cut short: %d %s, want an error", enc, code, reply)
				}
				continue
			}
			if code, reply := f.do("POST", "/insert/jsonline", packed, "Content-Encoding", enc); code != 200 {
				t.Fatalf("%s body %d: %d %s", enc, i, code, reply)
			}
			for range i + 1 {
				want = append(want, `{service="api"} `+line)
			}
		}
	}
	got := f.stored("default")
	slices.Sort(got)
	slices.Sort(want)
	// The truncated bodies may have stored the lines before the cut.
	got = slices.DeleteFunc(got, func(s string) bool { return strings.Contains(s, " 4\"") })
	if !slices.Equal(got, want) {
		t.Errorf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLineBodyOfManyChunks: a streamed line body is stored whole, each
// chunk once, though the two chunks in flight at a time are kept in two
// slots the handler reuses.
func TestLineBodyOfManyChunks(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	var body []byte
	n := 0
	for ; len(body) < 12<<20; n++ {
		body = fmt.Appendf(body, `{"ts":%d,"msg":"line %d %s"}`+"\n", 1768464000000+n, n, strings.Repeat("x", 200))
	}
	code, reply := f.do("POST", "/insert/jsonline", body)
	if code != 200 || !strings.Contains(reply, fmt.Sprintf(`"accepted":%d`, n)) {
		t.Fatalf("%d %s, want 200 accepting %d lines", code, reply, n)
	}
	got := f.stored("default")
	seen := make(map[string]bool, len(got))
	for _, l := range got {
		seen[l] = true
	}
	if len(got) != n || len(seen) != n {
		t.Errorf("%d lines stored, %d of them distinct; want %d", len(got), len(seen), n)
	}
}
