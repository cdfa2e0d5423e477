package loki

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	lokiproto "github.com/sluicelog/sluice/internal/protocol/loki"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/sink"
)

// push is one request the test server received, decoded.
type push struct {
	tenant, auth, contentType string
	lines                     []string // "{labels} time line"
}

// server answers each request with the next of answers (then 204) and
// keeps what it received.
type server struct {
	mu      sync.Mutex
	answers []func(w http.ResponseWriter, tenant string) bool // true: answered
	pushes  []push
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var b record.Batch
	d := lokiproto.Decoder{Limits: lokiproto.DefaultLimits}
	if _, err := d.DecodeProto(body, &b, 1<<20); err != nil {
		http.Error(w, "decode: "+err.Error(), 400)
		return
	}
	p := push{tenant: r.Header.Get("X-Scope-OrgID"), auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type")}
	for i := range b.Records {
		p.lines = append(p.lines, b.Labels(i).String()+" "+time.Unix(0, b.Records[i].Time).UTC().Format(time.RFC3339Nano)+" "+
			string(b.Bytes(b.Records[i].Line)))
	}
	s.mu.Lock()
	s.pushes = append(s.pushes, p)
	var answer func(http.ResponseWriter, string) bool
	if len(s.answers) > 0 {
		answer, s.answers = s.answers[0], s.answers[1:]
	}
	s.mu.Unlock()
	if answer != nil && answer(w, p.tenant) {
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func status(code int, retryAfter, body string) func(http.ResponseWriter, string) bool {
	return func(w http.ResponseWriter, _ string) bool {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
		return true
	}
}

func newDest(t *testing.T, s *server, cfg Config) *Dest {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	cfg.URL = ts.URL + "/loki/api/v1/push"
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func batch(tenants ...string) *sink.Batch {
	var b sink.Batch
	for i, tn := range tenants {
		b.Records = append(b.Records, sink.Record{Time: time.Date(2026, 1, 15, 8, 0, i, 0, time.UTC).UnixNano(), Tenant: tn,
			Labels: record.Labels{{Name: "app", Value: "api"}, {Name: "env", Value: tn}},
			Line:   []byte("line " + string(rune('a'+i)))})
	}
	return &b
}

func TestDeliver(t *testing.T) {
	s := &server{}
	d := newDest(t, s, Config{User: "u", Password: "p"})
	b := batch("t1", "t2", "t1")
	rej, err := d.Deliver(context.Background(), b)
	if err != nil || rej != nil {
		t.Fatalf("Deliver: %v, rejected %v", err, rej)
	}
	if b.Unsettled() != 0 {
		t.Fatalf("%d records unsettled after 2xx", b.Unsettled())
	}
	want := []push{
		{tenant: "t1", lines: []string{`{app="api", env="t1"} 2026-01-15T08:00:00Z line a`, `{app="api", env="t1"} 2026-01-15T08:00:02Z line c`}},
		{tenant: "t2", lines: []string{`{app="api", env="t2"} 2026-01-15T08:00:01Z line b`}},
	}
	if len(s.pushes) != len(want) {
		t.Fatalf("%d pushes, want %d: %+v", len(s.pushes), len(want), s.pushes)
	}
	for k, p := range s.pushes {
		if p.tenant != want[k].tenant || !slices.Equal(p.lines, want[k].lines) || p.contentType != "application/x-protobuf" ||
			p.auth != "Basic dTpw" {
			t.Fatalf("push %d: %+v, want %+v with basic auth and protobuf", k, p, want[k])
		}
	}
}

func TestOrgIDAndBearer(t *testing.T) {
	s := &server{}
	d := newDest(t, s, Config{OrgID: "ops", BearerToken: "tok"})
	if _, err := d.Deliver(context.Background(), batch("t1", "t2")); err != nil {
		t.Fatal(err)
	}
	if len(s.pushes) != 1 || s.pushes[0].tenant != "ops" || s.pushes[0].auth != "Bearer tok" || len(s.pushes[0].lines) != 2 {
		t.Fatalf("pushes %+v: want one to org ops with the bearer token", s.pushes)
	}
}

func TestAnswers(t *testing.T) {
	for _, c := range []struct {
		name      string
		answer    func(http.ResponseWriter, string) bool
		retry     bool          // a retryable error
		wait      time.Duration // its minimum wait
		rejected  bool          // the records go to the dead letter
		inReasons string
	}{
		{name: "429 Retry-After", answer: status(429, "3", "slow down"), retry: true, wait: 3 * time.Second},
		{name: "503 Retry-After date", answer: status(503, time.Now().Add(time.Hour+time.Minute).UTC().Format(http.TimeFormat), ""),
			retry: true, wait: sink.MaxRetryAfter},
		{name: "429 without Retry-After", answer: status(429, "", ""), retry: true},
		{name: "500", answer: status(500, "", "boom"), retry: true},
		{name: "400", answer: status(400, "", "entry too far behind\n"), rejected: true, inReasons: "400 Bad Request: entry too far behind"},
		{name: "413 each record", answer: status(413, "", "too big"), rejected: true, inReasons: "413"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &server{answers: []func(http.ResponseWriter, string) bool{c.answer}}
			if c.name == "413 each record" {
				// Split in halves, each refused again.
				s.answers = append(s.answers, c.answer, c.answer)
			}
			d := newDest(t, s, Config{})
			b := batch("t1", "t1")
			rej, err := d.Deliver(context.Background(), b)
			if c.retry {
				var ra *sink.RetryAfterError
				switch {
				case err == nil || errors.Is(err, sink.ErrPermanent) || len(rej) > 0:
					t.Fatalf("want a retryable error and nothing rejected: %v, %v", err, rej)
				case b.Unsettled() != 2:
					t.Fatalf("%d records unsettled after a failure, want 2", b.Unsettled())
				case c.wait > 0 && (!errors.As(err, &ra) || ra.Wait < c.wait-time.Second || ra.Wait > c.wait):
					t.Fatalf("error %v: want a minimum wait of %v", err, c.wait)
				}
				// The retry succeeds and sends both records again.
				if _, err := d.Deliver(context.Background(), b); err != nil || b.Unsettled() != 0 || len(s.pushes[1].lines) != 2 {
					t.Fatalf("retry: %v, %d unsettled, pushes %+v", err, b.Unsettled(), s.pushes)
				}
				return
			}
			if err != nil || len(rej) != 2 || !strings.Contains(rej[0].Reason, c.inReasons) || !strings.Contains(rej[0].Reason, `tenant "t1"`) {
				t.Fatalf("want both records rejected with %q: %v, %+v", c.inReasons, err, rej)
			}
		})
	}
}

// A push that fails for one tenant is retried for that tenant alone.
func TestRetryOnlyFailedTenant(t *testing.T) {
	ok := func(http.ResponseWriter, string) bool { return false }
	s := &server{answers: []func(http.ResponseWriter, string) bool{ok, status(503, "1", "")}}
	d := newDest(t, s, Config{})
	b := batch("t1", "t2", "t1", "t2")
	rej, err := d.Deliver(context.Background(), b)
	if err == nil || rej != nil || b.Unsettled() != 2 || !b.Settled(0) || !b.Settled(2) {
		t.Fatalf("first delivery: %v, %v, %d unsettled: want t1's settled, t2's not", err, rej, b.Unsettled())
	}
	if _, err := d.Deliver(context.Background(), b); err != nil || b.Unsettled() != 0 {
		t.Fatalf("retry: %v, %d unsettled", err, b.Unsettled())
	}
	if len(s.pushes) != 3 || s.pushes[2].tenant != "t2" || len(s.pushes[2].lines) != 2 {
		t.Fatalf("pushes %+v: the retry must carry t2's two records alone", s.pushes)
	}
}

func TestConnectionRefused(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	u := ts.URL
	ts.Close()
	d, err := New(Config{URL: u + "/loki/api/v1/push"})
	if err != nil {
		t.Fatal(err)
	}
	b := batch("t1")
	if rej, err := d.Deliver(context.Background(), b); err == nil || errors.Is(err, sink.ErrPermanent) || rej != nil {
		t.Fatalf("a refused connection: %v, %v; want a retryable error", err, rej)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{URL: "loki:3100"}, "loki.url"},
		{Config{URL: "ftp://x/"}, "loki.url"},
		{Config{URL: "http://x/", User: "u", BearerToken: "t"}, "not both"},
		{Config{URL: "http://x/", Password: "p"}, "without loki.user"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
}

// Structured metadata goes as the push's entry metadata.
func TestMetadata(t *testing.T) {
	var got []string
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b record.Batch
		d := lokiproto.Decoder{Limits: lokiproto.DefaultLimits}
		if _, err := d.DecodeProto(body, &b, 1<<20); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for i := range b.Records {
			s := string(b.Bytes(b.Records[i].Line))
			for _, f := range b.RecordFields(i) {
				s += " " + b.Name(&f) + "=" + string(b.AppendString(nil, &f))
			}
			got = append(got, s)
		}
		w.WriteHeader(204)
	}))
	defer ts.Close()
	d, err := New(Config{URL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b := batch("t1", "t1")
	b.Records[1].Metadata = record.Labels{{Name: "trace_id", Value: "abc"}, {Name: "user", Value: `a"b`}}
	if _, err := d.Deliver(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if want := []string{"line a", `line b trace_id=abc user=a"b`}; !slices.Equal(got, want) {
		t.Fatalf("received %q, want %q", got, want)
	}
}

// A push too large for the receiver (413) is split in halves until they
// fit; a record too large alone goes to the dead letter.
func TestTooLargeSplits(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b record.Batch
		d := lokiproto.Decoder{Limits: lokiproto.DefaultLimits}
		if _, err := d.DecodeProto(body, &b, 1<<20); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		huge := false
		for i := range b.Records {
			huge = huge || string(b.Bytes(b.Records[i].Line)) == "huge"
		}
		mu.Lock()
		sizes = append(sizes, len(b.Records))
		mu.Unlock()
		if len(b.Records) > 2 || huge {
			http.Error(w, "request body too large", 413)
			return
		}
		w.WriteHeader(204)
	}))
	defer ts.Close()
	d, err := New(Config{URL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b := batch("t1", "t1", "t1", "t1", "t1")
	b.Records[3].Line = []byte("huge")
	rej, err := d.Deliver(context.Background(), b)
	if err != nil || len(rej) != 1 || rej[0].Index != 3 || !strings.Contains(rej[0].Reason, "413") || b.Unsettled() != 1 {
		t.Fatalf("Deliver: %v, rejected %+v, %d unsettled: want only the huge record rejected", err, rej, b.Unsettled())
	}
	if want := []int{5, 2, 3, 1, 2, 1, 1}; !slices.Equal(sizes, want) {
		t.Fatalf("pushes of %v records, want %v", sizes, want)
	}
}
