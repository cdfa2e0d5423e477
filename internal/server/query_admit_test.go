package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	dto "github.com/prometheus/client_model/go"
)

func TestQueryTooLong(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Admission.MaxQuerySize = 1000
	f := newFixture(t, cfg)
	pushed(t, f, "default")
	long := `{app="api"} |= "` + strings.Repeat("x", 1000) + `"`
	for _, tc := range []struct {
		path   string
		params url.Values
	}{
		{"/loki/api/v1/query_range", url.Values{"query": {long}}},
		{"/loki/api/v1/query", url.Values{"query": {long}}},
		{"/loki/api/v1/series", url.Values{"match[]": {`{app="` + strings.Repeat("x", 1000) + `"}`}}},
		{"/loki/api/v1/labels", url.Values{"query": {`{app="` + strings.Repeat("x", 1000) + `"}`}}},
		{"/loki/api/v1/tail", url.Values{"query": {long}}},
	} {
		code, _, body := get(t, f, tc.path, tc.params)
		if code != 400 || !strings.Contains(body, "the query is too long") || !strings.Contains(body, "limit of 1000 (--max-query-size)") {
			t.Errorf("%s: %d %q, want 400 naming the limit", tc.path, code, body)
		}
	}
	// Just under the limit: served.
	q := url.Values{"query": {`{app="api"} |= "` + strings.Repeat("x", 900) + `"`}, "start": {qStart}, "end": {qEnd}}
	if code, _, body := get(t, f, "/loki/api/v1/query_range", q); code != 200 {
		t.Errorf("a query under the limit: %d %s", code, body)
	}
}

func TestQueryLimitOverMax(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	pushed(t, f, "default")
	q := url.Values{"query": {`{app="api"}`}, "start": {qStart}, "end": {qEnd}, "limit": {"5001"}}
	code, _, body := get(t, f, "/loki/api/v1/query_range", q)
	want := "max entries limit per query exceeded, limit > max_entries_limit_per_query (5001 > 5000)"
	if code != 400 || !strings.Contains(body, want) {
		t.Errorf("limit 5001: %d %q, want 400 with %q", code, body, want)
	}
	q.Set("limit", "5000")
	if code, _, body := get(t, f, "/loki/api/v1/query_range", q); code != 200 {
		t.Errorf("limit 5000: %d %s", code, body)
	}
}

// holdQuery takes a query slot for tenant as a running query would.
func holdQuery(t *testing.T, f *fixture, tenant string) func() {
	t.Helper()
	release, err := f.srv.queries.enter(context.Background(), tenant, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return release
}

func TestConcurrentQueries(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Admission.MaxQueries, cfg.Admission.MaxTenantQueries, cfg.Admission.QueueWait = 2, 1, 0
	f := newFixture(t, cfg)
	pushed(t, f, "a")
	span := url.Values{"query": {`{app="api"}`}, "start": {qStart}, "end": {qEnd}}
	refused := func(path, tenant, want string) {
		t.Helper()
		req := httptest.NewRequest("GET", path+"?"+span.Encode(), nil)
		req.Header.Set("X-Scope-OrgID", tenant)
		rec := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(rec, req)
		if rec.Code != 429 || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s as %s: %d (Retry-After %q) %q, want 429 with %q", path, tenant, rec.Code, rec.Header().Get("Retry-After"), rec.Body.String(), want)
		}
	}
	// Tenant a's one slot is taken: a's queries, metadata too, are refused,
	// b's are served.
	releaseA := holdQuery(t, f, "a")
	for _, path := range []string{"/loki/api/v1/query_range", "/loki/api/v1/labels", "/loki/api/v1/label/app/values", "/loki/api/v1/series", "/loki/api/v1/index/stats"} {
		refused(path, "a", "too many concurrent queries for tenant a: the limit is 1 per tenant (--max-tenant-concurrent-queries)")
	}
	if code, _, body := get(t, f, "/loki/api/v1/query_range", span, "X-Scope-OrgID", "b"); code != 200 {
		t.Errorf("tenant b: %d %s", code, body)
	}
	// Both slots taken: tenant c is refused by the total.
	releaseB := holdQuery(t, f, "b")
	refused("/loki/api/v1/query_range", "c", "too many concurrent queries: the limit is 2 in all (--max-concurrent-queries)")
	releaseA()
	releaseB()
	if code, _, body := get(t, f, "/loki/api/v1/query_range", span, "X-Scope-OrgID", "a"); code != 200 {
		t.Errorf("after the slots freed: %d %s", code, body)
	}
	if n := f.srv.queries.running(); n != 0 {
		t.Errorf("%d slots still taken", n)
	}
	if n := counterValue(t, f.srv.queries.refused.WithLabelValues("tenant")); n != 5 {
		t.Errorf("sluice_queries_refused_total{limit=tenant} %v, want 5", n)
	}
	if n := counterValue(t, f.srv.queries.refused.WithLabelValues("total")); n != 1 {
		t.Errorf("sluice_queries_refused_total{limit=total} %v, want 1", n)
	}
}

// A query over the limit waits for a slot and runs when one frees.
func TestConcurrentQueriesWait(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Admission.MaxQueries, cfg.Admission.QueueWait = 1, time.Hour
	f := newFixture(t, cfg)
	pushed(t, f, "default")
	release := holdQuery(t, f, "default")
	done := make(chan int)
	go func() {
		code, _ := f.do("GET", "/loki/api/v1/labels", nil)
		done <- code
	}()
	for queued(f.srv.queries) == 0 {
		runtime.Gosched() // until the request waits in the queue
	}
	release()
	if code := <-done; code != 200 {
		t.Errorf("the waiting query: %d, want 200", code)
	}
	// A full queue refuses at once.
	cfg.Admission.MaxQueued = 1
	f = newFixture(t, cfg)
	release = holdQuery(t, f, "default")
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		req := httptest.NewRequestWithContext(ctx, "GET", "/loki/api/v1/labels", nil)
		rec := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(rec, req)
		done <- rec.Code
	}()
	for queued(f.srv.queries) == 0 {
		runtime.Gosched()
	}
	if code, body := f.do("GET", "/loki/api/v1/labels", nil); code != 429 || !strings.Contains(body, "--max-concurrent-queries") {
		t.Errorf("with the queue full: %d %q, want 429", code, body)
	}
	cancel()
	if code := <-done; code != 499 {
		t.Errorf("a waiting client that left: %d, want 499", code)
	}
}

func queued(g *gate) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.queued
}

func TestConcurrentTails(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Admission.MaxTails, cfg.Admission.MaxTenantTails = 2, 1
	f := newFixture(t, cfg)
	ts := httptest.NewServer(f.srv.Handler())
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(ts.URL, "http") + "/loki/api/v1/tail?" + url.Values{"query": {`{app="api"}`}}.Encode()
	dial := func(tenant string) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"X-Scope-OrgID": {tenant}}})
	}
	refused := func(tenant, want string) {
		t.Helper()
		c, resp, err := dial(tenant)
		if err == nil {
			c.CloseNow()
			t.Fatalf("tail %d for %s accepted", f.srv.tails.running()+1, tenant)
		}
		if resp == nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("tail for %s: %v %v, want 429 with Retry-After", tenant, resp, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), want) {
			t.Errorf("tail for %s: %q, want %q", tenant, body, want)
		}
	}
	a, _, err := dial("a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.CloseNow()
	refused("a", "too many concurrent tails for tenant a: the limit is 1 per tenant (--max-tenant-tails)")
	b, _, err := dial("b")
	if err != nil {
		t.Fatal(err)
	}
	defer b.CloseNow()
	refused("c", "too many concurrent tails: the limit is 2 in all (--max-tails)")
}

// Tails share snapshots and their stream lists: two tails of one
// selector both see a line of a stream created after they started.
func TestTailsShareSnapshots(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	ts := httptest.NewServer(f.srv.Handler())
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	push := func(stream, line string) {
		t.Helper()
		body := `{"streams":[{"stream":` + stream + `,"values":[["` + strconv.FormatInt(time.Now().UnixNano(), 10) + `","` + line + `"]]}]}`
		if code, reply := f.do("POST", "/loki/api/v1/push", []byte(body), "Content-Type", "application/json"); code != 204 {
			t.Fatalf("push: %d %s", code, reply)
		}
	}
	push(`{"app":"api","pod":"1"}`, "old")
	u := "ws" + strings.TrimPrefix(ts.URL, "http") + "/loki/api/v1/tail?" + url.Values{"query": {`{app="api"}`}}.Encode()
	var conns []*websocket.Conn
	for range 2 {
		c, _, err := websocket.Dial(ctx, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		conns = append(conns, c)
	}
	push(`{"app":"api","pod":"2"}`, "new stream")
	push(`{"app":"web"}`, "not selected")
	for i, c := range conns {
		var got []string
		for !slices.Contains(got, "new stream") {
			_, msg, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("tail %d: %v (lines so far %q)", i, err, got)
			}
			var m struct {
				Streams []struct {
					Values [][2]string `json:"values"`
				} `json:"streams"`
			}
			if err := json.Unmarshal(msg, &m); err != nil {
				t.Fatal(err)
			}
			for _, s := range m.Streams {
				for _, v := range s.Values {
					got = append(got, v[1])
				}
			}
		}
		if !slices.Equal(got, []string{"old", "new stream"}) {
			t.Errorf("tail %d: %q", i, got)
		}
	}
}

func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
