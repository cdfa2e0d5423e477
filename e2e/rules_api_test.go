package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRulesAPIRestart: PUT /api/v1/rules on a running sluice serve
// --rules swaps the rules and writes the file, so that the server
// started again runs them; a bad file answers 400 and changes nothing.
func TestRulesAPIRestart(t *testing.T) {
	skipIfOff(t)
	file := filepath.Join(t.TempDir(), "rules.yaml")
	writeRules(t, file, "rules:\n  - name: drop-a\n    match: '{service=\"a\"}'\n    drop: true\n")
	do := func(s *server, method, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, s.url("/api/v1/rules"), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	s := startServerArgs(t, func() []string { return []string{"--rules", file} })
	v2 := "rules:\n  - name: drop-b\n    match: '{service=\"b\"}'\n    drop: true\n"
	if code, body := do(s, "PUT", v2+"  - name: bad\n    dorp: true\n"); code != 400 || !strings.Contains(body, `rule 2 (bad): unknown key \"dorp\"`) {
		t.Fatalf("PUT bad: %d %s", code, body)
	}
	code, body := do(s, "PUT", v2)
	if code != 200 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	var put struct{ SHA256 string }
	if err := json.Unmarshal([]byte(body), &put); err != nil || put.SHA256 == "" {
		t.Fatalf("PUT reply %q: %v", body, err)
	}
	resp, err := http.Post(s.url("/insert/jsonline"), "application/x-ndjson",
		strings.NewReader(`{"service":"a","msg":"one"}`+"\n"+`{"service":"b","msg":"two"}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	reply, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(reply), `"accepted":1,"rejected":0,"dropped":1`) {
		t.Fatalf("push: %s %s", resp.Status, reply)
	}
	s.stop(t)

	if data, err := os.ReadFile(file); err != nil || string(data) != v2 {
		t.Fatalf("the rules file after PUT: %q, %v", data, err)
	}
	s = startServerArgs(t, func() []string { return []string{"--rules", file} })
	defer s.stop(t)
	code, body = do(s, "GET", "")
	var got struct {
		SHA256 string
		Rules  []string
	}
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || got.SHA256 != put.SHA256 || len(got.Rules) != 1 || got.Rules[0] != "drop-b" {
		t.Fatalf("GET after restart: %d %s (want sha256 %s)", code, body, put.SHA256)
	}
}
