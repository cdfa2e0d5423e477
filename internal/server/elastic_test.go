package server

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestBulk(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	body := `{"index":{"_index":"logs"}}
{"@timestamp":"2026-01-15T08:00:00Z","message":"one","service":"api"}

{"create":{}}
{"message":"broken
{"index":{}}
{"message":"three","service":"api"}
{"delete":{"_id":"1"}}
`
	code, reply := f.do("POST", "/logs/_bulk", []byte(body), "Content-Type", "application/x-ndjson", "X-Scope-OrgID", "es")
	if code != 200 {
		t.Fatalf("bulk: %d %s", code, reply)
	}
	var r struct {
		Errors bool `json:"errors"`
		Items  []map[string]struct {
			Index  string `json:"_index"`
			Status int    `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(reply), &r); err != nil {
		t.Fatalf("reply %s: %v", reply, err)
	}
	var statuses []int
	for _, it := range r.Items {
		for _, v := range it {
			statuses = append(statuses, v.Status)
		}
	}
	if !r.Errors || !slices.Equal(statuses, []int{201, 400, 201, 400}) || r.Items[0]["index"].Index != "logs" {
		t.Errorf("reply %s: statuses %v", reply, statuses)
	}
	want := []string{
		`{service="api"} {"@timestamp":"2026-01-15T08:00:00Z","message":"one","service":"api"}`,
		`{service="api"} {"message":"three","service":"api"}`,
	}
	if got := f.stored("es"); !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
}

func TestElasticEndpoints(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	req := httptest.NewRequest("GET", "/", nil)
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Header().Get("X-Elastic-Product") != "Elasticsearch" || !strings.Contains(rec.Body.String(), `"number":"8.`) {
		t.Errorf("GET /: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	for _, tc := range []struct {
		method, path, want string
		code               int
	}{
		{"HEAD", "/", "", 200},
		{"GET", "/_cluster/health", `"status":"green"`, 200},
		{"GET", "/_cat/health", "green", 200},
		{"GET", "/_license", `"status":"active"`, 200},
		{"GET", "/_xpack", `"ilm":{"available":true,"enabled":true}`, 200},
		{"PUT", "/_index_template/logs", `"acknowledged":true`, 200},
		{"PUT", "/_ingest/pipeline/p", `"acknowledged":true`, 200},
		{"GET", "/nothing/here/at/all", "404", 404},
	} {
		code, body := f.do(tc.method, tc.path, nil)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, code, body)
		}
	}
	// Single documents, pretty-printed or not, and the pre-7 /index/type.
	for _, path := range []string{"/idx/_doc", "/idx/_doc/id1", "/idx/syslog"} {
		code, body := f.do("POST", path, []byte("{\n  \"message\": \"doc\",\n  \"service\": \"x\"\n}"))
		if code != 201 || !strings.Contains(body, `"result":"created"`) {
			t.Errorf("POST %s: %d %s", path, code, body)
		}
	}
	if got := f.stored("default"); len(got) != 3 || got[0] != `{service="x"} {"message":"doc","service":"x"}` {
		t.Errorf("stored %q", got)
	}
	if code, _ := f.do("POST", "/idx/_doc", []byte(`{"broken`)); code != 400 {
		t.Errorf("bad document: %d, want 400", code)
	}
}

func TestInsertTypo(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	if code, body := f.do("POST", "/insert/jsonlines", []byte(`{"msg":"x"}`)); code != 404 || !strings.Contains(body, "/insert/jsonline") {
		t.Errorf("typo: %d %s, want 404 with a hint", code, body)
	}
}

// TestElasticManagement: each index-management call shippers make at
// start-up answers in Elasticsearch 8.11's shape: 404 before the object
// is installed, the object after.
func TestElasticManagement(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	type step struct {
		method, path, body string
		code               int
		want               string // the whole body, or with a leading ~ a part of it
	}
	run := func(steps []step, headers ...string) {
		t.Helper()
		for _, c := range steps {
			code, body := f.do(c.method, c.path, []byte(c.body), headers...)
			ok := code == c.code
			if strings.HasPrefix(c.want, "~") {
				ok = ok && strings.Contains(body, c.want[1:])
			} else {
				ok = ok && body == c.want
			}
			if !ok {
				t.Errorf("%s %s: %d %s\nwant %d %s", c.method, c.path, code, body, c.code, c.want)
			}
		}
	}
	run([]step{
		// Filebeat: GET the policy, PUT it when 404.
		{"GET", "/_ilm/policy/filebeat", "", 404,
			`{"error":{"root_cause":[{"type":"resource_not_found_exception","reason":"Lifecycle policy not found: filebeat"}],"type":"resource_not_found_exception","reason":"Lifecycle policy not found: filebeat"},"status":404}`},
		{"PUT", "/_ilm/policy/filebeat", `{"policy":{"phases":{"hot":{"actions":{"rollover":{"max_age":"30d"}}}}}}`, 200, `{"acknowledged":true}`},
		{"GET", "/_ilm/policy/filebeat", "", 200, `~{"filebeat":{"version":1,"modified_date":"`},
		{"GET", "/_ilm/policy/filebeat", "", 200, `~"policy":{"phases":{"hot":{"actions":{"rollover":{"max_age":"30d"}}}}},"in_use_by":{"indices":[],"data_streams":[],"composable_templates":[]}}}`},
		{"GET", "/_ilm/policy", "", 200, `~{"filebeat":{`},
		{"PUT", "/_ilm/policy/bad", `{"phases":{}}`, 400, `~x_content_parse_exception`},
		{"PUT", "/_ilm/policy/bad", `not json`, 400, `~not a JSON object`},
		// Templates: HEAD, then PUT, then HEAD and GET.
		{"HEAD", "/_index_template/filebeat-8.11.0", "", 404, ""},
		{"GET", "/_index_template/filebeat-8.11.0", "", 404, `~"reason":"index template matching [filebeat-8.11.0] not found"`},
		{"PUT", "/_index_template/filebeat-8.11.0", `{"index_patterns":["filebeat-8.11.0"],"data_stream":{},"priority":150,"version":3}`, 200, `{"acknowledged":true}`},
		{"HEAD", "/_index_template/filebeat-8.11.0", "", 200, ""},
		{"GET", "/_index_template/filebeat-8.11.0", "", 200,
			`{"index_templates":[{"name":"filebeat-8.11.0","index_template":{"index_patterns":["filebeat-8.11.0"],"data_stream":{},"priority":150,"version":3}}]}`},
		{"GET", "/_index_template/nothing*", "", 200, `{"index_templates":[]}`},
		{"POST", "/_index_template/posted", `{"index_patterns":["p-*"]}`, 200, `{"acknowledged":true}`},
		{"GET", "/_template/legacy", "", 404, `{}`},
		{"PUT", "/_template/legacy", `{"index_patterns":"logstash-*","order":0}`, 200, `{"acknowledged":true}`},
		{"GET", "/_template/legacy", "", 200, `{"legacy":{"index_patterns":"logstash-*","order":0}}`},
		{"GET", "/_component_template/c", "", 404, `~component template matching [c] not found`},
		{"GET", "/_ingest/pipeline/p", "", 404, `{}`},
		{"PUT", "/_ingest/pipeline/p", `{"processors":[]}`, 200, `{"acknowledged":true}`},
		{"GET", "/_ingest/pipeline/p", "", 200, `{"p":{"processors":[]}}`},
		{"DELETE", "/_ingest/pipeline/p", "", 200, `{"acknowledged":true}`},
		{"GET", "/_ingest/pipeline/p", "", 404, `{}`},
		// _cat/templates, text and JSON.
		{"GET", "/_cat/templates?v", "", 200, "name index_patterns order version composed_of\nfilebeat-8.11.0 [filebeat-8.11.0] 150 3 []\nlegacy [logstash-*] 0  \nposted [p-*] 0  []\n"},
		{"GET", "/_cat/templates/file*?format=json", "", 200, `[{"name":"filebeat-8.11.0","index_patterns":"[filebeat-8.11.0]","order":"150","version":"3","composed_of":"[]"}]`},
		// Data streams.
		{"GET", "/_data_stream/logs-app-default", "", 404, `~"type":"index_not_found_exception","reason":"no such index [logs-app-default]"`},
		{"PUT", "/_data_stream/logs-app-default", "", 200, `{"acknowledged":true}`},
		{"GET", "/_data_stream/logs-app-default", "", 200, `~{"data_streams":[{"name":"logs-app-default","timestamp_field":{"name":"@timestamp"}`},
		{"GET", "/_data_stream", "", 200, `~"name":"logs-app-default"`},
		{"GET", "/_data_stream/other*", "", 200, `{"data_streams":[]}`},
		// Logstash's rollover alias: HEAD, PUT the index in date math, HEAD.
		{"HEAD", "/logstash", "", 404, ""},
		{"HEAD", "/_alias/logstash", "", 404, ""},
		{"GET", "/_alias/logstash", "", 404, `{"error":"alias [logstash] missing","status":404}`},
		{"PUT", "/%3Clogstash-%7Bnow%2Fd%7D-000001%3E", `{"aliases":{"logstash":{"is_write_index":true}}}`, 200,
			`~{"acknowledged":true,"shards_acknowledged":true,"index":"logstash-`},
		{"HEAD", "/logstash", "", 200, ""},
		{"HEAD", "/_alias/logstash", "", 200, ""},
		{"GET", "/_alias/logstash", "", 200, `~"aliases":{"logstash":{}}}}`},
		{"PUT", "/%3Clogstash-%7Bnow%2Fd%7D-000001%3E", `{"aliases":{"logstash":{"is_write_index":true}}}`, 400, `~resource_already_exists_exception`},
		// Sniffing.
		{"GET", "/_nodes/http", "", 200, `~"http":{"bound_address":["example.com"],"publish_address":"example.com"`},
		{"GET", "/_nodes/_local/http", "", 200, `~"version":"8.11.0"`},
		{"GET", "/_ilm/status", "", 200, `{"operation_mode":"RUNNING"}`},
	})
	// Objects are per tenant.
	run([]step{{"GET", "/_ilm/policy/filebeat", "", 404, `~Lifecycle policy not found`}}, "X-Scope-OrgID", "other")
}

// TestElasticManagementAuth: with auth on, the management calls need a
// credential for the tenant.
func TestElasticManagementAuth(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Auth = []Credential{{Token: "a-token", Tenants: []string{"a"}}}
	f := newFixture(t, cfg)
	if code, _ := f.do("PUT", "/_ilm/policy/p", []byte(`{"policy":{}}`), "X-Scope-OrgID", "a"); code != 401 {
		t.Errorf("no credential: %d, want 401", code)
	}
	if code, _ := f.do("GET", "/_index_template/t", nil, "X-Scope-OrgID", "b", "Authorization", "Bearer a-token"); code != 403 {
		t.Errorf("other tenant: %d, want 403", code)
	}
	if code, _ := f.do("PUT", "/_ilm/policy/p", []byte(`{"policy":{}}`), "X-Scope-OrgID", "a", "Authorization", "Bearer a-token"); code != 200 {
		t.Errorf("allowed: %d, want 200", code)
	}
}

// TestBulkMissingIndex: an action with no index, in its line or the URL,
// fails the whole request as Elasticsearch's validation does, and nothing
// is stored.
func TestBulkMissingIndex(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	body := "{\"index\":{\"_index\":\"a\"}}\n{\"message\":\"one\"}\n{\"create\":{}}\n{\"message\":\"two\"}\n"
	code, reply := f.do("POST", "/_bulk", []byte(body))
	want := `{"error":{"root_cause":[{"type":"action_request_validation_exception","reason":"Validation Failed: 1: index is missing;"}],` +
		`"type":"action_request_validation_exception","reason":"Validation Failed: 1: index is missing;"},"status":400}`
	if code != 400 || reply != want {
		t.Errorf("bulk: %d %s\nwant 400 %s", code, reply, want)
	}
	if got := f.stored("default"); len(got) != 0 {
		t.Errorf("stored %q", got)
	}
	// With the index in the URL the same body is fine.
	if code, reply := f.do("POST", "/b/_bulk", []byte(body)); code != 200 || !strings.Contains(reply, `"errors":false`) {
		t.Errorf("with a URL index: %d %s", code, reply)
	}
}

// TestBulkFilterPath: filter_path as Logstash and the Go client send it.
func TestBulkFilterPath(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	body := "{\"index\":{\"_index\":\"a\"}}\n{\"message\":\"one\"}\n{\"create\":{\"_index\":\"a\"}}\n{\"broken\n"
	code, reply := f.do("POST", "/_bulk?filter_path=errors,items.*.error,items.*.status", []byte(body))
	if code != 200 || !strings.HasPrefix(reply, `{"errors":true,"items":[{"index":{"status":201}},{"create":{"status":400,"error":{"type":"document_parsing_exception","reason":`) {
		t.Errorf("bulk: %d %s", code, reply)
	}
	code, reply = f.do("POST", "/_bulk?filter_path=errors,items.*.error", []byte("{\"index\":{\"_index\":\"a\"}}\n{\"message\":\"two\"}\n"))
	if code != 200 || reply != `{"errors":false}` {
		t.Errorf("bulk without errors: %d %s", code, reply)
	}
	code, reply = f.do("GET", "/?filter_path=version.number", nil)
	if code != 200 || reply != `{"version":{"number":"8.11.0"}}` {
		t.Errorf("root: %d %s", code, reply)
	}
	code, reply = f.do("GET", "/?filter_path=-version,-tagline,-cluster_uuid", nil)
	if code != 200 || reply != `{"name":"sluice","cluster_name":"sluice"}` {
		t.Errorf("root, excluded: %d %s", code, reply)
	}
	if code, reply := f.do("GET", "/?filter_path=a..b", nil); code != 400 || !strings.Contains(reply, "empty field name") {
		t.Errorf("bad filter_path: %d %s", code, reply)
	}
}

// TestElasticManagementLimits: a tenant's installed objects are bounded
// in number and bytes, each refused past the limit with a 400 naming it,
// without touching what other tenants may keep; replacing or deleting an
// object gives its room back.
func TestElasticManagementLimits(t *testing.T) {
	var c esCatalog
	for i := range maxESObjects {
		if _, err := c.put(esKey{"a", esPipeline, fmt.Sprint(i)}, json.RawMessage(`{}`)); err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
	}
	if _, err := c.put(esKey{"a", esPipeline, "one-more"}, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "maxESObjects") {
		t.Errorf("past the count: %v", err)
	}
	if _, err := c.put(esKey{"a", esPipeline, "0"}, json.RawMessage(`{"replaced":true}`)); err != nil {
		t.Errorf("replacing: %v", err)
	}
	if _, err := c.put(esKey{"b", esPipeline, "x"}, json.RawMessage(`{}`)); err != nil {
		t.Errorf("another tenant: %v", err)
	}
	if !c.delete(esKey{"a", esPipeline, "1"}) {
		t.Fatal("delete")
	}
	if _, err := c.put(esKey{"a", esPipeline, "one-more"}, json.RawMessage(`{}`)); err != nil {
		t.Errorf("after a delete: %v", err)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", maxESBytes/2) + `"`)
	if _, err := c.put(esKey{"c", esIndexTemplate, "big1"}, big); err != nil {
		t.Fatal(err)
	}
	if _, err := c.put(esKey{"c", esIndexTemplate, "big2"}, big); err == nil || !strings.Contains(err.Error(), "maxESBytes") {
		t.Errorf("past the bytes: %v", err)
	}
	if _, ok := c.get(esKey{"c", esIndexTemplate, "big2"}); ok {
		t.Error("the refused object is kept")
	}
	// Through HTTP: a body over maxESObjectBytes is a 413.
	f := newFixture(t, DefaultConfig())
	code, body := f.do("PUT", "/_index_template/huge", []byte(`{"x":"`+strings.Repeat("x", maxESObjectBytes)+`"}`))
	if code != 413 || !strings.Contains(body, "maxESObjectBytes") {
		t.Errorf("huge: %d %.200s", code, body)
	}
}

// TestBulkBatchesInOrder: a _bulk body of many parser batches (two in
// flight, as a line body's) is stored whole, every item 201; with the
// disk filling up halfway, the request answers 507 and what was stored
// is the body's first documents, none missing between them.
func TestBulkBatchesInOrder(t *testing.T) {
	var body []byte
	docs := 0
	for ; len(body) < 12<<20; docs++ {
		body = fmt.Appendf(body, "{\"index\":{}}\n{\"ts\":%d,\"message\":\"doc %d %s\"}\n", 1768464000000+docs, docs, strings.Repeat("x", 200))
	}
	t.Run("whole", func(t *testing.T) {
		f := newFixture(t, DefaultConfig())
		code, reply := f.do("POST", "/logs/_bulk", body, "Content-Type", "application/x-ndjson")
		if code != 200 || strings.Contains(reply, `"errors":true`) {
			t.Fatalf("bulk: %d %.300s", code, reply)
		}
		if n := strings.Count(reply, `"status":201`); n != docs {
			t.Errorf("%d items created, want %d", n, docs)
		}
		if got := f.stored("default"); len(got) != docs {
			t.Errorf("%d documents stored, want %d", len(got), docs)
		}
	})
	t.Run("disk full", func(t *testing.T) {
		f := newFixture(t, DefaultConfig())
		f.fs.SetCapacity(f.fs.Used() + 6<<20)
		code, reply := f.do("POST", "/logs/_bulk", body, "Content-Type", "application/x-ndjson")
		if code != 507 {
			t.Fatalf("bulk: %d %.300s, want 507", code, reply)
		}
		got := f.stored("default")
		if len(got) == 0 || len(got) >= docs {
			t.Fatalf("%d of %d documents stored, want some and not all", len(got), docs)
		}
		seen := make([]bool, docs)
		for _, line := range got {
			var n int
			i := strings.Index(line, `doc `)
			if i < 0 {
				t.Fatalf("stored line %q", line)
			}
			fmt.Sscanf(line[i:], "doc %d", &n)
			seen[n] = true
		}
		for i := range got {
			if !seen[i] {
				t.Fatalf("document %d missing below the %d stored", i, len(got))
			}
		}
	})
}
