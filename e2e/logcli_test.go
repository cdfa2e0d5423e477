package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// logcliVersion is the logcli scripts/e2e-setup.sh builds (its
// LOGCLI_VERSION): the binary is cached as logcli-<version>.
const logcliVersion = "v3.7.8"

func logcliPath(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(toolsDir(), "logcli-"+logcliVersion)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no logcli at %s: %s", bin, setupHint)
	}
	return bin
}

// lokiPush posts lines to one stream through the Loki push API, one
// millisecond apart from start.
func lokiPush(t *testing.T, s *server, tenant string, labels map[string]string, start time.Time, lines ...string) {
	t.Helper()
	values := make([][2]string, len(lines))
	for i, l := range lines {
		values[i] = [2]string{fmt.Sprint(start.Add(time.Duration(i) * time.Millisecond).UnixNano()), l}
	}
	body, _ := json.Marshal(map[string]any{"streams": []any{map[string]any{"stream": labels, "values": values}}})
	req, _ := http.NewRequest("POST", s.url("/loki/api/v1/push"), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Scope-OrgID", tenant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("push: %s", resp.Status)
	}
}

// TestLogcli queries sluice with Grafana's logcli: query, labels, series,
// stats, an instant metric query and query --tail, against lines pushed
// through the Loki push API.
func TestLogcli(t *testing.T) {
	skipIfOff(t)
	bin := logcliPath(t)
	s := startServer(t)
	defer s.stop(t)
	const tenant = "logcli"
	start := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	var api, web []string
	for i := range 50 {
		api = append(api, fmt.Sprintf(`level=info msg="request %d" status=%d`, i, 200+100*(i%4)))
		web = append(web, fmt.Sprintf(`{"level":"warn","msg":"page %d"}`, i))
	}
	lokiPush(t, s, tenant, map[string]string{"app": "api", "env": "prod"}, start, api...)
	lokiPush(t, s, tenant, map[string]string{"app": "web", "env": "prod"}, start.Add(time.Second), web...)

	logcli := func(args ...string) string {
		t.Helper()
		return runScript(t, time.Minute, bin, append([]string{"--addr=" + s.url(""), "--org-id=" + tenant, "--quiet"}, args...)...)
	}
	lines := func(out string) []string { return strings.Split(strings.TrimSpace(out), "\n") }

	// query: the newest lines first, up to --limit, across pages (logcli
	// pages with --batch).
	out := logcli("query", "--since=1h", "--limit=100", "--batch=30", "--output=raw", `{env="prod"} |= "request"`)
	got := lines(out)
	want := slices.Clone(api)
	slices.Reverse(want)
	if !slices.Equal(got, want) {
		t.Errorf("query: %d lines, want %d; first %q, want %q", len(got), len(want), got[0], want[0])
	}
	out = logcli("query", "--since=1h", "--limit=5", "--forward", "--output=raw", `{app="api"} | logfmt | status >= 400`)
	if got := lines(out); !slices.Equal(got, []string{api[2], api[3], api[6], api[7], api[10]}) {
		t.Errorf("query with a label filter: %q", got)
	}
	out = logcli("query", "--since=1h", "--limit=1", "--output=jsonl", `{app="web"} | json`)
	if !strings.Contains(out, `"line":"{\"level\":\"warn\",\"msg\":\"page 49\"}"`) {
		t.Errorf("query --output=jsonl: %s", out)
	}

	if got := lines(logcli("labels", "--since=1h")); !slices.Equal(got, []string{"app", "env"}) {
		t.Errorf("labels: %q", got)
	}
	if got := lines(logcli("labels", "--since=1h", "app")); !slices.Equal(got, []string{"api", "web"}) {
		t.Errorf("labels app: %q", got)
	}
	if out := logcli("series", "--since=1h", `{app=~".+"}`); !strings.Contains(out, `{app="api", env="prod"}`) || !strings.Contains(out, `{app="web", env="prod"}`) {
		t.Errorf("series: %s", out)
	}
	if out := logcli("stats", "--since=1h", `{app="api"}`); !strings.Contains(out, "streams: 1") || !strings.Contains(out, "entries: 50") {
		t.Errorf("stats: %s", out)
	}
	out = logcli("instant-query", `sum by (app) (count_over_time({env="prod"}[1h]))`)
	if !strings.Contains(out, `"app": "api"`) || !strings.Contains(out, `"50"`) {
		t.Errorf("instant-query: %s", out)
	}

	// query --tail: lines pushed while it runs come out.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--addr="+s.url(""), "--org-id="+tenant, "--quiet", "query", "--tail", "--output=raw", `{app="tail"}`)
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// The first line is pushed at once: it comes out whether logcli
	// connects before it is stored (a live line) or after (in the first
	// answer, of the lines since --since). Once it is out, logcli is
	// tailing, and the second line can only come out live. The deadline
	// only stops a test that hangs.
	deadline := time.Now().Add(2 * time.Minute)
	for _, line := range []string{"tailed one", "tailed two"} {
		lokiPush(t, s, tenant, map[string]string{"app": "tail"}, time.Now(), line)
		for !strings.Contains(buf.String(), line) {
			if time.Now().After(deadline) {
				t.Fatalf("query --tail printed %q, want the pushed lines", buf.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if got := lines(buf.String()); !slices.Equal(got, []string{"tailed one", "tailed two"}) {
		t.Errorf("query --tail: %q", got)
	}
}
