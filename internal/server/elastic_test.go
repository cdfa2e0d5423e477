package server

import (
	"encoding/json"
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
		{"PUT", "/_index_template/logs", `"acknowledged":true`, 200},
		{"PUT", "/_ilm/policy/p", `"acknowledged":true`, 200},
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
