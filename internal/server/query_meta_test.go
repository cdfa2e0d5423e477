package server

import (
	"net/url"
	"strings"
	"testing"
)

// TestQueryStructuredMetadata checks the two shapes of a log query's
// answer over lines with structured metadata: Loki's default, where a
// line's stream holds all its labels, and categorize-labels, which
// Grafana asks for, where the stream holds its stream labels alone and
// each value a third element.
func TestQueryStructuredMetadata(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	body := `{"streams":[{"stream":{"app":"api"},"values":[
		["1768435201000000000","level=info msg=a"],
		["1768435202000000000","level=warn msg=b",{"trace_id":"t1","app":"other"}]]}]}`
	if code, reply := f.do("POST", "/loki/api/v1/push", []byte(body), "Content-Type", "application/json"); code != 204 {
		t.Fatalf("push: %d %s", code, reply)
	}
	// data without its stats, which vary.
	data := func(t *testing.T, q string, headers ...string) string {
		t.Helper()
		_, _, reply := get(t, f, "/loki/api/v1/query_range", url.Values{"query": {q}, "start": {qStart}, "end": {qEnd}, "direction": {"forward"}}, headers...)
		stats := strings.Index(reply, `,"stats":`)
		if !strings.HasPrefix(reply, `{"status":"success","data":{`) || stats < 0 {
			t.Fatalf("%s: %s", q, reply)
		}
		return reply[len(`{"status":"success","data":{`):stats]
	}
	for _, tc := range []struct {
		name, query string
		headers     []string
		want        string
	}{{
		name:  "plain",
		query: `{app="api"}`,
		want: `"resultType":"streams","result":[` +
			`{"stream":{"app":"api"},"values":[["1768435201000000000","level=info msg=a"]]},` +
			`{"stream":{"app":"api","app_extracted":"other","trace_id":"t1"},"values":[["1768435202000000000","level=warn msg=b"]]}]`,
	}, {
		name:    "categorize-labels",
		query:   `{app="api"} | logfmt`,
		headers: []string{"X-Loki-Response-Encoding-Flags", "categorize-labels"},
		want: `"resultType":"streams","encodingFlags":["categorize-labels"],"result":[` +
			`{"stream":{"app":"api"},"values":[` +
			`["1768435201000000000","level=info msg=a",{"parsed":{"level":"info","msg":"a"}}],` +
			`["1768435202000000000","level=warn msg=b",{"structuredMetadata":{"app_extracted":"other","trace_id":"t1"},"parsed":{"level":"warn","msg":"b"}}]]}]`,
	}, {
		name:    "categorize-labels, nothing but stream labels",
		query:   `{app="api"} | trace_id=""`,
		headers: []string{"X-Loki-Response-Encoding-Flags", "other-flag, categorize-labels"},
		want: `"resultType":"streams","encodingFlags":["categorize-labels"],"result":[` +
			`{"stream":{"app":"api"},"values":[["1768435201000000000","level=info msg=a",{}]]}]`,
	}, {
		name:  "metadata filter and grouping",
		query: `sum by (trace_id) (count_over_time({app="api"} | trace_id="t1" [1m]))`,
		want:  `"resultType":"matrix","result":[{"metric":{"trace_id":"t1"},"values":`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := data(t, tc.query, tc.headers...)
			if !strings.HasPrefix(got, tc.want) || !strings.HasPrefix(tc.name, "metadata") && got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	// Loki lists no structured metadata among the labels.
	span := url.Values{"start": {qStart}, "end": {qEnd}}
	if _, _, reply := get(t, f, "/loki/api/v1/labels", span); reply != `{"status":"success","data":["app"]}` {
		t.Errorf("labels: %s", reply)
	}
	if _, _, reply := get(t, f, "/loki/api/v1/series", url.Values{"start": {qStart}, "end": {qEnd}, "match[]": {`{app="api"}`}}); reply != `{"status":"success","data":[{"app":"api"}]}` {
		t.Errorf("series: %s", reply)
	}
}
