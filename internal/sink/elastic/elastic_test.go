package elastic

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/wal"
)

// fakeES is an Elasticsearch _bulk endpoint that keeps documents by id
// (create of a held id: 409, as Elasticsearch), and lets a test choose
// the status of items by their document's message, or of the whole
// request.
type fakeES struct {
	mu       sync.Mutex
	docs     map[string]map[string]any // by id
	requests [][]string                // the messages of each request
	auth     []string
	// itemStatus returns the status of an item (0: store it), given its
	// message and the request's number (from 0).
	itemStatus func(msg string, req int) int
	// whole, if set, answers request req whole (true: answered).
	whole func(w http.ResponseWriter, req int) bool
	// loseReply stores request req's documents, then answers 500.
	loseReply func(req int) bool
	// tooLarge, if not 0, answers 413 to requests of more documents, and
	// to any holding the message "huge".
	tooLarge int
}

func (f *fakeES) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.docs == nil {
		f.docs = map[string]map[string]any{}
	}
	n := len(f.requests)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	if r.URL.Path != "/_bulk" || r.Header.Get("Content-Type") != "application/x-ndjson" {
		http.Error(w, "bad path or content type "+r.URL.Path, 400)
		return
	}
	var msgs []string
	var items []string
	body, _ := io.ReadAll(r.Body)
	if f.tooLarge != 0 {
		var n int
		var huge bool
		for _, l := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
			n++
			huge = huge || strings.Contains(l, `"message":"huge"`)
		}
		if n/2 > f.tooLarge || huge {
			f.requests = append(f.requests, []string{fmt.Sprintf("413 for %d", n/2)})
			http.Error(w, "Request Entity Too Large", http.StatusRequestEntityTooLarge)
			return
		}
	}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var action map[string]struct {
			Index string `json:"_index"`
			ID    string `json:"_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &action); err != nil || !sc.Scan() {
			http.Error(w, "bad action", 400)
			return
		}
		var doc map[string]any
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			http.Error(w, "bad doc: "+err.Error(), 400)
			return
		}
		msg, _ := doc["message"].(string)
		msgs = append(msgs, msg)
		for op, meta := range action {
			status := 0
			if f.itemStatus != nil {
				status = f.itemStatus(msg, n)
			}
			_, held := f.docs[meta.ID]
			switch {
			case status != 0:
			case op == "create" && held:
				status = 409
			default:
				f.docs[meta.ID] = doc
				status = 201
			}
			it := fmt.Sprintf(`{%q:{"_index":%q,"_id":%q,"status":%d`, op, meta.Index, meta.ID, status)
			if status >= 300 {
				it += fmt.Sprintf(`,"error":{"type":"e%d","reason":"item refused with %d"}`, status, status)
			}
			items = append(items, it+"}}")
		}
	}
	f.requests = append(f.requests, msgs)
	if f.whole != nil && f.whole(w, n) {
		return
	}
	if f.loseReply != nil && f.loseReply(n) {
		http.Error(w, "stored, then the reply was lost", 500)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"took":1,"errors":true,"items":[%s]}`, strings.Join(items, ","))
}

func newDest(t *testing.T, f *fakeES, cfg Config) *Dest {
	t.Helper()
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	cfg.URL = ts.URL
	if cfg.Index == "" {
		cfg.Index = "logs-sluice-default"
	}
	if cfg.Sink == "" {
		cfg.Sink = "es"
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// batch returns records "m0".. of one WAL frame each two rows.
func batch(n int) *sink.Batch {
	var b sink.Batch
	for i := range n {
		b.Records = append(b.Records, sink.Record{Time: time.Date(2026, 1, 15, 8, 0, i, 5, time.UTC).UnixNano(), Tenant: "t1",
			Labels: record.Labels{{Name: "app", Value: "api"}}, LabelsJSON: json.RawMessage(`{"app":"api"}`),
			FieldsJSON: json.RawMessage(fmt.Sprintf(`{"n":%d,"user":"u\"%d","tags":["a","b"],"app":"shadowed"}`, i, i)),
			Line:       []byte(fmt.Sprintf("m%d", i)), Pos: wal.Pos{Segment: 3, Offset: int64(100 * (i / 2))}, Row: i % 2})
	}
	return &b
}

func TestDeliverDocuments(t *testing.T) {
	f := &fakeES{}
	d := newDest(t, f, Config{User: "elastic", Password: "pw"})
	b := batch(2)
	rej, err := d.Deliver(context.Background(), b)
	if err != nil || rej != nil || b.Unsettled() != 0 {
		t.Fatalf("Deliver: %v, %v, %d unsettled", err, rej, b.Unsettled())
	}
	want := map[string]string{
		"es-3-0-0": `{"@timestamp":"2026-01-15T08:00:00.000000005Z","app":"api","message":"m0","n":0,"tags":["a","b"],"user":"u\"0"}`,
		"es-3-0-1": `{"@timestamp":"2026-01-15T08:00:01.000000005Z","app":"api","message":"m1","n":1,"tags":["a","b"],"user":"u\"1"}`,
	}
	for id, w := range want {
		got, _ := json.Marshal(f.docs[id])
		if string(got) != w {
			t.Errorf("document %s: %s\nwant %s", id, got, w)
		}
	}
	if len(f.docs) != 2 || f.auth[0] != "Basic ZWxhc3RpYzpwdw==" {
		t.Fatalf("documents %v, auth %q", f.docs, f.auth)
	}
}

// Items that fail with a retryable status are retried alone; the others
// go to the dead letter with their error.
func TestPartialFailure(t *testing.T) {
	f := &fakeES{itemStatus: func(msg string, req int) int {
		switch {
		case msg == "m1" && req == 0:
			return 429
		case msg == "m2" && req == 0:
			return 503
		case msg == "m3" && req < 2:
			return 502 // fails twice
		case msg == "m4":
			return 400 // mapping error: for good
		case msg == "m5" && req == 0:
			return 504
		}
		return 0
	}}
	d := newDest(t, f, Config{})
	b := batch(7)
	var rejected []sink.Rejected
	for attempt := 0; b.Unsettled() > 0; attempt++ {
		if attempt == 5 {
			t.Fatalf("still %d unsettled after 5 attempts", b.Unsettled())
		}
		rej, err := d.Deliver(context.Background(), b)
		for _, r := range rej {
			b.Settle(r.Index) // as the runtime does
		}
		rejected = append(rejected, rej...)
		if (err == nil) != (b.Unsettled() == 0) || errors.Is(err, sink.ErrPermanent) {
			t.Fatalf("attempt %d: %v with %d unsettled", attempt, err, b.Unsettled())
		}
	}
	wantReqs := []string{"m0 m1 m2 m3 m4 m5 m6", "m1 m2 m3 m5", "m3"}
	if len(f.requests) != len(wantReqs) {
		t.Fatalf("requests %v, want %v", f.requests, wantReqs)
	}
	for k, w := range wantReqs {
		if got := strings.Join(f.requests[k], " "); got != w {
			t.Fatalf("request %d carried %q, want %q", k, got, w)
		}
	}
	if len(rejected) != 1 || rejected[0].Index != 4 || rejected[0].Reason != "elasticsearch: 400 e400: item refused with 400" {
		t.Fatalf("rejected %+v: want m4 with its error", rejected)
	}
	if len(f.docs) != 6 {
		t.Fatalf("%d documents stored, want 6", len(f.docs))
	}
}

func TestWholeRequest(t *testing.T) {
	answer := func(code int, retryAfter, body string) func(http.ResponseWriter, int) bool {
		return func(w http.ResponseWriter, req int) bool {
			if req > 0 {
				return false
			}
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(code)
			io.WriteString(w, body)
			return true
		}
	}
	for _, c := range []struct {
		name     string
		whole    func(http.ResponseWriter, int) bool
		wait     time.Duration
		rejected string
	}{
		{name: "429 Retry-After", whole: answer(429, "5", `{"error":"es_rejected_execution_exception"}`), wait: 5 * time.Second},
		{name: "503", whole: answer(503, "", "")},
		{name: "500", whole: answer(500, "", "boom")},
		{name: "200 not a bulk reply", whole: answer(200, "", "<html>")},
		{name: "400", whole: answer(400, "", `{"error":{"type":"illegal_argument_exception"}}`),
			rejected: `elasticsearch _bulk: 400 Bad Request: {"error":{"type":"illegal_argument_exception"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeES{whole: c.whole}
			d := newDest(t, f, Config{})
			b := batch(2)
			rej, err := d.Deliver(context.Background(), b)
			if c.rejected != "" {
				if err != nil || len(rej) != 2 || rej[0].Reason != c.rejected {
					t.Fatalf("want both rejected with %q: %v, %+v", c.rejected, err, rej)
				}
				return
			}
			var ra *sink.RetryAfterError
			if err == nil || rej != nil || b.Unsettled() != 2 || errors.Is(err, sink.ErrPermanent) {
				t.Fatalf("want a retryable error: %v, %v, %d unsettled", err, rej, b.Unsettled())
			}
			if c.wait > 0 && (!errors.As(err, &ra) || ra.Wait != c.wait) {
				t.Fatalf("error %v: want a minimum wait of %v", err, c.wait)
			}
			// The request may have stored its documents (200 with a bad
			// reply): the retry's 409s count as delivered.
			if _, err := d.Deliver(context.Background(), b); err != nil || b.Unsettled() != 0 || len(f.docs) != 2 {
				t.Fatalf("retry: %v, %d unsettled, %d documents", err, b.Unsettled(), len(f.docs))
			}
		})
	}
}

// A retry after a lost reply, or a restart that reads the WAL again,
// sends the same ids: with create, nothing is indexed twice.
func TestCreateWithIDsExactlyOnce(t *testing.T) {
	f := &fakeES{loseReply: func(req int) bool { return req == 0 }}
	d := newDest(t, f, Config{})
	b := batch(5)
	if _, err := d.Deliver(context.Background(), b); err == nil {
		t.Fatal("a lost reply must be retried")
	}
	if rej, err := d.Deliver(context.Background(), b); err != nil || rej != nil || b.Unsettled() != 0 {
		t.Fatalf("retry: %v, %v, %d unsettled", err, rej, b.Unsettled())
	}
	// A restarted sluice (a new destination) reads the same WAL frames.
	d2 := newDest(t, f, Config{})
	if rej, err := d2.Deliver(context.Background(), batch(5)); err != nil || rej != nil {
		t.Fatalf("after restart: %v, %v", err, rej)
	}
	if len(f.docs) != 5 || len(f.requests) != 3 {
		t.Fatalf("%d documents from %d requests, want 5 from 3", len(f.docs), len(f.requests))
	}
	// The index action overwrites instead: still one document per id.
	d3 := newDest(t, f, Config{Action: "index"})
	if rej, err := d3.Deliver(context.Background(), batch(5)); err != nil || rej != nil || len(f.docs) != 5 {
		t.Fatalf("index action: %v, %v, %d documents", err, rej, len(f.docs))
	}
}

func TestAuthHeaders(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{APIKey: "k"}, "ApiKey k"},
		{Config{BearerToken: "t"}, "Bearer t"},
		{Config{}, ""},
	} {
		f := &fakeES{}
		d := newDest(t, f, c.cfg)
		if _, err := d.Deliver(context.Background(), batch(1)); err != nil || f.auth[0] != c.want {
			t.Errorf("%+v: %v, Authorization %q, want %q", c.cfg, err, f.auth[0], c.want)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{URL: "es:9200", Index: "x"}, "elasticsearch.url"},
		{Config{URL: "http://es:9200", Index: "Logs"}, "elasticsearch.index"},
		{Config{URL: "http://es:9200"}, "elasticsearch.index"},
		{Config{URL: "http://es:9200", Index: "x", Action: "update"}, "elasticsearch.action"},
		{Config{URL: "http://es:9200", Index: "x", APIKey: "k", User: "u"}, "one of"},
		{Config{URL: "http://es:9200", Index: "x", Password: "p"}, "without elasticsearch.user"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
}

// A request too large for the cluster (413) is split in halves until the
// halves fit; a document too large alone goes to the dead letter.
func TestTooLargeSplits(t *testing.T) {
	f := &fakeES{tooLarge: 2}
	d := newDest(t, f, Config{})
	b := batch(6)
	b.Records[4].Line = []byte("huge")
	rej, err := d.Deliver(context.Background(), b)
	if err != nil || len(rej) != 1 || rej[0].Index != 4 || !strings.Contains(rej[0].Reason, "413") {
		t.Fatalf("Deliver: %v, rejected %+v: want only the huge record rejected", err, rej)
	}
	if b.Unsettled() != 1 || len(f.docs) != 5 {
		t.Fatalf("%d unsettled (want only the rejected one), %d documents stored (want 5)", b.Unsettled(), len(f.docs))
	}
	var got []string
	for _, r := range f.requests {
		got = append(got, strings.Join(r, " "))
	}
	want := "413 for 6|413 for 3|m0|m1 m2|413 for 3|m3|413 for 2|413 for 1|m5"
	if strings.Join(got, "|") != want {
		t.Fatalf("requests %q\nwant %q", strings.Join(got, "|"), want)
	}
}
