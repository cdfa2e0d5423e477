package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/rules"
)

// liveFixture is a server running the rules file at a temporary path,
// as --rules does.
func liveFixture(t *testing.T, src string) (*fixture, *rules.Live, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	live, err := rules.Open(file, rules.NewMetrics(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := plainConfig()
	cfg.Rules = live
	return newFixture(t, cfg), live, file
}

const (
	dropA = "rules:\n  - name: drop-a\n    match: '{service=\"a\"}'\n    drop: true\n"
	dropB = "rules:\n  - name: drop-b\n    match: '{service=\"b\"}'\n    drop: true\n"
)

func TestRulesAPI(t *testing.T) {
	f, live, file := liveFixture(t, dropA)
	var info struct {
		File, SHA256, Loaded, Source string
		Rules                        []string
		Status                       string
		Changed                      bool
	}
	get := func() {
		t.Helper()
		code, body := f.do("GET", "/api/v1/rules", nil)
		if code != 200 {
			t.Fatalf("GET: %d %s", code, body)
		}
		info.Source = ""
		if err := json.Unmarshal([]byte(body), &info); err != nil {
			t.Fatalf("GET: %v: %s", err, body)
		}
	}
	get()
	if info.File != file || info.SHA256 != live.Current().Hash || info.Source != dropA || !slices.Equal(info.Rules, []string{"drop-a"}) || info.Loaded == "" {
		t.Fatalf("GET: %+v", info)
	}

	// A dry run checks and changes nothing.
	if code, body := f.do("PUT", "/api/v1/rules?dry_run=1", []byte(dropB)); code != 200 || !strings.Contains(body, `"dry_run": true`) {
		t.Fatalf("PUT dry run: %d %s", code, body)
	}
	if get(); info.Source != dropA {
		t.Fatalf("a dry run swapped the rules: %+v", info)
	}

	// A bad file: 400 naming the rule's index, name and key; the old
	// rules run on, the file is as it was.
	bad := dropB + "  - name: broken\n    set_labels: {team: '{{.x'}\n"
	code, body := f.do("PUT", "/api/v1/rules", []byte(bad))
	if code != 400 || !strings.Contains(body, "rule 2 (broken): set_labels.team:") || !strings.Contains(body, `"line": 6`) {
		t.Fatalf("PUT bad: %d %s", code, body)
	}
	if get(); info.Source != dropA {
		t.Fatalf("a bad PUT swapped the rules: %+v", info)
	}
	if data, _ := os.ReadFile(file); string(data) != dropA {
		t.Fatalf("a bad PUT wrote the file: %q", data)
	}

	// A good one swaps, at once, and is written to the file.
	code, body = f.do("PUT", "/api/v1/rules", []byte(dropB))
	if code != 200 || !strings.Contains(body, `"changed": true`) {
		t.Fatalf("PUT: %d %s", code, body)
	}
	if get(); info.Source != dropB || !slices.Equal(info.Rules, []string{"drop-b"}) {
		t.Fatalf("GET after PUT: %+v", info)
	}
	push := "{\"service\":\"a\",\"msg\":\"one\"}\n{\"service\":\"b\",\"msg\":\"two\"}\n"
	// The reply counts the line the rules dropped.
	if code, body := f.do("POST", "/insert/jsonline", []byte(push)); code != 200 || !strings.Contains(body, `"accepted":1,"rejected":0,"dropped":1`) {
		t.Fatalf("push: %d %s", code, body)
	}
	if got := f.stored("default"); len(got) != 1 || !strings.HasPrefix(got[0], `{service="a"}`) {
		t.Errorf("stored %q, want the line of a alone", got)
	}
	// The same bytes again change nothing.
	if code, body := f.do("PUT", "/api/v1/rules", []byte(dropB)); code != 200 || !strings.Contains(body, `"changed": false`) {
		t.Fatalf("PUT again: %d %s", code, body)
	}

	// A restart reads what PUT wrote.
	again, err := rules.Open(file, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Current().Hash != info.SHA256 {
		t.Errorf("after a restart: sha256 %s, want %s", again.Current().Hash, info.SHA256)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the file's mode: %v %v, want 0600 kept", fi.Mode(), err)
	}
}

// TestRulesAPIWithoutRules: without --rules, the API says so.
func TestRulesAPIWithoutRules(t *testing.T) {
	f := newFixture(t, plainConfig())
	for _, m := range []string{"GET", "PUT"} {
		if code, body := f.do(m, "/api/v1/rules", []byte(dropA)); code != 404 || !strings.Contains(body, "without --rules") {
			t.Errorf("%s: %d %s", m, code, body)
		}
	}
}

// TestRulesAPITenant: ?tenant= lists the rules that apply to a tenant.
func TestRulesAPITenant(t *testing.T) {
	f, _, _ := liveFixture(t, "rules:\n  - name: all\n    drop: false\n    keep: true\n  - name: mine\n    tenant: t1\n    keep: true\n  - name: theirs\n    tenant: t2\n    keep: true\n")
	code, body := f.do("GET", "/api/v1/rules?tenant=t1", nil)
	var info struct {
		Tenant string
		Rules  []string
	}
	if err := json.Unmarshal([]byte(body), &info); code != 200 || err != nil || info.Tenant != "t1" || !slices.Equal(info.Rules, []string{"all", "mine"}) {
		t.Errorf("GET ?tenant=t1: %d %s", code, body)
	}
}
