package e2e

import (
	"bytes"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeRules replaces the rules file atomically, as a deploy tool does.
func writeRules(t *testing.T, file, src string) {
	t.Helper()
	if err := os.WriteFile(file+".tmp", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		t.Fatal(err)
	}
}

// dataBytes returns every byte of every file under dir.
func dataBytes(t *testing.T, dir string) []byte {
	t.Helper()
	var all []byte
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		all = append(all, b...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

const rulesV1 = `rules:
  - name: drop-health
    match: '{service=~".+"} |= "/healthz"'
    drop: true
  - name: redact
    redact: {detectors: [email, secret_pairs]}
`

// TestRulesServe runs sluice serve --rules over HTTP and syslog: health
// checks are dropped, e-mail addresses and passwords never reach the
// data directory, and SIGHUP swaps in a new version of the file.
func TestRulesServe(t *testing.T) {
	skipIfOff(t)
	file := filepath.Join(t.TempDir(), "rules.yaml")
	writeRules(t, file, rulesV1)
	var syslogAddr string
	s := startServerArgs(t, func() []string {
		syslogAddr = freeAddr(t)
		return []string{"--rules", file, "--syslog-tcp", syslogAddr}
	})
	defer func() {
		if s != nil {
			s.stop(t)
		}
	}()
	push := func(body string) {
		t.Helper()
		resp, err := http.Post(s.url("/insert/jsonline"), "application/x-ndjson", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("push: %s", resp.Status)
		}
	}
	push(`{"service":"api","msg":"GET /healthz 200"}
{"service":"api","msg":"KEEP-1 login alice@example.com password=Hunter2Pw"}
{"service":"api","msg":"KEEP-2 plain"}
`)
	c, err := net.Dial("tcp", syslogAddr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "<13>1 2026-01-15T08:00:00Z host app - - - KEEP-3 mail bob@example.com\n")
	c.Close()
	s.waitStored(t, "default", 3, time.Minute, nil)

	// A new version, by SIGHUP: lines get a label.
	writeRules(t, file, rulesV1+"  - name: tag\n    set_labels: {rules: v2}\n")
	if err := s.p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for sum(s.metrics(t), "sluice_rules_reloads_total", `result="ok"`) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no reload a minute after SIGHUP:\n%s", tail(s.p.out.String(), 2000))
		}
		time.Sleep(20 * time.Millisecond)
	}
	push(`{"service":"api","msg":"KEEP-4 carol@example.com"}` + "\n")
	s.waitStored(t, "default", 4, time.Minute, nil)
	m := s.metrics(t)
	if got := sum(m, "sluice_rule_lines_total", `rule="drop-health"`, `action="dropped"`); got != 1 {
		t.Errorf("drop-health dropped %v lines, want 1", got)
	}
	if got := sum(m, "sluice_rule_redactions_total", `rule="redact"`); got < 4 {
		t.Errorf("%v redactions, want at least 4", got)
	}
	data := s.data
	s.stop(t)
	s = nil

	lines := export(t, data, "default")
	if len(lines) != 4 {
		t.Errorf("exported %d lines, want 4:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	raw := dataBytes(t, data)
	for _, secret := range []string{"@example.com", "Hunter2Pw", "/healthz"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the data directory holds %q", secret)
		}
	}
	for _, kept := range []string{"KEEP-1", "KEEP-2", "KEEP-3", "KEEP-4"} {
		if !strings.Contains(strings.Join(lines, "\n"), kept) {
			t.Errorf("%s was not stored", kept)
		}
	}
	out := runSluice(t, "query", "--data", data, `{rules="v2"}`)
	if !strings.Contains(out, "KEEP-4") || strings.Contains(out, "KEEP-1") {
		t.Errorf("lines labelled by the second version:\n%s", out)
	}
}

// TestRulesIngest runs sluice ingest --rules, and sluice rules check on
// a bad file.
func TestRulesIngest(t *testing.T) {
	skipIfOff(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "rules.yaml")
	writeRules(t, file, rulesV1)
	input := filepath.Join(dir, "in.log")
	var sb strings.Builder
	for i := range 1000 {
		if i%10 == 0 {
			fmt.Fprintf(&sb, `{"service":"web","msg":"GET /healthz %d"}`+"\n", i)
			continue
		}
		fmt.Fprintf(&sb, `{"service":"web","msg":"line %d user%d@example.com"}`+"\n", i, i)
	}
	if err := os.WriteFile(input, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	summary := runSluice(t, "ingest", "--data", data, "--rules", file, input)
	if !strings.Contains(summary, "rule drop-health: 100 matched, 100 dropped,") || !strings.Contains(summary, "rule redact: 900 matched, 0 dropped, 0 sampled out, 900 redactions,") {
		t.Errorf("ingest summary:\n%s", summary)
	}
	lines := export(t, data, "default")
	if len(lines) != 900 {
		t.Errorf("%d lines stored, want 900", len(lines))
	}
	if raw := dataBytes(t, data); bytes.Contains(raw, []byte("@example.com")) || bytes.Contains(raw, []byte("/healthz")) {
		t.Error("the data directory holds a redacted or dropped line")
	}
	bad := filepath.Join(dir, "bad.yaml")
	writeRules(t, bad, "rules:\n  - name: x\n    drop: true\n    continue: true\n")
	out, err := runSluiceFailing(t, "rules", "check", bad)
	if err == nil || !strings.Contains(out, bad+":4:5: rule 1 (x): continue: belongs to route") {
		t.Errorf("rules check of a bad file: %v\n%s", err, out)
	}
}

// runSluiceFailing runs sluice, which may fail, and returns its output
// (both streams) and its error.
func runSluiceFailing(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	cmd.Env = sluiceEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err
}
