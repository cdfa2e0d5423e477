package e2e

// TestSinkPostgresKillLoop: a PostgreSQL sink under load while sluice is
// killed with SIGKILL, cycle after cycle, and PostgreSQL is stopped and
// started again once: every acknowledged line is in the table exactly once.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicelog/sluice/internal/sink/postgres/pgtest"
)

// TestSinkPostgresKillLoop runs `sluice serve` with a postgres sink of the
// tenant "audit" on one data directory, cycle after cycle: clients post
// uniquely numbered lines to the tenants "audit" and "other" and the server
// is killed with SIGKILL at a random moment. In one cycle PostgreSQL is
// stopped while clients post and started again: ingest must keep answering
// 2xx (the backlog is far below the budget). A last run lets the sink catch
// up (its backlog reaches 0 in GET /api/v1/sinks) and stops with SIGTERM.
// Then the table must hold every acknowledged "audit" line exactly once, no
// line twice, and no line of "other". `sluice sink status` shows the sink.
//
// SLUICE_SINK_CRASH_CYCLES sets the number of cycles (default 20).
func TestSinkPostgresKillLoop(t *testing.T) {
	skipIfOff(t)
	if testing.Short() {
		t.Skip("kill -9 loop with a PostgreSQL sink: skipped in -short mode")
	}
	pg := pgtest.Start(t)
	acked, sent := sinkKillLoop(t, fmt.Sprintf(`  - name: audit-pg
    type: postgres
    tenant: audit
    batch: 500
    linger: 20ms
    retry: {initial: 10ms, max: 200ms}
    policy: block
    postgres:
      dsn: %q
`, pg.DSN()), "audit-pg", "postgres", func(int) string { return "sinktest" }, func(rng *rand.Rand) {
		pg.Stop()
		time.Sleep(time.Duration(200+rng.IntN(300)) * time.Millisecond)
		pg.Start()
	}, time.Minute)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT fields->>'id', tenant FROM sluice_logs`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for rows.Next() {
		var id, tenant string
		if err := rows.Scan(&id, &tenant); err != nil {
			t.Fatal(err)
		}
		if tenant != "audit" {
			t.Fatalf("a line of tenant %q in the table", tenant)
		}
		seen[id]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, acked, sent, seen, len(seen))
}

func first(s []string) []string { return s[:min(len(s), 3)] }

// postTenant posts an NDJSON body for tenant.
func postTenant(ctx context.Context, c *http.Client, url, tenant string, body []byte) postAnswer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return postAnswer{err: err}
	}
	req.Header.Set("X-Scope-OrgID", tenant)
	resp, err := c.Do(req)
	if err != nil {
		return postAnswer{err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return postAnswer{err: err}
	}
	a := postAnswer{code: resp.StatusCode, body: string(data)}
	var reply struct {
		Accepted int `json:"accepted"`
	}
	if json.Unmarshal(data, &reply) == nil {
		a.accepted = reply.Accepted
	}
	return a
}

type sinkState struct {
	Name      string  `json:"name"`
	Backlog   int64   `json:"backlog_bytes"`
	OldestAge float64 `json:"oldest_unsent_age_seconds"`
	Records   float64 `json:"records_sent"`
	LastError string  `json:"last_error"`
}

func sinkStatus(t *testing.T, s *server) sinkState {
	t.Helper()
	resp, err := http.Get(s.url("/api/v1/sinks"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Sinks []sinkState `json:"sinks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || len(st.Sinks) != 1 {
		t.Fatalf("GET /api/v1/sinks: %v %+v", err, st)
	}
	return st.Sinks[0]
}

// TestSinkBudgetPolicies fills a postgres sink's budget while PostgreSQL
// is down. With policy block, ingest of the sink's tenant answers 503 with
// Retry-After naming the sink (another tenant's is still stored), and once
// PostgreSQL is back the sink catches up and ingest is taken again. With
// drop_oldest ingest never fails, and the sink counts what it dropped; what
// it did not drop arrives once.
func TestSinkBudgetPolicies(t *testing.T) {
	skipIfOff(t)
	pg := pgtest.Start(t)
	for _, policy := range []string{"block", "drop_oldest"} {
		t.Run("policy="+policy, func(t *testing.T) {
			dir := t.TempDir()
			name := "pg-" + strings.ReplaceAll(policy, "_", "-")
			cfg := filepath.Join(dir, "sluice.yaml")
			conf := fmt.Sprintf(`sinks:
  - name: %s
    type: postgres
    tenant: audit
    linger: 10ms
    retry: {initial: 10ms, max: 100ms}
    budget_bytes: 65536
    policy: %s
    postgres:
      dsn: %q
      table: logs_%s
`, name, policy, pg.DSN(), policy)
			if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			s := mustStartServerOn(t, filepath.Join(dir, "data"), "--config", cfg)
			defer s.stop(t)
			client := newLoadClient(1)
			line := func(i int) []byte {
				return fmt.Appendf(nil, `{"service":"budget","id":"%d","msg":"%s"}`+"\n", i, strings.Repeat("z", 200))
			}
			if a := postTenant(context.Background(), client, s.url("/insert/jsonline"), "audit", line(0)); !a.ok() {
				t.Fatalf("first line: %d %s %v", a.code, a.body, a.err)
			}
			for i := 0; sinkStatus(t, s).Records < 1; i++ {
				if i > 3000 {
					t.Fatalf("the sink delivered nothing: %+v", sinkStatus(t, s))
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
			acked := 1
			for i := 1; i <= 3000 && refused == nil; i++ {
				var body []byte
				for k := range 20 {
					body = append(body, line(i*100+k)...)
				}
				a := postTenant(context.Background(), client, s.url("/insert/jsonline"), "audit", body)
				switch {
				case a.ok():
					acked += 20
				case a.code == http.StatusServiceUnavailable:
					refused = &a
				default:
					t.Fatalf("request %d: %d %q %v", i, a.code, a.body, a.err)
				}
				if policy == "drop_oldest" && acked > 2000 {
					break
				}
				time.Sleep(time.Millisecond) // let the monitor (every 500 ms) see the backlog
			}
			st := sinkStatus(t, s)
			if policy == "block" {
				if refused == nil || !strings.Contains(refused.body, `sink "pg-block"`) || !strings.Contains(refused.body, "budget") {
					t.Fatalf("over the budget with block: %+v; status %+v", refused, st)
				}
				if a := postTenant(context.Background(), client, s.url("/insert/jsonline"), "other", line(1)); !a.ok() {
					t.Fatalf("another tenant while the sink blocks: %d %s", a.code, a.body)
				}
				pg.Start()
				restarted = true
				for i := 0; ; i++ {
					a := postTenant(context.Background(), client, s.url("/insert/jsonline"), "audit", line(9))
					if a.ok() {
						acked++
						break
					}
					if i > 3000 {
						t.Fatalf("ingest still refused after PostgreSQL came back: %d %s", a.code, a.body)
					}
					time.Sleep(10 * time.Millisecond)
				}
			} else {
				if refused != nil {
					t.Fatalf("drop_oldest refused ingest: %+v", refused)
				}
				for i := 0; sinkStatusDropped(t, s) == 0; i++ {
					if i > 3000 {
						t.Fatalf("nothing dropped over the budget: %+v", sinkStatus(t, s))
					}
					time.Sleep(10 * time.Millisecond)
				}
				pg.Start()
				restarted = true
			}
			// Everything not dropped arrives, once.
			for i := 0; ; i++ {
				st = sinkStatus(t, s)
				if st.Backlog == 0 && st.OldestAge == 0 && st.Records+sinkStatusDropped(t, s) >= float64(acked) {
					break
				}
				if i > 6000 {
					t.Fatalf("the sink did not catch up: %+v (acked %d)", st, acked)
				}
				time.Sleep(10 * time.Millisecond)
			}
			conn, err := pgx.Connect(context.Background(), pg.DSN())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			var n, distinct int
			if err := conn.QueryRow(context.Background(), fmt.Sprintf(`SELECT count(*), count(DISTINCT fields->>'id') FROM logs_%s`, policy)).Scan(&n, &distinct); err != nil {
				t.Fatal(err)
			}
			dropped := int(sinkStatusDropped(t, s))
			t.Logf("%s: %d acknowledged, %d rows, %d dropped", policy, acked, n, dropped)
			if n != distinct || n+dropped != acked || (policy == "block") != (dropped == 0) {
				t.Fatalf("%d rows (%d distinct) + %d dropped, want %d acknowledged lines exactly once", n, distinct, dropped, acked)
			}
		})
	}
}

func sinkStatusDropped(t *testing.T, s *server) float64 {
	t.Helper()
	resp, err := http.Get(s.url("/api/v1/sinks"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Sinks []struct {
			Dropped float64 `json:"dropped"`
		} `json:"sinks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || len(st.Sinks) != 1 {
		t.Fatalf("GET /api/v1/sinks: %v", err)
	}
	return st.Sinks[0].Dropped
}
