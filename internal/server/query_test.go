package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// pushed stores a few lines through the Loki push API for the query
// tests: times are seconds after 2026-01-15T00:00:00Z.
func pushed(t *testing.T, f *fixture, tenant string) {
	t.Helper()
	body := `{"streams":[
	{"stream":{"app":"api","env":"prod"},"values":[["1768435201000000000","GET /users 200"],["1768435202000000000","POST /users 500 error"]]},
	{"stream":{"app":"web","env":"prod"},"values":[["1768435203000000000","{\"level\":\"error\",\"msg\":\"render\",\"took_ms\":31}"]]},
	{"stream":{"app":"api","env":"dev"},"values":[["1768435204000000000","GET /health 200"]]}]}`
	if code, reply := f.do("POST", "/loki/api/v1/push", []byte(body), "Content-Type", "application/json", "X-Scope-OrgID", tenant); code != 204 {
		t.Fatalf("push: %d %s", code, reply)
	}
}

const (
	qStart = "1768435200000000000"
	qEnd   = "1768435260000000000"
)

func get(t *testing.T, f *fixture, path string, params url.Values, headers ...string) (int, map[string]any, string) {
	t.Helper()
	code, body := f.do("GET", path+"?"+params.Encode(), nil, headers...)
	var doc map[string]any
	if strings.HasPrefix(body, "{") {
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("%s: %v: %s", path, err, body)
		}
	}
	return code, doc, body
}

func TestQueryRange(t *testing.T) {
	f := newFixture(t, plainConfig())
	pushed(t, f, "default")
	code, doc, body := get(t, f, "/loki/api/v1/query_range", url.Values{"query": {`{env="prod"} |= "error"`}, "start": {qStart}, "end": {qEnd}})
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	data := doc["data"].(map[string]any)
	if data["resultType"] != "streams" {
		t.Fatalf("resultType %v", data["resultType"])
	}
	want := `[{"stream":{"app":"api","env":"prod"},"values":[["1768435202000000000","POST /users 500 error"]]},` +
		`{"stream":{"app":"web","env":"prod"},"values":[["1768435203000000000","{\"level\":\"error\",\"msg\":\"render\",\"took_ms\":31}"]]}]`
	got, _ := json.Marshal(data["result"])
	if string(got) != want {
		t.Errorf("result\n got %s\nwant %s", got, want)
	}
	if _, ok := data["stats"].(map[string]any)["summary"]; !ok {
		t.Errorf("no stats summary: %s", body)
	}

	// A metric range query: a matrix, times as Unix seconds.
	_, doc, body = get(t, f, "/loki/api/v1/query_range", url.Values{"query": {`sum by (env) (count_over_time({app=~".+"}[1m]))`},
		"start": {"1768435230"}, "end": {"1768435260"}, "step": {"30s"}})
	got, _ = json.Marshal(doc["data"].(map[string]any)["result"])
	want = `[{"metric":{"env":"dev"},"values":[[1768435230,"1"],[1768435260,"1"]]},{"metric":{"env":"prod"},"values":[[1768435230,"3"],[1768435260,"3"]]}]`
	if string(got) != want {
		t.Errorf("matrix\n got %s\nwant %s (%s)", got, want, body)
	}

	// | json label filters over a stored line.
	_, doc, _ = get(t, f, "/loki/api/v1/query_range", url.Values{"query": {`{app="web"} | json | took_ms > 30`}, "start": {qStart}, "end": {qEnd}})
	if n := len(doc["data"].(map[string]any)["result"].([]any)); n != 1 {
		t.Errorf("json filter: %d streams, want 1", n)
	}
}

func TestQueryInstant(t *testing.T) {
	f := newFixture(t, plainConfig())
	pushed(t, f, "default")
	_, _, body := get(t, f, "/loki/api/v1/query", url.Values{"query": {`count_over_time({app="api"}[1h])`}, "time": {"2026-01-15T00:01:00Z"}})
	if !strings.Contains(body, `"resultType":"vector","result":[{"metric":{"app":"api","env":"dev"},"value":[1768435260,"1"]},{"metric":{"app":"api","env":"prod"},"value":[1768435260,"2"]}]`) {
		t.Errorf("instant: %s", body)
	}
	// Grafana's health check.
	_, doc, body := get(t, f, "/loki/api/v1/query", url.Values{"query": {`vector(1)+vector(1)`}})
	got, _ := json.Marshal(doc["data"].(map[string]any)["result"])
	if !strings.Contains(string(got), `"2"]`) {
		t.Errorf("vector(1)+vector(1): %s", body)
	}
}

func TestQueryErrors(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	for _, tc := range []struct {
		params url.Values
		code   int
		msg    string
	}{
		{url.Values{"query": {`{app="api"`}}, 400, "parse error at line 1, col 11"},
		{url.Values{"query": {`{app="api"}`}, "start": {"yesterday"}}, 400, `cannot parse "yesterday" to a valid timestamp`},
		{url.Values{"query": {`{app="api"}`}, "direction": {"sideways"}}, 400, "invalid direction"},
		{url.Values{"query": {`rate({app="api"}[1m])`}, "step": {"0.0001"}, "start": {"0"}, "end": {"1768435260"}}, 400, "exceeded maximum resolution"},
		{url.Values{}, 400, "query must not be empty"},
	} {
		code, _, body := get(t, f, "/loki/api/v1/query_range", tc.params)
		if code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("%v: %d %q, want %d with %q", tc.params, code, body, tc.code, tc.msg)
		}
	}
	code, _, body := get(t, f, "/loki/api/v1/query", url.Values{"query": {`{app="api"}`}})
	if code != 400 || !strings.Contains(body, "log queries are not supported as an instant query") {
		t.Errorf("instant log query: %d %q", code, body)
	}
}

func TestQueryLabelsSeriesStats(t *testing.T) {
	f := newFixture(t, plainConfig())
	pushed(t, f, "default")
	pushed(t, f, "other")
	span := url.Values{"start": {qStart}, "end": {qEnd}}
	if _, _, body := get(t, f, "/loki/api/v1/labels", span); body != `{"status":"success","data":["app","env"]}` {
		t.Errorf("labels: %s", body)
	}
	if _, _, body := get(t, f, "/loki/api/v1/label/app/values", span); body != `{"status":"success","data":["api","web"]}` {
		t.Errorf("label values: %s", body)
	}
	q := url.Values{"start": {qStart}, "end": {qEnd}, "query": {`{env="dev"}`}}
	if _, _, body := get(t, f, "/loki/api/v1/label/app/values", q); body != `{"status":"success","data":["api"]}` {
		t.Errorf("label values of a selector: %s", body)
	}
	m := url.Values{"start": {qStart}, "end": {qEnd}, "match[]": {`{app="api"}`}}
	if _, _, body := get(t, f, "/loki/api/v1/series", m); body != `{"status":"success","data":[{"app":"api","env":"dev"},{"app":"api","env":"prod"}]}` {
		t.Errorf("series: %s", body)
	}
	if _, _, body := get(t, f, "/loki/api/v1/index/stats", q); body != `{"streams":1,"chunks":1,"entries":1,"bytes":15}` {
		t.Errorf("index stats: %s", body)
	}
	// Out of range: nothing.
	old := url.Values{"start": {"1000000000"}, "end": {"1000000100"}}
	if _, _, body := get(t, f, "/loki/api/v1/labels", old); body != `{"status":"success","data":[]}` {
		t.Errorf("labels out of range: %s", body)
	}
	if code, _, body := get(t, f, "/loki/api/v1/status/buildinfo", nil); code != 200 || !strings.Contains(body, `"goVersion"`) {
		t.Errorf("buildinfo: %d %s", code, body)
	}
}

func TestQueryTenantIsolation(t *testing.T) {
	f := newFixture(t, plainConfig())
	pushed(t, f, "team-a")
	span := url.Values{"start": {qStart}, "end": {qEnd}, "query": {`{app=~".+"}`}}
	_, doc, _ := get(t, f, "/loki/api/v1/query_range", span, "X-Scope-OrgID", "team-a")
	if n := len(doc["data"].(map[string]any)["result"].([]any)); n != 3 {
		t.Errorf("team-a sees %d streams, want 3", n)
	}
	for _, other := range []string{"team-b", ""} {
		_, doc, _ = get(t, f, "/loki/api/v1/query_range", span, "X-Scope-OrgID", other)
		if n := len(doc["data"].(map[string]any)["result"].([]any)); n != 0 {
			t.Errorf("tenant %q sees %d of team-a's streams", other, n)
		}
		if _, _, body := get(t, f, "/loki/api/v1/labels", span, "X-Scope-OrgID", other); body != `{"status":"success","data":[]}` {
			t.Errorf("tenant %q sees team-a's labels: %s", other, body)
		}
	}
	if code, _, _ := get(t, f, "/loki/api/v1/labels", span, "X-Scope-OrgID", "../team-a"); code != 400 {
		t.Errorf("a tenant id with a path: %d, want 400", code)
	}
}

func TestQueryAuth(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Auth = []Credential{{Token: "secret-a", Tenants: []string{"team-a"}}}
	f := newFixture(t, cfg)
	span := url.Values{"query": {`{app="api"}`}}
	if code, _, _ := get(t, f, "/loki/api/v1/query_range", span, "X-Scope-OrgID", "team-a"); code != 401 {
		t.Errorf("no credential: %d, want 401", code)
	}
	if code, _, _ := get(t, f, "/loki/api/v1/query_range", span, "X-Scope-OrgID", "team-b", "Authorization", "Bearer secret-a"); code != 403 {
		t.Errorf("another tenant's data: %d, want 403", code)
	}
	if code, _, body := get(t, f, "/loki/api/v1/query_range", span, "X-Scope-OrgID", "team-a", "Authorization", "Bearer secret-a"); code != 200 {
		t.Errorf("allowed: %d %s", code, body)
	}
}

func TestTail(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	ts := httptest.NewServer(f.srv.Handler())
	defer ts.Close()
	now := time.Now()
	push := func(line string, at time.Time) {
		body := `{"streams":[{"stream":{"app":"api"},"values":[["` + strconv.FormatInt(at.UnixNano(), 10) + `","` + line + `"]]}]}`
		if code, reply := f.do("POST", "/loki/api/v1/push", []byte(body), "Content-Type", "application/json"); code != 204 {
			t.Fatalf("push: %d %s", code, reply)
		}
	}
	push("before", now.Add(-time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(ts.URL, "http") + "/loki/api/v1/tail?" + url.Values{"query": {`{app="api"}`}}.Encode()
	c, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var lines []string
	read := func() {
		_, msg, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (lines so far %q)", err, lines)
		}
		var m struct {
			Streams []struct {
				Stream map[string]string `json:"stream"`
				Values [][2]string       `json:"values"`
			} `json:"streams"`
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatalf("%v: %s", err, msg)
		}
		for _, s := range m.Streams {
			for _, v := range s.Values {
				lines = append(lines, v[1])
			}
		}
	}
	read()
	push("after 1", time.Now())
	push("after 2", time.Now())
	for len(lines) < 3 {
		read()
	}
	if strings.Join(lines, "|") != "before|after 1|after 2" {
		t.Errorf("tailed %q", lines)
	}
	c.Close(websocket.StatusNormalClosure, "")

	// A browser page of another origin is refused.
	h := http.Header{"Origin": {"http://elsewhere.example"}}
	if c2, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: h}); err == nil {
		c2.CloseNow()
		t.Error("a cross-origin WebSocket was accepted")
	} else if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-origin WebSocket: %v %v, want 403", resp, err)
	}
}
