package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestRulesTestGolden checks the output of `sluice rules test` on the
// example rules file.
func TestRulesTestGolden(t *testing.T) {
	input := strings.Join([]string{
		`{"service":"api","msg":"GET /healthz 200"}`,
		`{"service":"api","msg":"login bob@example.com","password":"hunter2","level":"error"}`,
		`service=web msg="card 4111 1111 1111 1111, not 4111 1111 1111 1112" error=timeout`,
		`not json at all, mail carol@corp.io`,
		`{"service":"db","msg":"slow query","took_ms":1200}`,
		`service=web req="GET /users HTTP/1.1" 200 512`,
	}, "\n") + "\n"
	out, errOut, st := sluice(t, input, "rules", "test", "../../rules.example.yaml")
	if st != 0 {
		t.Fatalf("status %d: %s", st, errOut)
	}
	golden := filepath.Join("testdata", "rules_test.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestRulesCheck(t *testing.T) {
	out, _, st := sluice(t, "", "rules", "check", "../../rules.example.yaml")
	if st != 0 || !strings.Contains(out, "4 rules, sha256 ") {
		t.Errorf("check of the example: %d %q", st, out)
	}
	bad := writeFile(t, "bad.yaml", "rules:\n  - name: a\n    drop: true\n    route: kafka\n  - name: b\n")
	_, errOut, st := sluice(t, "", "rules", "check", bad)
	want := bad + ":2:5: rule 1 (a): drop and route: a dropped line is neither stored nor routed"
	if st != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, bad+":5:5: rule 2 (b): no action") {
		t.Errorf("check of a bad file: %d %q, want %q", st, errOut, want)
	}
	if _, _, st := sluice(t, "", "rules", "frob", bad); st != 1 {
		t.Errorf("a bad file is reported before the subcommand: %d", st)
	}
	if _, errOut, st := sluice(t, "", "rules", "frob", "../../rules.example.yaml"); st != 2 || !strings.Contains(errOut, "unknown rules subcommand") {
		t.Errorf("unknown subcommand: %d %q", st, errOut)
	}
}

// TestServeChecksRoutes: sluice serve refuses a rules file that routes to
// a sink the config does not have, or to one without from: rules, naming
// the rule and the sink; rules check, which knows no config, takes it.
func TestServeChecksRoutes(t *testing.T) {
	dir := t.TempDir()
	rules := writeFile(t, "rules.yaml", "rules:\n  - name: errors\n    route: [pg, archive]\n")
	for _, tc := range []struct{ sinks, want string }{
		{"  - {name: pg, type: file, from: rules, file: {dir: " + filepath.Join(dir, "pg") + "}}\n",
			`:3:12: rule 1 (errors): route: no sink named "archive" is configured (sinks: [pg])`},
		{"  - {name: pg, type: file, from: rules, file: {dir: " + filepath.Join(dir, "pg") + "}}\n" +
			"  - {name: archive, type: file, file: {dir: " + filepath.Join(dir, "archive") + "}}\n",
			`:3:12: rule 1 (errors): route: sink "archive" does not take routed lines: give it from: rules in the config`},
	} {
		cfg := writeFile(t, "sluice.yaml", "rules: "+rules+"\nsinks:\n"+tc.sinks)
		_, errOut, st := sluice(t, "", "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "data"))
		if st == 0 || !strings.Contains(errOut, rules+tc.want) {
			t.Errorf("serve: status %d, stderr:\n%s\nwant %q", st, errOut, tc.want)
		}
	}
	if out, errOut, st := sluice(t, "", "rules", "check", rules); st != 0 || !strings.Contains(out, "1 rules") {
		t.Errorf("rules check: %d %q %q", st, out, errOut)
	}
	// With the config, rules check says what serve would.
	cfg := writeFile(t, "sluice.yaml", "sinks:\n  - {name: pg, type: file, from: rules, file: {dir: "+filepath.Join(dir, "pg")+"}}\n")
	if _, errOut, st := sluice(t, "", "rules", "check", "--config", cfg, rules); st != 1 || !strings.Contains(errOut, rules+`:3:12: rule 1 (errors): route: no sink named "archive"`) {
		t.Errorf("rules check --config: %d %q", st, errOut)
	}
	cfg = writeFile(t, "sluice.yaml", "sinks:\n  - {name: pg, type: file, from: rules, file: {dir: /x}}\n  - {name: archive, type: file, from: rules, file: {dir: /y}}\n")
	if out, errOut, st := sluice(t, "", "rules", "check", "--config", cfg, rules); st != 0 || !strings.Contains(out, "1 rules") {
		t.Errorf("rules check --config of a config with both sinks: %d %q %q", st, out, errOut)
	}
}

// TestIngestChecksRoutes: sluice ingest --rules checks routes as serve
// does, against the sinks of --config, and refuses a routing rules file
// without one, before it creates the data directory.
func TestIngestChecksRoutes(t *testing.T) {
	dir := t.TempDir()
	rules := writeFile(t, "rules.yaml", "rules:\n  - name: errors\n    match: '{service=~\".+\"} |= \"error\"'\n    route: [pg]\n")
	input := writeFile(t, "in.log", "service=api msg=\"an error\"\nservice=api msg=ok\n")
	for _, tc := range []struct{ config, want string }{
		{"", rules + `:4:12: rule 1 (errors): route: no sink named "pg" is configured (sinks: none)`},
		{"sinks:\n  - {name: archive, type: file, from: rules, file: {dir: /x}}\n",
			rules + `:4:12: rule 1 (errors): route: no sink named "pg" is configured (sinks: [archive])`},
		{"sinks:\n  - {name: pg, type: file, file: {dir: /x}}\n",
			rules + `:4:12: rule 1 (errors): route: sink "pg" does not take routed lines: give it from: rules in the config`},
	} {
		data := filepath.Join(dir, "data")
		args := []string{"ingest", "--quiet", "--data", data, "--rules", rules}
		if tc.config != "" {
			args = append(args, "--config", writeFile(t, "sluice.yaml", tc.config))
		}
		_, errOut, st := sluice(t, "", append(args, input)...)
		if st != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("config %q: status %d, stderr:\n%s\nwant %q", tc.config, st, errOut, tc.want)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("config %q: the data directory was created: %v", tc.config, err)
		}
	}
	cfg := writeFile(t, "sluice.yaml", "sinks:\n  - {name: pg, type: file, from: rules, file: {dir: /x}}\n")
	data := filepath.Join(dir, "data")
	if _, errOut, st := sluice(t, "", "ingest", "--quiet", "--data", data, "--rules", rules, "--config", cfg, input); st != 0 {
		t.Errorf("ingest with the sink configured: status %d: %s", st, errOut)
	}
	if _, errOut, st := sluice(t, "", "ingest", "--quiet", "--data", data, "--config", cfg, input); st != 2 || !strings.Contains(errOut, "--config is for the rules' routes") {
		t.Errorf("ingest --config without --rules: status %d: %s", st, errOut)
	}
}

// TestRulesTestRoutes: rules test shows where a route sends a line.
func TestRulesTestRoutes(t *testing.T) {
	rules := writeFile(t, "rules.yaml", "rules:\n  - name: errors\n    match: '{service=~\".+\"} |= \"error\"'\n    route: [pg, archive]\n")
	out, errOut, st := sluice(t, "service=api msg=\"an error\"\nservice=api msg=ok\n", "rules", "test", rules)
	want := "record 1:\n  rule errors: matched, routed (archive, pg), stopped\n  stored {service=\"api\"} service=api msg=\"an error\"\n  routed to archive, pg\n" +
		"record 2:\n  stored {service=\"api\"} service=api msg=ok\n"
	if st != 0 || out != want {
		t.Errorf("status %d %q\ngot\n%s\nwant\n%s", st, errOut, out, want)
	}
}
