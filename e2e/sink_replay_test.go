package e2e

// TestSinkDeadLetterReplay: `sluice sink dead-letter NAME --replay` against
// a running server and a real PostgreSQL.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/sink/postgres/pgtest"
)

// TestSinkDeadLetterReplay runs `sluice serve` with a postgres sink into a
// table whose CHECK constraint refuses some lines: they go to the dead
// letter. The constraint is changed so that all but one pass, and `sluice
// sink dead-letter audit-pg --replay` runs while the server runs: the table
// then holds every line exactly once but the one still refused, which the
// dead letter keeps, and a second replay delivers nothing more.
func TestSinkDeadLetterReplay(t *testing.T) {
	skipIfOff(t)
	pg := pgtest.Start(t)
	ctx := context.Background()
	conn := pg.Conn(t)
	_, err := conn.Exec(ctx, `CREATE TABLE sluice_logs (time timestamptz NOT NULL, tenant text NOT NULL, labels jsonb NOT NULL,
		fields jsonb NOT NULL, line text NOT NULL, CONSTRAINT no_refused CHECK (line NOT LIKE '%refused%'))`)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeFile(t, dir, "sluice.yaml", fmt.Sprintf(`sinks:
  - name: audit-pg
    type: postgres
    batch: 100
    linger: 10ms
    postgres:
      dsn: %q
`, pg.DSN()))
	s := mustStartServerOn(t, data, "--config", cfg)
	defer s.stop(t)
	var body []byte
	for i := range 50 {
		msg := "ok"
		switch {
		case i%10 == 3:
			msg = "refused for now"
		case i == 47:
			msg = "refused for good"
		}
		body = fmt.Appendf(body, `{"service":"billing","id":%d,"msg":%q}`+"\n", i, msg)
	}
	if a := postTenant(ctx, newLoadClient(1), s.url("/insert/jsonline"), "default", body); !a.ok() || a.accepted != 50 {
		t.Fatalf("post: %d %q %v", a.code, a.body, a.err)
	}
	type state struct {
		Backlog      int64   `json:"backlog_bytes"`
		Records      float64 `json:"records_sent"`
		DeadLettered float64 `json:"dead_lettered"`
	}
	status := func() state {
		resp, err := http.Get(s.url("/api/v1/sinks"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct{ Sinks []state }
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || len(st.Sinks) != 1 {
			t.Fatalf("GET /api/v1/sinks: %v %+v", err, st)
		}
		return st.Sinks[0]
	}
	for i := 0; ; i++ {
		if st := status(); st.Backlog == 0 && st.DeadLettered == 6 {
			break
		}
		if i > 3000 {
			t.Fatalf("the sink did not deliver and dead-letter in a minute: %+v", status())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE sluice_logs DROP CONSTRAINT no_refused, ADD CONSTRAINT not_for_good CHECK (line NOT LIKE '%for good%')`); err != nil {
		t.Fatal(err)
	}
	out := runSluice(t, "sink", "dead-letter", "audit-pg", "--replay", "--config", cfg, "--data", data)
	if !strings.Contains(out, "6 dead-lettered records read, 5 delivered and removed, 1 rejected again and kept") {
		t.Fatalf("replay: %s", out)
	}
	out = runSluice(t, "sink", "dead-letter", "audit-pg", "--replay", "--config", cfg, "--data", data)
	if !strings.Contains(out, "1 dead-lettered records read, 0 delivered and removed, 1 rejected again and kept") {
		t.Fatalf("second replay: %s", out)
	}
	var n, distinct int
	var ids string
	err = conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT fields->>'id'), string_agg(fields->>'id', ',' ORDER BY (fields->>'id')::int) FROM sluice_logs`).Scan(&n, &distinct, &ids)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 50 {
		if i != 47 {
			want = append(want, fmt.Sprint(i))
		}
	}
	if n != 49 || distinct != 49 || ids != strings.Join(want, ",") {
		t.Fatalf("table: %d rows, %d distinct ids %s; want every id but 47 once", n, distinct, ids)
	}
	dl := runSluice(t, "sink", "dead-letter", "--data", data, "audit-pg")
	if strings.Count(dl, "\n") != 1 || !strings.Contains(dl, "refused for good") || !strings.Contains(dl, "not_for_good") {
		t.Fatalf("dead letter after the replays:\n%s", dl)
	}
	if _, err := os.Stat(filepath.Join(data, "sinks", "audit-pg", "dead-letter.lock")); err != nil {
		t.Fatalf("the dead letter's lock file: %v", err)
	}
}
