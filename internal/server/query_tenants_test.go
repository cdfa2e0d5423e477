package server

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// TestMultiTenantQuery: X-Scope-OrgID a|b reads both tenants, every
// stream labelled __tenant_id__, in query_range, query, labels, label
// values, series and index/stats, as Loki's multi-tenant querier.
func TestMultiTenantQuery(t *testing.T) {
	f := newFixture(t, plainConfig())
	pushed(t, f, "team-a")
	pushed(t, f, "team-b")
	pushed(t, f, "team-c")
	span := url.Values{"start": {qStart}, "end": {qEnd}}
	with := func(kv ...string) url.Values {
		v := url.Values{"start": {qStart}, "end": {qEnd}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v
	}
	const ab = "team-b|team-a"
	_, doc, body := get(t, f, "/loki/api/v1/query_range", with("query", `{app="web"}`), "X-Scope-OrgID", ab)
	got, _ := json.Marshal(doc["data"].(map[string]any)["result"])
	want := `[{"stream":{"__tenant_id__":"team-a","app":"web","env":"prod"},"values":[["1768435203000000000","{\"level\":\"error\",\"msg\":\"render\",\"took_ms\":31}"]]},` +
		`{"stream":{"__tenant_id__":"team-b","app":"web","env":"prod"},"values":[["1768435203000000000","{\"level\":\"error\",\"msg\":\"render\",\"took_ms\":31}"]]}]`
	if string(got) != want {
		t.Errorf("query_range: %s\nwant %s", got, want)
	}
	// A selector on __tenant_id__ picks a tenant.
	_, doc, body = get(t, f, "/loki/api/v1/query_range", with("query", `{__tenant_id__="team-b", app=~".+"}`), "X-Scope-OrgID", ab)
	for _, r := range doc["data"].(map[string]any)["result"].([]any) {
		if st := r.(map[string]any)["stream"].(map[string]any); st["__tenant_id__"] != "team-b" {
			t.Errorf("{__tenant_id__=\"team-b\"} gave %v: %s", st, body)
		}
	}
	_, _, body = get(t, f, "/loki/api/v1/query_range", with("query", `sum by (__tenant_id__) (count_over_time({app=~".+"}[1h]))`, "step", "60"), "X-Scope-OrgID", ab)
	if !strings.Contains(body, `{"metric":{"__tenant_id__":"team-a"},"values":[[1768435260,"4"]]},{"metric":{"__tenant_id__":"team-b"},"values":[[1768435260,"4"]]}`) {
		t.Errorf("sum by tenant: %s", body)
	}
	_, _, body = get(t, f, "/loki/api/v1/query", url.Values{"query": {`sum(count_over_time({app="api"}[1h]))`}, "time": {"2026-01-15T00:01:00Z"}}, "X-Scope-OrgID", ab)
	if !strings.Contains(body, `"result":[{"metric":{},"value":[1768435260,"6"]}]`) {
		t.Errorf("instant over both tenants: %s", body)
	}
	if _, _, body := get(t, f, "/loki/api/v1/labels", span, "X-Scope-OrgID", ab); body != `{"status":"success","data":["__tenant_id__","app","env"]}` {
		t.Errorf("labels: %s", body)
	}
	if _, _, body := get(t, f, "/loki/api/v1/label/__tenant_id__/values", span, "X-Scope-OrgID", ab); body != `{"status":"success","data":["team-a","team-b"]}` {
		t.Errorf("tenant values: %s", body)
	}
	if _, _, body := get(t, f, "/loki/api/v1/label/app/values", with("query", `{__tenant_id__="team-a", env="dev"}`), "X-Scope-OrgID", ab); body != `{"status":"success","data":["api"]}` {
		t.Errorf("app values: %s", body)
	}
	_, _, body = get(t, f, "/loki/api/v1/series", with("match[]", `{app="web"}`), "X-Scope-OrgID", ab)
	if body != `{"status":"success","data":[{"__tenant_id__":"team-a","app":"web","env":"prod"},{"__tenant_id__":"team-b","app":"web","env":"prod"}]}` {
		t.Errorf("series: %s", body)
	}
	if _, _, body := get(t, f, "/loki/api/v1/index/stats", with("query", `{app="api"}`), "X-Scope-OrgID", ab); body != `{"streams":4,"chunks":4,"entries":6,"bytes":100}` {
		t.Errorf("index stats: %s", body)
	}
	if _, _, body := get(t, f, "/loki/api/v1/index/stats", with("query", `{app="api", __tenant_id__="team-a"}`), "X-Scope-OrgID", ab); body != `{"streams":2,"chunks":2,"entries":3,"bytes":50}` {
		t.Errorf("index stats of one tenant: %s", body)
	}
	// One tenant, or the same twice: nothing changes, no label.
	for _, one := range []string{"team-a", "team-a|team-a"} {
		if _, _, body := get(t, f, "/loki/api/v1/labels", span, "X-Scope-OrgID", one); body != `{"status":"success","data":["app","env"]}` {
			t.Errorf("labels of %q: %s", one, body)
		}
		_, doc, _ := get(t, f, "/loki/api/v1/query_range", with("query", `{app="web"}`), "X-Scope-OrgID", one)
		got, _ := json.Marshal(doc["data"].(map[string]any)["result"])
		if strings.Contains(string(got), "__tenant_id__") || !strings.Contains(string(got), `"app":"web"`) {
			t.Errorf("query_range of %q: %s", one, got)
		}
	}
	for _, bad := range []string{"team-a|", "team-a|../x", "|"} {
		if code, _, body := get(t, f, "/loki/api/v1/labels", span, "X-Scope-OrgID", bad); code != 400 || !strings.Contains(body, "X-Scope-OrgID") {
			t.Errorf("X-Scope-OrgID %q: %d %s, want 400", bad, code, body)
		}
	}
	if code, _, body := get(t, f, "/loki/api/v1/tail", with("query", `{app="api"}`), "X-Scope-OrgID", ab); code != 400 || !strings.Contains(body, "multi-tenant tail") {
		t.Errorf("tail: %d %s", code, body)
	}
}

// TestMultiTenantAuth: a credential must be allowed every tenant named;
// one allowed only a cannot read b through a|b, on any query path.
func TestMultiTenantAuth(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Auth = []Credential{
		{Token: "only-a", Tenants: []string{"team-a"}},
		{Token: "a-and-b", Tenants: []string{"team-a", "team-b"}},
		{Token: "any", Tenants: []string{"*"}},
	}
	f := newFixture(t, cfg)
	for _, tenant := range []string{"team-a", "team-b"} {
		body := `{"streams":[{"stream":{"app":"api"},"values":[["1768435201000000000","` + tenant + ` line"]]}]}`
		if code, reply := f.do("POST", "/loki/api/v1/push", []byte(body), "Content-Type", "application/json", "X-Scope-OrgID", tenant, "Authorization", "Bearer any"); code != 204 {
			t.Fatalf("push: %d %s", code, reply)
		}
	}
	q := url.Values{"query": {`{app="api"}`}, "start": {qStart}, "end": {qEnd}}
	for _, path := range []string{"/loki/api/v1/query_range", "/loki/api/v1/labels", "/loki/api/v1/label/app/values",
		"/loki/api/v1/label/__tenant_id__/values", "/loki/api/v1/series", "/loki/api/v1/index/stats"} {
		for _, c := range []struct {
			tenants, token string
			code           int
		}{
			{"team-a|team-b", "only-a", 403},
			{"team-b|team-a", "only-a", 403},
			{"team-a|team-b", "", 401},
			{"team-a|team-b", "a-and-b", 200},
			{"team-a|team-b", "any", 200},
			{"team-a", "only-a", 200},
			{"team-b", "only-a", 403},
		} {
			headers := []string{"X-Scope-OrgID", c.tenants}
			if c.token != "" {
				headers = append(headers, "Authorization", "Bearer "+c.token)
			}
			code, _, body := get(t, f, path, q, headers...)
			if code != c.code {
				t.Errorf("%s as %q with %q: %d %s, want %d", path, c.tenants, c.token, code, body, c.code)
			}
			if code == 403 && strings.Contains(body, "team-b") {
				t.Errorf("%s: the 403 shows data: %s", path, body)
			}
		}
	}
}

// TestMultiTenantPushRefused: a push goes to one tenant; a|b is a 400
// that says so, and nothing is stored.
func TestMultiTenantPushRefused(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	body := `{"streams":[{"stream":{"app":"x"},"values":[["1768435201000000000","one"]]}]}`
	for _, path := range []string{"/loki/api/v1/push", "/insert/jsonline"} {
		code, reply := f.do("POST", path, []byte(body), "Content-Type", "application/json", "X-Scope-OrgID", "team-a|team-b")
		if code != 400 || !strings.Contains(reply, "names several tenants") {
			t.Errorf("%s: %d %s, want 400", path, code, reply)
		}
	}
	for _, tenant := range []string{"team-a", "team-b", "default"} {
		if got := f.stored(tenant); len(got) != 0 {
			t.Errorf("tenant %s holds %q", tenant, got)
		}
	}
}
