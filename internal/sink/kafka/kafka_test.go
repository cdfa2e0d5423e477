package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/sink/kafka/kafkatest"
	"github.com/sluicelog/sluice/internal/sink/sinktest"
	"github.com/sluicelog/sluice/internal/wal"
)

// Every franz-go client a test's destination makes is closed with it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewErrors(t *testing.T) {
	ok := Config{Sink: "k", Brokers: []string{"127.0.0.1:9092"}, Topic: "logs"}
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no brokers", func(c *Config) { c.Brokers = nil }, "kafka.brokers: none"},
		{"broker without port", func(c *Config) { c.Brokers = []string{"kafka"} }, `kafka.brokers: "kafka": want host:port`},
		{"no topic", func(c *Config) { c.Topic = "" }, "kafka.topic: empty"},
		{"bad topic", func(c *Config) { c.Topic = "a/b" }, `kafka.topic: "a/b": a topic name has only`},
		{"compression", func(c *Config) { c.Compression = "brotli" }, `kafka.compression "brotli": want zstd, lz4, snappy, gzip or none`},
		{"value", func(c *Config) { c.Value = "xml" }, `kafka.value "xml": want line or json`},
		{"headers", func(c *Config) { c.Headers = "all" }, `kafka.headers "all": want labels or none`},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			_, err := New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	d, err := New(ok)
	if err != nil {
		t.Fatal(err)
	}
	if d.cfg.TransactionalID != "sluice-k" || d.cfg.ClientID != "sluice" || !d.heads || d.json {
		t.Fatalf("defaults: %+v", d.cfg)
	}
}

func TestLineOnly(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
	}{{"", true}, {"line", true}, {"json", false}} {
		d, err := New(Config{Brokers: []string{"127.0.0.1:9092"}, Topic: "t", Value: tc.value})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.LineOnly(); got != tc.want {
			t.Errorf("value %q: LineOnly %v, want %v", tc.value, got, tc.want)
		}
	}
}

func testRecords() []sink.Record {
	return []sink.Record{
		{Time: time.Date(2026, 1, 15, 8, 0, 0, 123, time.UTC).UnixNano(), Tenant: "t1",
			Labels:     record.Labels{{Name: "app", Value: "api"}, {Name: "level", Value: ""}},
			LabelsJSON: json.RawMessage(`{"app":"api","level":""}`), FieldsJSON: json.RawMessage(`{"n":3,"ok":true}`),
			Line: []byte("GET /x \"quoted\"\n\ttab"), Pos: wal.Pos{Segment: 1, Offset: 40}},
		{Time: 0, Tenant: "t2", LabelsJSON: json.RawMessage(`{}`), Line: []byte("second")},
	}
}

func TestBuild(t *testing.T) {
	recs := testRecords()
	b := &sink.Batch{Records: recs, End: wal.Pos{Segment: 7, Offset: 1234}}
	for _, tc := range []struct{ value, headers string }{{"line", "labels"}, {"json", "none"}} {
		t.Run("value="+tc.value+",headers="+tc.headers, func(t *testing.T) {
			d, err := New(Config{Sink: "k", Brokers: []string{"h:1"}, Topic: "t", Value: tc.value, Headers: tc.headers})
			if err != nil {
				t.Fatal(err)
			}
			d.build(b, []int{0, 1})
			if len(d.recs) != 2 {
				t.Fatalf("%d records", len(d.recs))
			}
			for k, kr := range d.recs {
				r := &recs[k]
				if string(kr.Key) != string(r.LabelsJSON) {
					t.Errorf("record %d: key %s, want the stream %s", k, kr.Key, r.LabelsJSON)
				}
				if tc.value == "line" && string(kr.Value) != string(r.Line) {
					t.Errorf("record %d: value %q, want the line", k, kr.Value)
				}
				if tc.value == "json" {
					var v struct {
						Time   time.Time         `json:"time"`
						Tenant string            `json:"tenant"`
						Labels map[string]string `json:"labels"`
						Fields map[string]any    `json:"fields"`
						Line   string            `json:"line"`
					}
					if err := json.Unmarshal(kr.Value, &v); err != nil {
						t.Fatalf("record %d: value %s: %v", k, kr.Value, err)
					}
					if v.Time.UnixNano() != r.Time || v.Tenant != r.Tenant || v.Line != string(r.Line) || len(v.Labels) != len(r.Labels) {
						t.Errorf("record %d: json %s", k, kr.Value)
					}
				}
				if kr.Headers[0].Key != PositionHeader || string(kr.Headers[0].Value) != "7:1234" {
					t.Errorf("record %d: first header %s=%s, want %s=7:1234", k, kr.Headers[0].Key, kr.Headers[0].Value, PositionHeader)
				}
				want := 1
				if tc.headers == "labels" {
					want += len(r.Labels)
					for j, l := range r.Labels {
						if h := kr.Headers[1+j]; h.Key != l.Name || string(h.Value) != l.Value || h.Value == nil {
							t.Errorf("record %d: header %d %s=%q, want %s=%q", k, j, h.Key, h.Value, l.Name, l.Value)
						}
					}
				}
				if len(kr.Headers) != want {
					t.Errorf("record %d: %d headers, want %d", k, len(kr.Headers), want)
				}
			}
		})
	}
}

func TestPosRoundTrip(t *testing.T) {
	for _, p := range []wal.Pos{{}, {Segment: 1, Offset: 2}, {Segment: 1<<64 - 1, Offset: 1<<63 - 1}} {
		got, err := parsePos(appendPos(nil, p))
		if err != nil || got != p {
			t.Fatalf("%v: %v %v", p, got, err)
		}
	}
	for _, bad := range []string{"", "1", "1:", ":2", "1:-2", "x:1", "1:2:3"} {
		if _, err := parsePos([]byte(bad)); err == nil {
			t.Errorf("parsePos(%q) took it", bad)
		}
	}
}

// TestMissingTopic: without partitions, Open names the missing topic;
// with it, Open creates the topic and finds no position in it.
func TestMissingTopic(t *testing.T) {
	kb := kafkatest.Start(t)
	ctx := context.Background()
	d, err := New(Config{Sink: "m", Brokers: []string{kb.Addr()}, Topic: "absent", Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Open(ctx); err == nil || !strings.Contains(err.Error(), `kafka sink "m": topic "absent" does not exist`) {
		t.Fatalf("Open of a missing topic: %v", err)
	}
	d.Close()
	d, err = New(Config{Sink: "m", Brokers: []string{kb.Addr()}, Topic: "made", Partitions: 2, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if pos, ok, err := d.Open(ctx); err != nil || ok {
		t.Fatalf("Open creating the topic: %v %v %v", pos, ok, err)
	}
	if recs := kafkatest.Committed(t, kb.Addr(), "made"); len(recs) != 0 {
		t.Fatalf("a new topic with %d records", len(recs))
	}
	// Opened again, it finds the topic (empty: no position).
	if pos, ok, err := d.Open(ctx); err != nil || ok {
		t.Fatalf("Open of the new topic: %v %v %v", pos, ok, err)
	}
}

type running struct {
	cancel context.CancelFunc
	done   chan error
}

func run(t *testing.T, addr, dir string, l *wal.Log) (*sink.Manager, *running) {
	t.Helper()
	dest, err := New(Config{Sink: "kf", Brokers: []string{addr}, Topic: "logs", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sink.New(sink.Config{Name: "kf", Type: "kafka", Tenant: "t1", BatchSize: 50, Linger: time.Millisecond,
		Retry: sink.Backoff{Initial: 5 * time.Millisecond, Max: 100 * time.Millisecond}, Dir: dir}, dest, sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	m := sink.NewManager([]*sink.Sink{s}, nil, sinktest.Quiet())
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- m.Run(ctx, l) }()
	t.Cleanup(r.stop)
	return m, r
}

func (r *running) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
		r.cancel = nil
	}
}

// waitRecords reads the topic back until it holds n committed records:
// Kafka gives no event to wait on, so it asks again after a short pause.
func waitRecords(t *testing.T, addr string, n int) []kafkatest.Record {
	t.Helper()
	for i := 0; ; i++ {
		recs := kafkatest.Committed(t, addr, "logs")
		if len(recs) >= n {
			return recs
		}
		if i > 1200 {
			t.Fatalf("%d committed records after two minutes, want %d", len(recs), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestExactlyOnceWithOutageAndRestart delivers to a real broker through
// a broker crash (SIGKILL) and restart and a restart of the sink without
// its position file: every line is in the topic exactly once, one stream
// in one partition in order, and a record larger than the topic allows
// is in the dead letter.
func TestExactlyOnceWithOutageAndRestart(t *testing.T) {
	kb := kafkatest.Start(t)
	kb.CreateTopic("logs", 3, "max.message.bytes", "10000")
	dir := t.TempDir()
	l, _, err := wal.Open(wal.Options{Dir: filepath.Join(dir, "wal"), SegmentSize: 16 << 10, Logger: sinktest.Quiet()}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m, r := run(t, kb.Addr(), filepath.Join(dir, "sink"), l)
	n := 0
	push := func(k int) {
		for range k {
			svc := []string{"api", "db", "web", "auth"}[n%4]
			sinktest.AppendLines(t, l, "t1", fmt.Sprintf(`{"service":%q,"msg":"line %d","seq":%d}`, svc, n, n))
			sinktest.AppendLines(t, l, "t2", fmt.Sprintf(`{"service":%q,"msg":"line %d of another tenant"}`, svc, n))
			n++
		}
	}
	push(300)
	// One record larger than the topic's max.message.bytes, compressed:
	// random letters.
	rnd := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 30000)
	for i := range big {
		big[i] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[rnd.IntN(62)]
	}
	sinktest.AppendLines(t, l, "t1", `{"service":"api","msg":"big `+string(big[:20])+`","pad":"`+string(big)+`"}`)
	waitRecords(t, kb.Addr(), 300)

	// The broker dies mid-stream and comes back.
	kb.Kill()
	push(200)
	kb.Start()
	waitRecords(t, kb.Addr(), 500)
	if st := m.Status()[0]; st.DeadLettered != 1 {
		t.Fatalf("status after a broker crash and one record too large: %+v", st)
	}

	// The sink restarts (its process died): it resumes from the topic's
	// position, sending nothing twice.
	r.stop()
	os.Remove(filepath.Join(dir, "sink", "position")) // even without its own file
	push(100)
	run(t, kb.Addr(), filepath.Join(dir, "sink"), l)
	recs := waitRecords(t, kb.Addr(), 600)

	seen := map[int]int{}
	lastSeq := map[string]int{} // by key
	part := map[string]int32{}
	for _, rec := range recs {
		var seq int
		if _, err := fmt.Sscanf(string(rec.Value)[strings.LastIndex(string(rec.Value), `"seq":`):], `"seq":%d}`, &seq); err != nil {
			t.Fatalf("value %q: %v", rec.Value, err)
		}
		seen[seq]++
		k := string(rec.Key)
		if p, ok := part[k]; ok && p != rec.Partition {
			t.Fatalf("stream %s in partitions %d and %d", k, p, rec.Partition)
		}
		part[k] = rec.Partition
		if s, ok := lastSeq[k]; ok && s >= seq {
			t.Fatalf("stream %s: seq %d after %d", k, seq, s)
		}
		lastSeq[k] = seq
		if !strings.HasPrefix(k, `{"service":"`) || rec.Headers["service"] == "" || !strings.Contains(k, rec.Headers["service"]) {
			t.Fatalf("key %s, headers %v", k, rec.Headers)
		}
		if _, err := parsePos([]byte(rec.Headers[PositionHeader])); err != nil {
			t.Fatalf("position header: %v", err)
		}
	}
	if len(recs) != 600 || len(seen) != 600 {
		t.Fatalf("%d records, %d distinct lines; want 600 exactly once", len(recs), len(seen))
	}
	for i := range 600 {
		if seen[i] != 1 {
			t.Fatalf("line %d: %d times", i, seen[i])
		}
	}
	dl, err := os.ReadFile(sink.DeadLetterPath(filepath.Join(dir, "sink")))
	if err != nil || !strings.Contains(string(dl), `big `+string(big[:20])) || !strings.Contains(string(dl), "MESSAGE_TOO_LARGE") {
		t.Fatalf("dead letter: %.300s (%v)", dl, err)
	}
	// value: line: the records carry no fields (LineOnly), but the dead
	// letter has them, read back from the WAL.
	var d sink.DeadLetter
	if err := json.Unmarshal(bytes.TrimSpace(dl), &d); err != nil {
		t.Fatalf("dead letter %.300s: %v", dl, err)
	}
	var fields map[string]any
	if err := json.Unmarshal(d.Fields, &fields); err != nil || fields["pad"] != string(big) {
		t.Fatalf("dead letter fields %.300s: %v", d.Fields, err)
	}
	t.Logf("%d records, %d streams, status %+v", len(recs), len(part), m.Status()[0])
}
