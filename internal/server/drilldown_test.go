package server

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"
)

// drilldownPushed stores lines for the Drilldown tests: logfmt lines of
// service api (two streams), a JSON line of web and two text lines of db,
// seconds 1 to 7 after 2026-01-15T00:00:00Z. Line lengths (the bytes a
// volume counts): api 58+57+57, api with shard 48, web 92, db 33+33.
func drilldownPushed(t *testing.T, f *fixture, tenant string) {
	t.Helper()
	body := `{"streams":[
	{"stream":{"service_name":"api","env":"prod"},"values":[
		["1768435201000000000","level=info msg=\"GET /users\" status=200 took=12ms size=10KB"],
		["1768435202000000000","level=warn msg=\"GET /users\" status=500 took=1.5s size=3KB"],
		["1768435203000000000","level=info msg=\"GET /orders\" status=200 took=7ms size=1KB"]]},
	{"stream":{"service_name":"api","env":"prod","shard":"7"},"values":[
		["1768435204000000000","level=info msg=ping status=200 took=1ms size=0KB"]]},
	{"stream":{"service_name":"web","env":"prod"},"values":[
		["1768435205000000000","{\"level\":\"error\",\"msg\":\"render failed\",\"user\":{\"id\":42,\"name\":\"bob\"},\"ok\":false,\"ratio\":0.5}"]]},
	{"stream":{"service_name":"db","env":"dev","pod":"db-0"},"values":[
		["1768435206000000000","connection from 10.0.0.1 accepted"],
		["1768435207000000000","connection from 10.0.0.7 accepted"]]}]}`
	if code, reply := f.do("POST", "/loki/api/v1/push", []byte(body), "Content-Type", "application/json", "X-Scope-OrgID", tenant); code != 204 {
		t.Fatalf("push: %d %s", code, reply)
	}
}

// The golden answers below were written by hand from Loki's HTTP API
// reference and source (pkg/querier/queryrange/volume.go for volumes,
// pkg/logproto for the field names and omitempty, pkg/util/marshal for
// patterns) and the lines above; they are not produced by sluice.
func TestDrilldownGolden(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	drilldownPushed(t, f, "team-a")
	t.Run("head", func(t *testing.T) { drilldownGolden(t, f) })
	// The same answers from parts.
	if err := f.st.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Run("parts", func(t *testing.T) { drilldownGolden(t, f) })
}

func drilldownGolden(t *testing.T, f *fixture) {
	span := func(kv ...string) url.Values {
		v := url.Values{"start": {qStart}, "end": {qEnd}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	for _, tc := range []struct {
		name, path string
		params     url.Values
		want       string
	}{
		{"volume by service", "/loki/api/v1/index/volume", span("query", `{service_name=~".+"}`, "limit", "5000"),
			`{"status":"success","data":{"resultType":"vector","result":[` +
				`{"metric":{"service_name":"api"},"value":[1768435260,"220"]},` +
				`{"metric":{"service_name":"web"},"value":[1768435260,"92"]},` +
				`{"metric":{"service_name":"db"},"value":[1768435260,"66"]}]}}`},
		{"volume limit", "/loki/api/v1/index/volume", span("query", `{service_name=~".+"}`, "limit", "1"),
			`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"service_name":"api"},"value":[1768435260,"220"]}]}}`},
		{"volume target labels", "/loki/api/v1/index/volume", span("query", `{service_name=~".+"}`, "targetLabels", "env"),
			`{"status":"success","data":{"resultType":"vector","result":[` +
				`{"metric":{"env":"prod"},"value":[1768435260,"312"]},{"metric":{"env":"dev"},"value":[1768435260,"66"]}]}}`},
		{"volume by labels", "/loki/api/v1/index/volume", span("query", `{service_name=~".+"}`, "aggregateBy", "labels"),
			`{"status":"success","data":{"resultType":"vector","result":[` +
				`{"metric":{"env":""},"value":[1768435260,"378"]},{"metric":{"service_name":""},"value":[1768435260,"378"]},` +
				`{"metric":{"pod":""},"value":[1768435260,"66"]},{"metric":{"shard":""},"value":[1768435260,"48"]}]}}`},
		{"volume match any", "/loki/api/v1/index/volume", span("query", `{}`),
			`{"status":"success","data":{"resultType":"vector","result":[` +
				`{"metric":{"env":"prod","service_name":"api"},"value":[1768435260,"172"]},` +
				`{"metric":{"env":"prod","service_name":"web"},"value":[1768435260,"92"]},` +
				`{"metric":{"env":"dev","pod":"db-0","service_name":"db"},"value":[1768435260,"66"]},` +
				`{"metric":{"env":"prod","service_name":"api","shard":"7"},"value":[1768435260,"48"]}]}}`},
		// Buckets aligned on 30 s, each stamped with its end less 1 ms, the
		// last with the end (Loki's util.ForInterval).
		{"volume range", "/loki/api/v1/index/volume_range", span("query", `{service_name="db"}`, "step", "30s"),
			`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"service_name":"db"},"values":[[1768435229.999,"66"]]}]}}`},
		{"volume range buckets", "/loki/api/v1/index/volume_range", url.Values{"query": {`{service_name="api"}`}, "start": {"1768435202"}, "end": {"1768435205"}, "step": {"2s"}},
			`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"service_name":"api"},"values":[[1768435203.999,"114"],[1768435205,"48"]]}]}}`},
		{"detected labels", "/loki/api/v1/detected_labels", span("query", ""),
			`{"detectedLabels":[{"label":"env","cardinality":2},{"label":"pod","cardinality":1},{"label":"service_name","cardinality":3}]}`},
		{"detected labels of a selector", "/loki/api/v1/detected_labels", span("query", `{env="prod"}`),
			`{"detectedLabels":[{"label":"env","cardinality":1},{"label":"service_name","cardinality":2}]}`},
		{"detected labels none", "/loki/api/v1/detected_labels", span("query", `{env="none"}`), `{}`},
		// detected_level: the structured metadata Loki's (and sluice's)
		// discover_log_levels adds to each pushed line; no parser.
		{"detected fields logfmt", "/loki/api/v1/detected_fields", span("query", `{service_name="api"}`),
			`{"fields":[{"label":"detected_level","type":"string","cardinality":2,"parsers":null},{"label":"level","type":"string","cardinality":2,"parsers":["logfmt"]},` +
				`{"label":"msg","type":"string","cardinality":3,"parsers":["logfmt"]},` +
				`{"label":"size","type":"bytes","cardinality":4,"parsers":["logfmt"]},` +
				`{"label":"status","type":"int","cardinality":2,"parsers":["logfmt"]},` +
				`{"label":"took","type":"duration","cardinality":4,"parsers":["logfmt"]}],"limit":1000}`},
		{"detected fields drilldown query", "/loki/api/v1/detected_fields", span("query", "{service_name=`api`}     | json  | logfmt | drop __error__, __error_details__  "),
			`{"fields":[{"label":"detected_level","type":"string","cardinality":2,"parsers":null},{"label":"level","type":"string","cardinality":2,"parsers":["logfmt"]},` +
				`{"label":"msg","type":"string","cardinality":3,"parsers":["logfmt"]},` +
				`{"label":"size","type":"bytes","cardinality":4,"parsers":["logfmt"]},` +
				`{"label":"status","type":"int","cardinality":2,"parsers":["logfmt"]},` +
				`{"label":"took","type":"duration","cardinality":4,"parsers":["logfmt"]}],"limit":1000}`},
		{"detected fields json", "/loki/api/v1/detected_fields", span("query", `{service_name="web"}`),
			`{"fields":[{"label":"detected_level","type":"string","cardinality":1,"parsers":null},{"label":"level","type":"string","cardinality":1,"parsers":["json"],"jsonPath":["level"]},` +
				`{"label":"msg","type":"string","cardinality":1,"parsers":["json"],"jsonPath":["msg"]},` +
				`{"label":"ok","type":"boolean","cardinality":1,"parsers":["json"],"jsonPath":["ok"]},` +
				`{"label":"ratio","type":"float","cardinality":1,"parsers":["json"],"jsonPath":["ratio"]},` +
				`{"label":"user_id","type":"int","cardinality":1,"parsers":["json"],"jsonPath":["user","id"]},` +
				`{"label":"user_name","type":"string","cardinality":1,"parsers":["json"],"jsonPath":["user","name"]}],"limit":1000}`},
		// The newest line only: the ping line of the shard stream.
		{"detected fields line limit", "/loki/api/v1/detected_fields", span("query", `{service_name="api"}`, "line_limit", "1", "field_limit", "2"),
			`{"fields":[{"label":"level","type":"string","cardinality":1,"parsers":["logfmt"]},` +
				`{"label":"msg","type":"string","cardinality":1,"parsers":["logfmt"]}],"limit":2}`},
		{"detected fields none", "/loki/api/v1/detected_fields", span("query", `{service_name="db"}`),
			`{"fields":[{"label":"detected_level","type":"string","cardinality":1,"parsers":null}],"limit":1000}`},
		{"detected field values", "/loki/api/v1/detected_field/status/values", span("query", `{service_name="api"}`),
			`{"values":["200","500"],"limit":1000}`},
		{"detected field values limit", "/loki/api/v1/detected_field/took/values", span("query", `{service_name="api"}`, "limit", "2"),
			`{"values":["1.5s","12ms"],"limit":2}`},
		{"detected field values none", "/loki/api/v1/detected_field/nope/values", span("query", `{service_name="api"}`), `{"limit":1000}`},
		{"patterns", "/loki/api/v1/patterns", span("query", `{service_name="db"}`, "step", "10s"),
			`{"status":"success","data":[{"pattern":"connection from \u003c_\u003e accepted","level":"unknown","samples":[[1768435200,2]]}]}`},
		{"format query", "/loki/api/v1/format_query", url.Values{"query": {`{foo=   "bar"}`}},
			`{"status":"success","data":"{foo=\"bar\"}"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := get(t, f, tc.path, tc.params, "X-Scope-OrgID", "team-a")
			if code != 200 || body != tc.want {
				t.Errorf("%d\n got %s\nwant %s", code, body, tc.want)
			}
		})
	}
}

func TestDrilldownLimits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Version = "1.2.3"
	f := newFixture(t, cfg)
	code, doc, body := get(t, f, "/loki/api/v1/drilldown-limits", nil, "X-Query-Tags", "Source=grafana-lokiexplore-app")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if doc["version"] != lokiVersion || doc["pattern_ingester_enabled"] != true {
		t.Errorf("version, pattern_ingester_enabled: %s", body)
	}
	lim := doc["limits"].(map[string]any)
	// The fields Drilldown's LokiConfig type reads, with their JSON types.
	for name, kind := range map[string]string{
		"discover_log_levels": "bool", "discover_service_name": "array", "log_level_fields": "array",
		"max_entries_limit_per_query": "number", "max_line_size_truncate": "bool", "max_query_bytes_read": "string",
		"max_query_length": "string", "max_query_lookback": "string", "max_query_range": "string",
		"max_query_series": "number", "metric_aggregation_enabled": "bool", "pattern_persistence_enabled": "bool",
		"query_timeout": "string", "retention_period": "string", "volume_enabled": "bool", "volume_max_series": "number",
	} {
		var ok bool
		switch v := lim[name]; kind {
		case "bool":
			_, ok = v.(bool)
		case "array":
			_, ok = v.([]any)
		case "number":
			_, ok = v.(float64)
		case "string":
			_, ok = v.(string)
		}
		if !ok {
			t.Errorf("limits.%s = %#v, want a %s", name, lim[name], kind)
		}
	}
	if lim["max_entries_limit_per_query"] != float64(cfg.Query.MaxLines) || lim["query_timeout"] != "5m" || lim["max_query_bytes_read"] != "0B" {
		t.Errorf("limits: %s", body)
	}
}

func TestDrilldownFormats(t *testing.T) {
	for _, tc := range []struct {
		d    string
		want string
	}{{"0s", "0s"}, {"5m", "5m"}, {"745h", "31d1h"}, {"336h", "2w"}, {"1.5s", "1s500ms"}} {
		d, err := time.ParseDuration(tc.d)
		if err != nil {
			t.Fatal(err)
		}
		if got := formatDuration(d); got != tc.want {
			t.Errorf("formatDuration(%s) = %s, want %s", tc.d, got, tc.want)
		}
	}
	for n, want := range map[int64]string{0: "0B", 1 << 30: "1GiB", 1536 << 20: "1536MiB", 1000: "1000B"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %s, want %s", n, got, want)
		}
	}
	for _, tc := range []struct {
		vals []string
		ids  bool
	}{
		{[]string{"7"}, true},
		{[]string{"0", "1"}, false},
		{[]string{"1", "2", "3"}, true},
		{[]string{"f47ac10b-58cc-4372-a567-0e02b2c3d479", "12"}, true},
		{[]string{"db-0"}, false},
	} {
		set := map[string]bool{}
		for _, v := range tc.vals {
			set[v] = true
		}
		if got := idsOnly(set); got != tc.ids {
			t.Errorf("idsOnly(%v) = %v, want %v", tc.vals, got, tc.ids)
		}
	}
}

// drilldownPaths are a request of each Drilldown path that the data of
// drilldownPushed answers.
var drilldownPaths = []struct {
	path   string
	params url.Values
}{
	{"/loki/api/v1/index/volume", url.Values{"query": {`{service_name=~".+"}`}, "start": {qStart}, "end": {qEnd}}},
	{"/loki/api/v1/index/volume_range", url.Values{"query": {`{service_name=~".+"}`}, "start": {qStart}, "end": {qEnd}, "step": {"10s"}}},
	{"/loki/api/v1/detected_labels", url.Values{"query": {`{service_name=~".+"}`}, "start": {qStart}, "end": {qEnd}}},
	{"/loki/api/v1/detected_fields", url.Values{"query": {`{service_name=~".+"}`}, "start": {qStart}, "end": {qEnd}}},
	{"/loki/api/v1/detected_field/level/values", url.Values{"query": {`{service_name=~".+"}`}, "start": {qStart}, "end": {qEnd}}},
	{"/loki/api/v1/patterns", url.Values{"query": {`{service_name=~".+"}`}, "start": {qStart}, "end": {qEnd}}},
	{"/loki/api/v1/drilldown-limits", url.Values{}},
	{"/loki/api/v1/format_query", url.Values{"query": {`{service_name="api"}`}}},
}

// Another tenant's data never appears, and a tenant id that is not one
// is refused.
func TestDrilldownTenantIsolation(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	drilldownPushed(t, f, "team-a")
	for _, p := range drilldownPaths {
		_, _, own := get(t, f, p.path, p.params, "X-Scope-OrgID", "team-a")
		for _, other := range []string{"team-b", ""} {
			code, _, body := get(t, f, p.path, p.params, "X-Scope-OrgID", other)
			if code != 200 {
				t.Errorf("%s as %q: %d %s", p.path, other, code, body)
			}
			for _, leak := range []string{"api", "web", "db-0", "connection", "level"} {
				if strings.Contains(body, leak) && !strings.Contains(p.path, "format_query") && !strings.Contains(p.path, "limits") {
					t.Errorf("%s as %q shows team-a's %q: %s (team-a: %s)", p.path, other, leak, body, own)
				}
			}
		}
		if code, _, _ := get(t, f, p.path, p.params, "X-Scope-OrgID", "../team-a"); code != 400 {
			t.Errorf("%s with a tenant id holding a path: %d, want 400", p.path, code)
		}
	}
}

func TestDrilldownAuth(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Auth = []Credential{{Token: "secret-a", Tenants: []string{"team-a"}}}
	f := newFixture(t, cfg)
	for _, p := range drilldownPaths {
		if code, _, _ := get(t, f, p.path, p.params, "X-Scope-OrgID", "team-a"); code != 401 {
			t.Errorf("%s without a credential: %d, want 401", p.path, code)
		}
		if code, _, _ := get(t, f, p.path, p.params, "X-Scope-OrgID", "team-b", "Authorization", "Bearer secret-a"); code != 403 {
			t.Errorf("%s for another tenant: %d, want 403", p.path, code)
		}
		if code, _, body := get(t, f, p.path, p.params, "X-Scope-OrgID", "team-a", "Authorization", "Bearer secret-a"); code != 200 {
			t.Errorf("%s allowed: %d %s", p.path, code, body)
		}
	}
}

func TestDrilldownLimitsApply(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Admission.MaxQueries, cfg.Admission.MaxTenantQueries, cfg.Admission.QueueWait = 2, 1, 0
	cfg.Admission.MaxQuerySize = 100
	cfg.Query.MaxLines = 50
	cfg.Query.MaxBytesScanned = 10
	f := newFixture(t, cfg)
	drilldownPushed(t, f, "a")
	// A tenant's one query slot taken: each Drilldown path gets 429.
	release := holdQuery(t, f, "a")
	for _, p := range drilldownPaths {
		code, _, body := get(t, f, p.path, p.params, "X-Scope-OrgID", "a")
		if code != 429 || !strings.Contains(body, "--max-tenant-concurrent-queries") {
			t.Errorf("%s with the slot taken: %d %s, want 429 naming the limit", p.path, code, body)
		}
	}
	release()
	long := url.Values{"query": {`{service_name="` + strings.Repeat("x", 100) + `"}`}}
	for _, p := range drilldownPaths {
		if code, _, body := get(t, f, p.path, long, "X-Scope-OrgID", "a"); code != 400 || !strings.Contains(body, "--max-query-size") {
			t.Errorf("%s with a long query: %d %s, want 400 naming the limit", p.path, code, body)
		}
	}
	for _, tc := range []struct {
		path   string
		params url.Values
		msg    string
	}{
		{"/loki/api/v1/detected_fields", url.Values{"query": {`{service_name="api"}`}, "line_limit": {"51"}}, "line_limit > max_entries_limit_per_query (51 > 50)"},
		{"/loki/api/v1/detected_fields", url.Values{"query": {`{service_name="api"}`}, "start": {qStart}, "end": {qEnd}}, "the query would read more than 10 bytes"},
		{"/loki/api/v1/index/volume", url.Values{"query": {`{service_name="api"}`}, "start": {qStart}, "end": {qEnd}}, "the query would read more than 10 bytes"},
		{"/loki/api/v1/patterns", url.Values{"query": {`{service_name="api"}`}, "start": {qStart}, "end": {qEnd}}, "the query would read more than 10 bytes"},
		{"/loki/api/v1/index/volume", url.Values{"query": {`{service_name="api"`}}, "parse error"},
		{"/loki/api/v1/index/volume", url.Values{"query": {`{service_name="api"}`}, "aggregateBy": {"pods"}}, `invalid aggregateBy "pods"`},
		{"/loki/api/v1/index/volume", url.Values{}, "query must not be empty"},
		{"/loki/api/v1/index/volume_range", url.Values{"query": {`{service_name="api"}`}, "start": {"0"}, "end": {qEnd}, "step": {"1ms"}}, "exceeded maximum resolution"},
		{"/loki/api/v1/detected_fields", url.Values{"query": {`count_over_time({service_name="api"}[1m])`}}, "a log query is expected"},
		{"/loki/api/v1/format_query", url.Values{"query": {`{foo=`}}, "parse error"},
	} {
		code, _, body := get(t, f, tc.path, tc.params, "X-Scope-OrgID", "a")
		if code != 400 || !strings.Contains(body, tc.msg) {
			t.Errorf("%s %v: %d %q, want 400 with %q", tc.path, tc.params, code, body, tc.msg)
		}
	}
}

// TestDrilldownReplay replays the requests Grafana Logs Drilldown sends,
// as its source (grafana/logs-drilldown src/services/datasource.ts and the
// scenes that build the queries) builds them and Grafana's Loki data
// source forwards them: resource calls with ISO times and the
// X-Query-Tags header, then the data queries of the service selection
// and of a service's page. Each must answer 200 with the body Drilldown
// parses.
func TestDrilldownReplay(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	drilldownPushed(t, f, "default")
	const (
		isoStart = "2026-01-15T00:00:00.000Z"
		isoEnd   = "2026-01-15T00:01:00.000Z"
		tags     = "Source=grafana-lokiexplore-app"
	)
	type check func(t *testing.T, doc map[string]any)
	promData := func(resultType string) check {
		return func(t *testing.T, doc map[string]any) {
			data, _ := doc["data"].(map[string]any)
			if doc["status"] != "success" || data["resultType"] != resultType {
				t.Errorf("want status success, resultType %s", resultType)
			}
			if _, ok := data["result"].([]any); !ok {
				t.Errorf("no result array")
			}
		}
	}
	nonEmpty := func(key string) check {
		return func(t *testing.T, doc map[string]any) {
			if arr, _ := doc[key].([]any); len(arr) == 0 {
				t.Errorf("no %s", key)
			}
		}
	}
	for _, tc := range []struct {
		name    string
		path    string
		params  url.Values
		headers []string
		check   check
	}{
		// Start-up: the limits, the services by volume, the label tabs.
		{"limits", "/loki/api/v1/drilldown-limits", url.Values{},
			[]string{"X-Grafana-Cache", "private, max-age=86400", "X-Query-Tags", tags},
			func(t *testing.T, doc map[string]any) {
				if _, ok := doc["limits"].(map[string]any); !ok {
					t.Errorf("no limits")
				}
			}},
		{"services by volume", "/loki/api/v1/index/volume",
			url.Values{"end": {isoEnd}, "limit": {"5000"}, "query": {`{service_name=~".+"}`}, "start": {isoStart}},
			[]string{"X-Query-Tags", tags},
			func(t *testing.T, doc map[string]any) {
				promData("vector")(t, doc)
				res := doc["data"].(map[string]any)["result"].([]any)
				if len(res) != 3 || res[0].(map[string]any)["metric"].(map[string]any)["service_name"] != "api" {
					t.Errorf("services: %v", res)
				}
			}},
		{"label tabs", "/loki/api/v1/detected_labels", url.Values{"end": {isoEnd}, "query": {""}, "start": {isoStart}},
			[]string{"X-Query-Tags", tags}, nonEmpty("detectedLabels")},
		{"service levels", "/loki/api/v1/query_range",
			url.Values{"query": {`sum by (detected_level) (count_over_time({ service_name="api" } [1m]))`},
				"start": {"1768435200000000000"}, "end": {"1768435260000000000"}, "step": {"1m0s"}, "direction": {"backward"}},
			[]string{"X-Query-Tags", tags}, promData("matrix")},
		{"service logs preview", "/loki/api/v1/query_range",
			url.Values{"query": {`{service_name="api"}`}, "limit": {"100"}, "direction": {"backward"},
				"start": {"1768435200000000000"}, "end": {"1768435260000000000"}, "step": {"2s"}},
			nil, promData("streams")},
		// A service's page.
		{"service labels", "/loki/api/v1/detected_labels", url.Values{"end": {isoEnd}, "query": {"{service_name=`api`}"}, "start": {isoStart}},
			[]string{"X-Query-Tags", tags}, nonEmpty("detectedLabels")},
		{"service fields", "/loki/api/v1/detected_fields",
			url.Values{"end": {isoEnd}, "query": {"{service_name=`api`}     | json  | logfmt | drop __error__, __error_details__ "}, "start": {isoStart}},
			[]string{"X-Query-Tags", tags},
			func(t *testing.T, doc map[string]any) {
				nonEmpty("fields")(t, doc)
				for _, fl := range doc["fields"].([]any) {
					m := fl.(map[string]any)
					if _, ok := m["label"].(string); !ok || m["type"] == nil || m["cardinality"] == nil {
						t.Errorf("field %v", m)
					}
					if _, ok := m["parsers"]; !ok {
						t.Errorf("field %v has no parsers (null for structured metadata)", m)
					}
				}
			}},
		{"service patterns", "/loki/api/v1/patterns",
			url.Values{"end": {isoEnd}, "query": {"{service_name=`api`}  | json  | logfmt | drop __error__, __error_details__"}, "start": {isoStart}, "step": {"2s"}},
			[]string{"X-Query-Tags", tags},
			func(t *testing.T, doc map[string]any) {
				data, _ := doc["data"].([]any)
				if doc["status"] != "success" || len(data) == 0 {
					t.Fatalf("no patterns")
				}
				levels := map[string]bool{}
				for _, p := range data {
					m := p.(map[string]any)
					levels[m["level"].(string)] = true
					for _, s := range m["samples"].([]any) {
						if pair := s.([]any); len(pair) != 2 {
							t.Errorf("sample %v", pair)
						}
					}
				}
				if !levels["info"] || !levels["warn"] {
					t.Errorf("levels %v, want info and warn from the parsed level", levels)
				}
			}},
		{"field values", "/loki/api/v1/detected_field/level/values",
			url.Values{"end": {isoEnd}, "query": {"{service_name=`api`} | json | logfmt | drop __error__, __error_details__"}, "start": {isoStart}},
			[]string{"X-Query-Tags", tags}, nonEmpty("values")},
		{"field breakdown", "/loki/api/v1/query_range",
			url.Values{"query": {"sum by (status) (count_over_time({service_name=`api`} | json | logfmt | drop __error__, __error_details__ | keep status [1m]))"},
				"start": {"1768435200000000000"}, "end": {"1768435260000000000"}, "step": {"1m0s"}},
			[]string{"X-Query-Tags", tags}, promData("matrix")},
		{"label volume", "/loki/api/v1/index/volume_range",
			url.Values{"query": {"{service_name=`api`}"}, "start": {isoStart}, "end": {isoEnd}, "step": {"10s"}, "targetLabels": {"env"}},
			[]string{"X-Query-Tags", tags}, promData("matrix")},
		{"format", "/loki/api/v1/format_query", url.Values{"query": {"{service_name=`api`} |= `GET`"}}, nil,
			func(t *testing.T, doc map[string]any) {
				if doc["data"] != `{service_name="api"} |= "GET"` {
					t.Errorf("formatted %v", doc["data"])
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := f.do("GET", tc.path+"?"+tc.params.Encode(), nil, tc.headers...)
			if code != 200 {
				t.Fatalf("%d %s", code, body)
			}
			var doc map[string]any
			if err := json.Unmarshal([]byte(body), &doc); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			tc.check(t, doc)
		})
	}
	// Drilldown posts the same forms when the URL would be too long.
	code, body := f.do("POST", "/loki/api/v1/detected_fields", []byte(url.Values{"query": {`{service_name="web"}`}, "start": {isoStart}, "end": {isoEnd}}.Encode()),
		"Content-Type", "application/x-www-form-urlencoded")
	if code != 200 || !strings.Contains(body, `"user_name"`) {
		t.Errorf("POST detected_fields: %d %s", code, body)
	}
}
