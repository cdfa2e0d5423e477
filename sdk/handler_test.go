package sdk

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/slogtest"
	"time"

	"github.com/rs/zerolog"
)

func TestHandlerSlogtest(t *testing.T) {
	s := &sink{}
	c := mustNew(t, Config{URL: newSink(t, s), Compression: CompressionNone, Senders: 1,
		BatchRecords: 1 << 20, Linger: time.Hour})
	h := NewHandler(c, &HandlerOptions{Level: slog.LevelDebug})
	results := func() []map[string]any {
		if err := c.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, lines, _ := s.snapshot()
		var out []map[string]any
		for _, m := range lines {
			// The time travels as _time; dotted names are groups.
			if v, ok := m["_time"]; ok {
				delete(m, "_time")
				m[slog.TimeKey] = v
			}
			out = append(out, nest(m))
		}
		return out
	}
	if err := slogtest.TestHandler(h, results); err != nil {
		t.Error(err)
	}
}

// nest turns dotted keys into nested maps, as slogtest wants groups.
func nest(m map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range slicesSorted(m) {
		parts := strings.Split(k, ".")
		cur := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := cur[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
		cur[parts[len(parts)-1]] = m[k]
	}
	return out
}

func slicesSorted(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range maps.Keys(m) {
		ks = append(ks, k)
	}
	return ks
}

func TestHandlerFieldsAndLabels(t *testing.T) {
	s := &sink{}
	c := mustNew(t, Config{URL: newSink(t, s), Linger: time.Hour})
	h := NewHandler(c, &HandlerOptions{LabelKeys: []string{"service", "req.route"}, AddSource: true})
	log := slog.New(h).With("service", "api", "version", 3).WithGroup("req")
	log.Info("served", "route", "/users", "status", 200, "took", time.Millisecond,
		slog.Group("user", "id", 7, "admin", true), "err", errors.New("it \"broke\""))
	log.Debug("not logged")
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, lines, _ := s.snapshot()
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	m := lines[0]
	want := map[string]any{
		"level": "INFO", "msg": "served", "service": "api", "version": float64(3),
		"req.route": "/users", "req.status": float64(200), "req.took": float64(time.Millisecond),
		"req.user.id": float64(7), "req.user.admin": true, "req.err": `it "broke"`,
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	if src, _ := m["source"].(string); !strings.Contains(src, "handler_test.go:") {
		t.Errorf("source = %q", src)
	}
	s.mu.Lock()
	q := s.queries[0]
	s.mu.Unlock()
	if !strings.Contains(q, "service") || !strings.Contains(q, "req.route") || strings.Contains(q, "version") {
		t.Errorf("stream fields in %q: want service and req.route only", q)
	}
}

// capturing returns a Client of cfg whose posts are kept, and what it
// posted so far.
func capturing(t *testing.T, cfg Config) (*Client, func() []byte) {
	var mu sync.Mutex
	var body []byte
	c := mustNew(t, cfg)
	c.testPost = func(b []byte) error {
		mu.Lock()
		body = append(body, b...)
		mu.Unlock()
		return nil
	}
	return c, func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(body)
	}
}

// The line Handle writes whole (NDJSON, no label keys) is byte for byte
// what Send makes of the Handler's object: _time, Config.Labels' fields,
// then the record's.
func TestHandlerWholeLine(t *testing.T) {
	c, sent := capturing(t, Config{URL: "http://127.0.0.1:1", Compression: CompressionNone, Linger: time.Hour,
		Labels: []Label{{Name: "service", Value: "api"}, {Name: "env", Value: "prod"}}})
	h := NewHandler(c, &HandlerOptions{Level: slog.LevelDebug}).WithAttrs([]slog.Attr{slog.String("host", "h1")})
	ctx := context.Background()
	ts := time.Date(2026, 1, 15, 8, 0, 0, 123456789, time.UTC)
	for _, rt := range []time.Time{ts, {}} {
		for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError, slog.LevelInfo + 2} {
			r := slog.NewRecord(rt, level, "a \"quoted\" msg", 0)
			r.AddAttrs(slog.Int("n", -7), slog.Float64("f", 0.25), slog.String("s", "x\ny"))
			if err := h.Handle(ctx, r); err != nil {
				t.Fatal(err)
			}
			obj := `{"level":"` + level.String() + `","msg":"a \"quoted\" msg","host":"h1","n":-7,"f":0.25,"s":"x\ny"}`
			if err := c.Send(rt, []byte(obj)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	body := sent()
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if len(lines) != 20 {
		t.Fatalf("%d lines, want 20:\n%s", len(lines), body)
	}
	for i := 0; i < len(lines); i += 2 {
		if lines[i] != lines[i+1] {
			t.Errorf("Handle wrote\n%s\nSend wrote\n%s", lines[i], lines[i+1])
		}
	}
	if want := `{"_time":"2026-01-15T08:00:00.123456789Z","service":"api","env":"prod","level":"DEBUG",`; !strings.HasPrefix(lines[0], want) {
		t.Errorf("line %s, want it to start with %s", lines[0], want)
	}
}

// Each kind of value as the Handler writes it.
func TestHandlerValueKinds(t *testing.T) {
	c, sent := capturing(t, Config{URL: "http://127.0.0.1:1", Compression: CompressionNone, Linger: time.Hour})
	h := NewHandler(c, nil)
	ts := time.Date(2026, 1, 15, 8, 0, 0, 5, time.FixedZone("X", 3600))
	cases := []struct {
		v    slog.Value
		want string
	}{
		{slog.StringValue("a\tb\"c\u00e9\xff"), `"a\tb\"cé\ufffd"`},
		{slog.Int64Value(-1234567), `-1234567`},
		{slog.Uint64Value(18446744073709551615), `18446744073709551615`},
		{slog.Float64Value(0.1), `0.1`},
		{slog.Float64Value(1e21), `1e+21`},
		{slog.Float64Value(math.NaN()), `"NaN"`},
		{slog.Float64Value(math.Inf(-1)), `"-Inf"`},
		{slog.BoolValue(true), `true`},
		{slog.DurationValue(-time.Second), `-1000000000`},
		{slog.TimeValue(ts), `"2026-01-15T08:00:00.000000005+01:00"`},
		{slog.AnyValue(errors.New("no \"luck\"")), `"no \"luck\""`},
		{slog.AnyValue(struct{ A []int }{[]int{1, 2}}), `{"A":[1,2]}`},
		{slog.AnyValue(nil), `null`},
	}
	for _, tc := range cases {
		r := slog.NewRecord(time.Time{}, slog.LevelInfo, "m", 0)
		r.AddAttrs(slog.Attr{Key: "k", Value: tc.v})
		if err := h.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	body := sent()
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(cases), body)
	}
	for i, tc := range cases {
		if want := `{"level":"INFO","msg":"m","k":` + tc.want + `}`; lines[i] != want {
			t.Errorf("%v: got %s, want %s", tc.v, lines[i], want)
		}
	}
}

// WithGroup's prefix, escaped once, before the record's own attributes
// and nested groups, not before WithAttrs' earlier ones.
func TestHandlerGroupPrefix(t *testing.T) {
	c, sent := capturing(t, Config{URL: "http://127.0.0.1:1", Compression: CompressionNone, Linger: time.Hour})
	log := slog.New(NewHandler(c, nil)).With("a", 1).WithGroup(`g"1`).With("b", 2).WithGroup("h")
	log.LogAttrs(context.Background(), slog.LevelInfo, "m", slog.Int("c", 3),
		slog.Group("i", slog.String("d", "x")), slog.Any("e", errors.New("y")))
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	body := sent()
	want := `{"_time":"` // then the time, then:
	rest := `","level":"INFO","msg":"m","a":1,"g\"1.b":2,"g\"1.h.c":3,"g\"1.h.i.d":"x","g\"1.h.e":"y"}` + "\n"
	if got := string(body); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, rest) {
		t.Errorf("got %s, want %s…%s", got, want, rest)
	}
}

func TestHandlerAllocs(t *testing.T) {
	c := mustNew(t, Config{URL: "http://127.0.0.1:1", BatchRecords: 1 << 20, BatchBytes: 256 << 20, Linger: time.Hour})
	log := slog.New(NewHandler(c, &HandlerOptions{LabelKeys: []string{"service"}})).With("service", "api", "host", "h1")
	ctx := context.Background()
	call := func() {
		log.LogAttrs(ctx, slog.LevelInfo, "request served",
			slog.String("method", "GET"), slog.Int("status", 200), slog.Duration("took", time.Millisecond),
			slog.Bool("cached", false), slog.Float64("ratio", 0.5))
	}
	call()
	if allocs := testing.AllocsPerRun(1000, call); allocs != 0 {
		t.Errorf("a log call allocates %v times", allocs)
	}
}

// discard is a Client whose batches are encoded and then discarded
// instead of posted: the benchmarks measure the handler, Send and the
// encoding, not the network.
func discard(b *testing.B) *Client {
	c, err := New(Config{URL: "http://127.0.0.1:1", Compression: CompressionNone, Linger: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	c.testPost = func([]byte) error { return nil }
	b.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = c.Close(ctx)
	})
	return c
}

// cpuPerOp reports, beside ns/op (wall time, which a busy machine
// inflates), the CPU time the benchmark's thread used per op: call it
// before the loop and defer what it returns.
func cpuPerOp(b *testing.B) func() {
	runtime.LockOSThread()
	t0, ok := threadCPU()
	return func() {
		if t1, ok1 := threadCPU(); ok && ok1 && b.N > 0 {
			b.ReportMetric(float64(t1-t0)/float64(b.N), "cpu-ns/op")
		}
		runtime.UnlockOSThread()
	}
}

func benchLog(b *testing.B, log *slog.Logger) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuPerOp(b)()
	for b.Loop() {
		log.LogAttrs(ctx, slog.LevelInfo, "request served",
			slog.String("method", "GET"), slog.Int("status", 200), slog.Duration("took", time.Millisecond),
			slog.Bool("cached", false), slog.Float64("ratio", 0.5))
	}
}

// logRecord logs through h as slog.Logger.LogAttrs does, without the
// caller's PC (no runtime.Callers): what an application's hot path can
// do with log/slog's API alone.
func logRecord(ctx context.Context, h slog.Handler, level slog.Level, msg string, attrs ...slog.Attr) {
	if !h.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, msg, 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(ctx, r)
}

func benchRecord(b *testing.B, h slog.Handler) {
	h = h.WithAttrs([]slog.Attr{slog.String("service", "api"), slog.String("host", "h1")})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuPerOp(b)()
	for b.Loop() {
		logRecord(ctx, h, slog.LevelInfo, "request served",
			slog.String("method", "GET"), slog.Int("status", 200), slog.Duration("took", time.Millisecond),
			slog.Bool("cached", false), slog.Float64("ratio", 0.5))
	}
}

func BenchmarkHandler(b *testing.B) {
	benchLog(b, slog.New(NewHandler(discard(b), nil)).With("service", "api", "host", "h1"))
}

func BenchmarkSlogJSONHandler(b *testing.B) {
	benchLog(b, slog.New(slog.NewJSONHandler(io.Discard, nil)).With("service", "api", "host", "h1"))
}

func BenchmarkZerolog(b *testing.B) {
	log := zerolog.New(io.Discard).With().Timestamp().Str("service", "api").Str("host", "h1").Logger()
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuPerOp(b)()
	for b.Loop() {
		log.Info().Str("method", "GET").Int("status", 200).Dur("took", time.Millisecond).
			Bool("cached", false).Float64("ratio", 0.5).Msg("request served")
	}
}

// nopHandler is enabled and does nothing: slog.Logger's own cost.
type nopHandler struct{}

func (nopHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (nopHandler) Handle(context.Context, slog.Record) error { return nil }
func (h nopHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h nopHandler) WithGroup(string) slog.Handler           { return h }

// walkHandler is nopHandler that also walks the record's attributes:
// the least any Handler that looks at them pays through slog's API.
type walkHandler struct{ nopHandler }

func (walkHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(walkAttr)
	return nil
}

func walkAttr(slog.Attr) bool { return true }

// BenchmarkLogCall is one log call (a message, two attributes from
// With, five of common kinds) in one run, for benchstat:
//
//	logger=zerolog            zerolog to io.Discard
//	logger=slog/handler=json  slog's JSONHandler to io.Discard
//	logger=slog/handler=sdk   our Handler to a Client whose batches are
//	                          discarded (batched and encoded, not posted)
//	logger=slog/handler=nop   slog.Logger's front end alone: the Record it
//	                          builds (runtime.Callers, time.Now, attrs)
//	logger=slog/handler=walk  that, and Handle walking the attributes
//	                          (Record.Attrs with a function doing
//	                          nothing): the floor of any slog Handler
//	logger=record/handler=X   the same call made with slog's own API but
//	                          without slog.Logger: Enabled, then a Record
//	                          built with pc 0 (slog.NewRecord, AddAttrs)
//	                          and given to Handle, as logRecord does;
//	                          slog.Logger always pays runtime.Callers
//	handle=json, handle=sdk   Handle alone, with a Record built once
//
// cpu-ns/op is the CPU time of the benchmark's thread per call (Linux):
// on a shared machine it moves far less than ns/op. The background
// goroutine that seals and "posts" our batches is not in it.
//
//	go test -run '^$' -bench LogCall -benchmem ./sdk/
func BenchmarkLogCall(b *testing.B) {
	b.Run("logger=zerolog", BenchmarkZerolog)
	b.Run("logger=slog/handler=json", BenchmarkSlogJSONHandler)
	b.Run("logger=slog/handler=sdk", BenchmarkHandler)
	b.Run("logger=slog/handler=nop", func(b *testing.B) {
		benchLog(b, slog.New(nopHandler{}).With("service", "api", "host", "h1"))
	})
	b.Run("logger=slog/handler=walk", func(b *testing.B) {
		benchLog(b, slog.New(walkHandler{}).With("service", "api", "host", "h1"))
	})
	b.Run("logger=record/handler=sdk", func(b *testing.B) {
		benchRecord(b, NewHandler(discard(b), nil))
	})
	b.Run("logger=record/handler=json", func(b *testing.B) {
		benchRecord(b, slog.NewJSONHandler(io.Discard, nil))
	})
	b.Run("logger=record/handler=nop", func(b *testing.B) { benchRecord(b, nopHandler{}) })
	rec := slog.NewRecord(time.Now(), slog.LevelInfo, "request served", 0)
	rec.AddAttrs(slog.String("method", "GET"), slog.Int("status", 200), slog.Duration("took", time.Millisecond),
		slog.Bool("cached", false), slog.Float64("ratio", 0.5))
	handle := func(b *testing.B, h slog.Handler) {
		h = h.WithAttrs([]slog.Attr{slog.String("service", "api"), slog.String("host", "h1")})
		ctx := context.Background()
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			if err := h.Handle(ctx, rec); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("handle=json", func(b *testing.B) { handle(b, slog.NewJSONHandler(io.Discard, nil)) })
	b.Run("handle=sdk", func(b *testing.B) { handle(b, NewHandler(discard(b), nil)) })
}

// BenchmarkSend is the Client's cost per record from several goroutines,
// batches encoded and zstd-compressed but not posted; records/s is
// 1e9 / ns/op.
func BenchmarkSend(b *testing.B) {
	c, err := New(Config{URL: "http://127.0.0.1:1", Linger: time.Hour, Overflow: OverflowBlock})
	if err != nil {
		b.Fatal(err)
	}
	c.testPost = func([]byte) error { return nil }
	line := []byte(`{"level":"info","msg":"GET /api/users 200","status":200,"bytes":5120,"duration_ms":3.2,"trace_id":"4bf92f3577b34da6"}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	b.RunParallel(func(pb *testing.PB) {
		ts := time.Now()
		for pb.Next() {
			_ = c.Send(ts, line, Label{Name: "service", Value: "api"})
		}
	})
	b.StopTimer()
	if err := c.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHandlerParallel is BenchmarkHandler from GOMAXPROCS
// goroutines at once, sharing one Client.
func BenchmarkHandlerParallel(b *testing.B) {
	log := slog.New(NewHandler(discard(b), nil)).With("service", "api", "host", "h1")
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			log.LogAttrs(ctx, slog.LevelInfo, "request served",
				slog.String("method", "GET"), slog.Int("status", 200), slog.Duration("took", time.Millisecond),
				slog.Bool("cached", false), slog.Float64("ratio", 0.5))
		}
	})
}
