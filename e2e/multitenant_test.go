package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLogcliMultiTenant: Grafana's logcli with --org-id "a|b" (Loki's
// multi-tenant query) reads both tenants, each stream labelled
// __tenant_id__; a selector on it picks one tenant; labels and series
// merge the tenants; a third tenant stays unseen.
func TestLogcliMultiTenant(t *testing.T) {
	skipIfOff(t)
	bin := logcliPath(t)
	s := startServer(t)
	defer s.stop(t)
	start := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	for _, tenant := range []string{"mt-a", "mt-b", "mt-c"} {
		var lines []string
		for i := range 3 {
			lines = append(lines, fmt.Sprintf("%s line %d", tenant, i))
		}
		lokiPush(t, s, tenant, map[string]string{"app": "api"}, start, lines...)
	}
	logcli := func(org string, args ...string) string {
		t.Helper()
		return runScript(t, time.Minute, bin, append([]string{"--addr=" + s.url(""), "--org-id=" + org, "--quiet"}, args...)...)
	}
	split := func(out string) []string { return strings.Split(strings.TrimSpace(out), "\n") }

	out := logcli("mt-b|mt-a", "query", "--since=1h", "--limit=100", "--forward", "--output=jsonl", `{app="api"}`)
	var a, b int
	for _, l := range split(out) {
		switch {
		case strings.Contains(l, `"__tenant_id__":"mt-a"`) && strings.Contains(l, "mt-a line"):
			a++
		case strings.Contains(l, `"__tenant_id__":"mt-b"`) && strings.Contains(l, "mt-b line"):
			b++
		default:
			t.Errorf("unexpected line %s", l)
		}
	}
	if a != 3 || b != 3 {
		t.Errorf("query: %d lines of mt-a and %d of mt-b, want 3 each:\n%s", a, b, out)
	}
	out = logcli("mt-a|mt-b", "query", "--since=1h", "--limit=100", "--output=raw", `{app="api", __tenant_id__="mt-b"}`)
	if got := split(out); !slices.Equal(got, []string{"mt-b line 2", "mt-b line 1", "mt-b line 0"}) {
		t.Errorf("query of one tenant by __tenant_id__: %q", got)
	}
	// service_name: discovered from app, as Loki 3 does.
	if got := split(logcli("mt-a|mt-b", "labels", "--since=1h")); !slices.Equal(got, []string{"__tenant_id__", "app", "service_name"}) {
		t.Errorf("labels: %q", got)
	}
	if got := split(logcli("mt-a|mt-b", "labels", "--since=1h", "__tenant_id__")); !slices.Equal(got, []string{"mt-a", "mt-b"}) {
		t.Errorf("labels __tenant_id__: %q", got)
	}
	out = logcli("mt-a|mt-b", "series", "--since=1h", `{app="api"}`)
	if !strings.Contains(out, `{__tenant_id__="mt-a", app="api", service_name="api"}`) || !strings.Contains(out, `{__tenant_id__="mt-b", app="api", service_name="api"}`) || strings.Contains(out, "mt-c") {
		t.Errorf("series: %s", out)
	}
	out = logcli("mt-a|mt-b", "instant-query", `sum by (__tenant_id__) (count_over_time({app="api"}[1h]))`)
	if !strings.Contains(out, `"__tenant_id__": "mt-a"`) || !strings.Contains(out, `"__tenant_id__": "mt-b"`) || strings.Contains(out, "mt-c") {
		t.Errorf("instant-query: %s", out)
	}
	// One tenant: no label.
	if got := split(logcli("mt-a", "labels", "--since=1h")); !slices.Equal(got, []string{"app", "service_name"}) {
		t.Errorf("labels of one tenant: %q", got)
	}
}
