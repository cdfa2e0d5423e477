package e2e

// TestSinkRouteByRules: rules route errors to a PostgreSQL sink and
// everything else to a file sink; the decision survives a kill -9 in the
// WAL; every routed line arrives exactly once, where it was routed, and
// no other line arrives anywhere.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicelog/sluice/internal/sink/postgres/pgtest"
)

// TestSinkRouteByRules runs `sluice serve` with a rules file and two sinks
// that take what the rules route to them (from: rules): pg (PostgreSQL)
// and files (NDJSON files). The rules keep the tenant "quiet" out of
// routing (keep), drop debug lines, route errors to pg (and stop there)
// and every other line to files. Clients post lines of every level to the
// tenants "default" and "quiet". Midway PostgreSQL is stopped, lines are
// acknowledged, sluice is killed with SIGKILL and started again, and then
// PostgreSQL: the routes of the lines pg had not taken come back from the
// WAL. At the end PostgreSQL holds every error of "default" once and
// nothing else, and the files every info line of "default" once and
// nothing else.
func TestSinkRouteByRules(t *testing.T) {
	skipIfOff(t)
	pg := pgtest.Start(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	rulesFile := filepath.Join(dir, "rules.yaml")
	writeRules(t, rulesFile, `rules:
  - name: quiet-tenant
    tenant: quiet
    keep: true
  - name: drop-debug
    match: '{service=~".+"} | json | level="debug"'
    drop: true
  - name: errors-to-pg
    match: '{service=~".+"} | json | level="error"'
    route: pg
  - name: rest-to-files
    route: [files]
`)
	cfg := filepath.Join(dir, "sluice.yaml")
	conf := fmt.Sprintf(`rules: %q
sinks:
  - name: pg
    type: postgres
    from: rules
    linger: 10ms
    retry: {initial: 10ms, max: 100ms}
    postgres:
      dsn: %q
      table: routed_errors
  - name: files
    type: file
    from: rules
    linger: 10ms
    file:
      dir: %q
`, rulesFile, pg.DSN(), out)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	args := []string{"--config", cfg}

	wantPG, wantFiles := map[string]bool{}, map[string]bool{}
	client := newLoadClient(1)
	levels := []string{"error", "info", "debug", "warn"}
	post := func(s *server, round int) {
		t.Helper()
		for _, tenant := range []string{"default", "quiet"} {
			var body []byte
			stored := 0
			for i := range 40 {
				id := fmt.Sprintf("%s.r%d.i%d", tenant, round, i)
				level := levels[i%len(levels)]
				body = fmt.Appendf(body, `{"service":"routetest","level":%q,"id":%q,"msg":"a %s line"}`+"\n", level, id, level)
				if tenant == "quiet" || level != "debug" {
					stored++
				}
				if tenant == "default" {
					switch level {
					case "error":
						wantPG[id] = true
					case "info", "warn":
						wantFiles[id] = true
					}
				}
			}
			a := postTenant(context.Background(), client, s.url("/insert/jsonline"), tenant, body)
			if !a.ok() || a.accepted != stored {
				t.Fatalf("round %d, tenant %s: %d %q %v (accepted %d, want %d)", round, tenant, a.code, a.body, a.err, a.accepted, stored)
			}
		}
	}

	s := mustStartServerOn(t, data, args...)
	for r := range 5 {
		post(s, r)
	}
	waitRouted(t, s)
	pg.Stop()
	for r := 5; r < 10; r++ {
		post(s, r) // acknowledged: durable in the WAL with their routes
	}
	s.kill9(t)
	pg.Start()
	s = mustStartServerOn(t, data, args...)
	for r := 10; r < 15; r++ {
		post(s, r)
	}
	waitRouted(t, s)
	s.stop(t)

	// PostgreSQL: the errors of "default", once each.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT fields->>'id', tenant, labels->>'service' FROM routed_errors`)
	if err != nil {
		t.Fatal(err)
	}
	inPG := map[string]int{}
	for rows.Next() {
		var id, tenant, service string
		if err := rows.Scan(&id, &tenant, &service); err != nil {
			t.Fatal(err)
		}
		if tenant != "default" || service != "routetest" {
			t.Fatalf("row %s of tenant %q, service %q", id, tenant, service)
		}
		inPG[id]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	routedOnce(t, "PostgreSQL", inPG, wantPG)

	// The files: every other stored line of "default", once each.
	names, err := filepath.Glob(filepath.Join(out, "files-*"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no files of the files sink in %s: %v", out, err)
	}
	inFiles := map[string]int{}
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var rec struct {
				Tenant string         `json:"tenant"`
				Fields map[string]any `json:"fields"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("%s: %q: %v", name, sc.Text(), err)
			}
			if rec.Tenant != "default" {
				t.Fatalf("%s: a line of tenant %q: %s", name, rec.Tenant, sc.Text())
			}
			inFiles[fmt.Sprint(rec.Fields["id"])]++
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	routedOnce(t, "the files", inFiles, wantFiles)
	t.Logf("%d lines in PostgreSQL, %d in %d files", len(inPG), len(inFiles), len(names))
}

// routedOnce fails t unless got holds every id of want once and no other.
func routedOnce(t *testing.T, where string, got map[string]int, want map[string]bool) {
	t.Helper()
	var missing, twice, foreign []string
	for id := range want {
		if got[id] == 0 {
			missing = append(missing, id)
		}
	}
	for id, n := range got {
		if n > 1 {
			twice = append(twice, id)
		}
		if !want[id] {
			foreign = append(foreign, id)
		}
	}
	if len(missing) > 0 || len(twice) > 0 || len(foreign) > 0 || len(want) == 0 {
		t.Fatalf("%s: %d of %d routed lines missing (e.g. %v), %d twice (e.g. %v), %d not routed there (e.g. %v)",
			where, len(missing), len(want), first(missing), len(twice), first(twice), len(foreign), first(foreign))
	}
}

// waitRouted waits until every sink of s has delivered all it holds.
func waitRouted(t *testing.T, s *server) {
	t.Helper()
	for i := 0; ; i++ {
		done := true
		var states []string
		for _, st := range pushSinkStatus(t, s) {
			done = done && st.Backlog == 0 && st.OldestAge == 0
			states = append(states, fmt.Sprintf("%+v", st))
		}
		if done {
			return
		}
		if i > 3000 {
			t.Fatalf("the sinks did not catch up in a minute: %s", strings.Join(states, "; "))
		}
		time.Sleep(20 * time.Millisecond) // polling the status: no event to wait on
	}
}
