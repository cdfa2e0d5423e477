package server

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/protocol/loki"
)

// plainConfig is DefaultConfig without Loki's discovery: for tests of
// other things, whose lines keep just the labels they were pushed with.
func plainConfig() Config {
	c := DefaultConfig()
	c.Discover = loki.Discovery{}
	return c
}

// TestQueryStructuredMetadata checks the two shapes of a log query's
// answer over lines with structured metadata: Loki's default, where a
// line's stream holds all its labels, and categorize-labels, which
// Grafana asks for, where the stream holds its stream labels alone and
// each value a third element.
func TestQueryStructuredMetadata(t *testing.T) {
	f := newFixture(t, plainConfig())
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
	// Drilldown's detected fields see it, without a parser.
	if _, _, reply := get(t, f, "/loki/api/v1/detected_fields", url.Values{"start": {qStart}, "end": {qEnd}, "query": {`{app="api"}`}}); !strings.Contains(reply, `{"label":"trace_id","type":"string","cardinality":1,"parsers":null}`) {
		t.Errorf("detected_fields: %s", reply)
	}
	// Loki lists no structured metadata among the labels.
	span := url.Values{"start": {qStart}, "end": {qEnd}}
	if _, _, reply := get(t, f, "/loki/api/v1/labels", span); reply != `{"status":"success","data":["app"]}` {
		t.Errorf("labels: %s", reply)
	}
	if _, _, reply := get(t, f, "/loki/api/v1/series", url.Values{"start": {qStart}, "end": {qEnd}, "match[]": {`{app="api"}`}}); reply != `{"status":"success","data":[{"app":"api"}]}` {
		t.Errorf("series: %s", reply)
	}

	// A count of every row grouped by metadata reads the rows whose
	// block may have it, from the head and from a part alike (a part's
	// index says which blocks: part.BlockMeta.Fields).
	instant := func() string {
		_, _, reply := get(t, f, "/loki/api/v1/query", url.Values{"query": {`sum by (trace_id) (count_over_time({app="api"}[1h]))`}, "time": {qEnd}})
		return reply[:max(0, strings.Index(reply, `,"stats":`))]
	}
	want := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[`
	head := instant()
	if !strings.HasPrefix(head, want) || !strings.Contains(head, `{"metric":{"trace_id":"t1"},"value":[`) {
		t.Fatalf("count by trace_id from the head: %s", head)
	}
	if err := f.st.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := instant(); got != head {
		t.Errorf("count by trace_id from a part:\n got %s\nwant %s", got, head)
	}
}

// TestLokiDiscovery: as Loki 3's distributor by default, a push gets a
// service_name stream label and each entry a detected_level structured
// metadata, which queries see and Grafana's log volume groups by.
func TestLokiDiscovery(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	body := `{"streams":[
	{"stream":{"app":"api","env":"prod"},"values":[["1768435201000000000","level=info msg=a"],["1768435202000000000","GET /x 500 ERROR failed"]]},
	{"stream":{"service_name":"own","job":"j"},"values":[["1768435203000000000","{\"lvl\":\"WRN\"}"]]},
	{"stream":{"host":"h1"},"values":[["1768435204000000000","nothing to say",{"detected_level":"Warning"}]]},
	{"stream":{"host":"h2","level":"debug"},"values":[["1768435205000000000","error in the line, but the label says"]]}]}`
	if code, reply := f.do("POST", "/loki/api/v1/push", []byte(body), "Content-Type", "application/json"); code != 204 {
		t.Fatalf("push: %d %s", code, reply)
	}
	want := []string{
		`{app="api", env="prod", service_name="api"} GET /x 500 ERROR failed`,
		`{app="api", env="prod", service_name="api"} level=info msg=a`,
		`{host="h1", service_name="unknown_service"} nothing to say`,
		`{host="h2", level="debug", service_name="unknown_service"} error in the line, but the label says`,
		`{job="j", service_name="own"} {"lvl":"WRN"}`,
	}
	got := f.stored("default")
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, _, reply := get(t, f, "/loki/api/v1/query", url.Values{"query": {`sum by (service_name, detected_level) (count_over_time({service_name=~".+"}[1m]))`}, "time": {qEnd}})
	for _, series := range []string{
		`{"detected_level":"info","service_name":"api"}`, `{"detected_level":"error","service_name":"api"}`,
		`{"detected_level":"warn","service_name":"own"}`, `{"detected_level":"warn","service_name":"unknown_service"}`,
		`{"detected_level":"debug","service_name":"unknown_service"}`,
	} {
		if !strings.Contains(reply, `"metric":`+series) {
			t.Errorf("no series %s in %s", series, reply)
		}
	}
	// Grafana sees detected_level apart, among the structured metadata.
	_, _, reply = get(t, f, "/loki/api/v1/query_range", url.Values{"query": {`{job="j"}`}, "start": {qStart}, "end": {qEnd}},
		"X-Loki-Response-Encoding-Flags", "categorize-labels")
	if !strings.Contains(reply, `{"stream":{"job":"j","service_name":"own"},"values":[["1768435203000000000","{\"lvl\":\"WRN\"}",{"structuredMetadata":{"detected_level":"warn"}}]]}`) {
		t.Errorf("categorized: %s", reply)
	}
	// Off: nothing added.
	cfg := DefaultConfig()
	cfg.Discover = loki.Discovery{}
	g := newFixture(t, cfg)
	if code, reply := g.do("POST", "/loki/api/v1/push", []byte(body), "Content-Type", "application/json"); code != 204 {
		t.Fatalf("push: %d %s", code, reply)
	}
	if got := g.stored("default"); !slices.Contains(got, `{app="api", env="prod"} level=info msg=a`) {
		t.Errorf("without discovery: %q", got)
	}
}
