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
// It runs with the sink's concurrency 1 and 2 (two batches copied at once
// on two connections, committed in order).
//
// SLUICE_SINK_CRASH_CYCLES sets the number of cycles (default 20).
func TestSinkPostgresKillLoop(t *testing.T) {
	skipIfOff(t)
	if testing.Short() {
		t.Skip("kill -9 loop with a PostgreSQL sink: skipped in -short mode")
	}
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprint("concurrency=", n), func(t *testing.T) { sinkPostgresKillLoop(t, n) })
	}
}

func sinkPostgresKillLoop(t *testing.T, concurrency int) {
	pg := pgtest.Start(t)
	acked, sent := sinkKillLoop(t, fmt.Sprintf(`  - name: audit-pg
    type: postgres
    tenant: audit
    batch: 500
    linger: 20ms
    retry: {initial: 10ms, max: 200ms}
    policy: block
    concurrency: %d
    postgres:
      dsn: %q
`, concurrency, pg.DSN()), "audit-pg", "postgres", func(int) string { return "sinktest" }, func(rng *rand.Rand) {
		pg.Stop()
		time.Sleep(time.Duration(200+rng.IntN(300)) * time.Millisecond)
		pg.Start()
	}, time.Minute)

	ctx := context.Background()
	conn := pg.Conn(t)
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
	a := postAnswer{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(data)}
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

// TestSinkBudgetPolicies: sinkBudgetOutage for the postgres sink,
// PostgreSQL stopped and started again; with policy block at concurrency
// 2 (drop_oldest delivers one batch at a time).
func TestSinkBudgetPolicies(t *testing.T) {
	skipIfOff(t)
	pg := pgtest.Start(t)
	for _, policy := range []string{"block", "drop_oldest"} {
		t.Run("policy="+policy, func(t *testing.T) {
			sinkBudgetOutage(t, budgetDest{
				typ: "postgres",
				block: func(_, policy string) string {
					conc := ""
					if policy == "block" {
						conc = "    concurrency: 2\n"
					}
					return fmt.Sprintf("%s    postgres:\n      dsn: %q\n      table: logs_%s\n", conc, pg.DSN(), policy)
				},
				down: pg.Stop,
				up:   pg.Start,
				ids: func(t *testing.T, _, policy string) []string {
					ctx := context.Background()
					conn, err := pgx.Connect(ctx, pg.DSN())
					if err != nil {
						t.Fatal(err)
					}
					defer conn.Close(ctx)
					rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT fields->>'id', tenant FROM logs_%s`, policy))
					if err != nil {
						t.Fatal(err)
					}
					var ids []string
					for rows.Next() {
						var id, tenant string
						if err := rows.Scan(&id, &tenant); err != nil {
							t.Fatal(err)
						}
						if tenant != "audit" {
							t.Fatalf("a line of tenant %q in the table", tenant)
						}
						ids = append(ids, id)
					}
					if err := rows.Err(); err != nil {
						t.Fatal(err)
					}
					return ids
				},
			}, policy)
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
