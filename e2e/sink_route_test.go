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
	conn := pg.Conn(t)
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

// TestSinkRouteBlock fills the budget of a PostgreSQL sink that takes
// what the rules route to it (errors), policy block, while PostgreSQL is
// down: a batch holding an error is refused with 503 naming the sink,
// while a batch of the same tenant that routes nothing to it is stored.
// Once PostgreSQL is back, errors are taken again and every acknowledged
// error is in the table once.
func TestSinkRouteBlock(t *testing.T) {
	skipIfOff(t)
	pg := pgtest.Start(t)
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "rules.yaml")
	writeRules(t, rulesFile, `rules:
  - name: errors-to-pg
    match: '{service=~".+"} | json | level="error"'
    route: pg-errors
`)
	cfg := filepath.Join(dir, "sluice.yaml")
	conf := fmt.Sprintf(`rules: %q
sinks:
  - name: pg-errors
    type: postgres
    from: rules
    linger: 10ms
    retry: {initial: 10ms, max: 100ms}
    budget_bytes: 65536
    policy: block
    postgres:
      dsn: %q
      table: blocked_errors
`, rulesFile, pg.DSN())
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	s := mustStartServerOn(t, filepath.Join(dir, "data"), "--config", cfg)
	defer s.stop(t)
	client := newLoadClient(1)
	n := 0
	batch := func(level string, lines int) []byte {
		var body []byte
		for range lines {
			n++
			body = fmt.Appendf(body, `{"service":"blocktest","level":%q,"id":"%d","msg":"%s"}`+"\n", level, n, strings.Repeat("z", 200))
		}
		return body
	}
	acked := map[string]bool{}
	postErrors := func(lines int) postAnswer {
		first := n + 1
		a := postTenant(context.Background(), client, s.url("/insert/jsonline"), "default", batch("error", lines))
		if a.ok() {
			for id := first; id <= n; id++ {
				acked[fmt.Sprint(id)] = true
			}
		}
		return a
	}
	if a := postErrors(1); !a.ok() {
		t.Fatalf("first error: %d %s %v", a.code, a.body, a.err)
	}
	for i := 0; pushSinkStatus(t, s)[0].Records < 1; i++ {
		if i > 3000 {
			t.Fatalf("the sink delivered nothing: %+v", pushSinkStatus(t, s))
		}
		time.Sleep(10 * time.Millisecond)
	}
	pg.Stop()
	restarted := false
	defer func() {
		if !restarted {
			pg.Start()
		}
	}()
	var refused *postAnswer
	for i := 0; i < 3000 && refused == nil; i++ {
		switch a := postErrors(20); {
		case a.ok():
		case a.code == 503:
			refused = &a
		default:
			t.Fatalf("request %d: %d %q %v", i, a.code, a.body, a.err)
		}
		time.Sleep(time.Millisecond) // let the monitor (every 500 ms) see the backlog
	}
	if refused == nil || !strings.Contains(refused.body, `sink "pg-errors"`) || !strings.Contains(refused.body, "budget") {
		t.Fatalf("over the budget with block: %+v; status %+v", refused, pushSinkStatus(t, s))
	}
	// The same tenant's lines that route nothing to the sink are stored.
	if a := postTenant(context.Background(), client, s.url("/insert/jsonline"), "default", batch("info", 20)); !a.ok() || a.accepted != 20 {
		t.Fatalf("info lines while the errors' sink blocks: %d %s %v", a.code, a.body, a.err)
	}
	if a := postErrors(1); a.code != 503 {
		t.Fatalf("an error while the sink blocks: %d %s", a.code, a.body)
	}
	pg.Start()
	restarted = true
	for i := 0; ; i++ {
		if a := postErrors(1); a.ok() {
			break
		}
		if i > 3000 {
			t.Fatalf("errors still refused after PostgreSQL came back: %+v", pushSinkStatus(t, s))
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitRouted(t, s)
	conn, err := pgx.Connect(context.Background(), pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT fields->>'id' FROM blocked_errors`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got[id]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	routedOnce(t, "PostgreSQL", got, acked)
	t.Logf("%d errors acknowledged and delivered; refused: %s", len(acked), refused.body)
}
