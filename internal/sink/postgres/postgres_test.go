package postgres_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/sink/postgres"
	"github.com/sluicelog/sluice/internal/sink/postgres/pgtest"
	"github.com/sluicelog/sluice/internal/sink/sinktest"
	"github.com/sluicelog/sluice/internal/wal"
)

type running struct {
	cancel context.CancelFunc
	done   chan error
}

func run(t *testing.T, dsn, dir string, l *wal.Log, columns map[string]string, table string) (*sink.Manager, *running) {
	t.Helper()
	dest, err := postgres.New(postgres.Config{Sink: "pg", DSN: dsn, Columns: columns, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sink.New(sink.Config{Name: "pg", Type: "postgres", Tenant: "t1", BatchSize: 50, Linger: time.Millisecond,
		Retry: sink.Backoff{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond}, Dir: dir}, dest, sinktest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	m := sink.NewManager([]*sink.Sink{s}, nil, sinktest.Quiet())
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- m.Run(ctx, l) }()
	t.Cleanup(r.stop)
	return m, r
}

func (r *running) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
		r.cancel = nil
	}
}

// waitRows waits until the query's count reaches n, asking again after
// every change of the sink's status (its position moving) or a short
// pause: PostgreSQL gives no event to wait on.
func waitRows(t *testing.T, conn *pgx.Conn, query string, n int) {
	t.Helper()
	for i := 0; ; i++ {
		var got int
		if err := conn.QueryRow(context.Background(), query).Scan(&got); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		if got >= n {
			return
		}
		if i > 6000 {
			t.Fatalf("%s: %d rows after a minute, want %d", query, got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestExactlyOnceWithOutageAndRestart(t *testing.T) {
	pg := pgtest.Start(t)
	ctx := context.Background()
	dir := t.TempDir()
	l, _, err := wal.Open(wal.Options{Dir: filepath.Join(dir, "wal"), SegmentSize: 16 << 10, Logger: sinktest.Quiet()}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m, r := run(t, pg.DSN(), filepath.Join(dir, "sink"), l, nil, "")
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	// The sink creates its tables once it has connected.
	for i := 0; !hasTable(t, conn); i++ {
		if i > 6000 {
			t.Fatal("the sink never created its tables")
		}
		time.Sleep(10 * time.Millisecond)
	}
	line := func(i int, extra string) string {
		return fmt.Sprintf(`{"time":"2026-01-15T08:00:00.000Z","service":"api","msg":"line %d%s","seq":%d}`, i, extra, i)
	}
	n := 0
	push := func(k int) {
		for range k {
			sinktest.AppendLines(t, l, "t1", line(n, ""))
			sinktest.AppendLines(t, l, "t2", line(n, " (not the sink's tenant)"))
			n++
		}
	}
	push(300)
	// One row PostgreSQL refuses: jsonb takes no \u0000.
	sinktest.AppendLines(t, l, "t1", `{"service":"api","msg":"nul","bad":"a\u0000b"}`)
	waitRows(t, conn, "SELECT count(*) FROM sluice_logs", 300)

	// PostgreSQL goes away mid-stream and comes back.
	pg.Stop()
	push(200)
	pg.Start()
	conn.Close(ctx)
	conn, err = pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	waitRows(t, conn, "SELECT count(*) FROM sluice_logs", 500)
	if st := m.Status()[0]; st.Retries == 0 || st.DeadLettered != 1 {
		t.Fatalf("status after an outage and one bad row: %+v", st)
	}

	// The sink restarts (its process died): it resumes from PostgreSQL's
	// position, inserting nothing twice.
	r.stop()
	os.Remove(filepath.Join(dir, "sink", "position")) // even without its own file
	push(100)
	run(t, pg.DSN(), filepath.Join(dir, "sink"), l, nil, "")
	waitRows(t, conn, "SELECT count(*) FROM sluice_logs", 600)

	var total, distinct, minSeq, maxSeq int
	err = conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT line), min((fields->>'seq')::int), max((fields->>'seq')::int) FROM sluice_logs`).Scan(&total, &distinct, &minSeq, &maxSeq)
	if err != nil {
		t.Fatal(err)
	}
	if total != 600 || distinct != 600 || minSeq != 0 || maxSeq != 599 {
		t.Fatalf("table: %d rows, %d distinct, seq %d..%d; want 600 exactly once, 0..599", total, distinct, minSeq, maxSeq)
	}
	var tenant, labels, tm string
	err = conn.QueryRow(ctx, `SELECT tenant, labels::text, to_char(time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') FROM sluice_logs LIMIT 1`).Scan(&tenant, &labels, &tm)
	if err != nil || tenant != "t1" || labels != `{"service": "api"}` || tm != "2026-01-15T08:00:00" {
		t.Fatalf("a row: tenant %q labels %s time %s (%v)", tenant, labels, tm, err)
	}
	dl, err := os.ReadFile(sink.DeadLetterPath(filepath.Join(dir, "sink")))
	if err != nil || !strings.Contains(string(dl), `"line":"{\"service\":\"api\",\"msg\":\"nul\"`) || !strings.Contains(string(dl), "SQLSTATE 22P05") {
		t.Fatalf("dead letter: %s (%v)", dl, err)
	}
}

func hasTable(t *testing.T, conn *pgx.Conn) bool {
	var ok bool
	if err := conn.QueryRow(context.Background(), `SELECT to_regclass('sluice_logs') IS NOT NULL`).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestUserTableColumnMapping(t *testing.T) {
	pg := pgtest.Start(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE audit (at timestamptz, svc text, body text NOT NULL CHECK (body NOT LIKE '%forbidden%'), src text)`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	l, _, err := wal.Open(wal.Options{Dir: filepath.Join(dir, "wal"), Logger: sinktest.Quiet()}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := postgres.New(postgres.Config{Sink: "x", DSN: pg.DSN(), Columns: map[string]string{"a": "nope"}}); err == nil ||
		!strings.Contains(err.Error(), `column "a": source "nope"`) {
		t.Fatalf("a bad mapping: %v", err)
	}
	cols := map[string]string{"at": "time", "svc": "label.service", "body": "line", "src": "wal"}
	m, _ := run(t, pg.DSN(), filepath.Join(dir, "sink"), l, cols, "public.audit")
	for i := 0; m.Status()[0].Position == (wal.Pos{}).String() || m.Status()[0].LastError != ""; i++ {
		if i > 6000 {
			t.Fatalf("the sink never started: %+v", m.Status()[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
	sinktest.AppendLines(t, l, "t1", `{"service":"db","msg":"ok 1"}`, `{"service":"db","msg":"forbidden"}`, `{"service":"db","msg":"ok 2"}`)
	waitRows(t, conn, "SELECT count(*) FROM audit", 2)
	for i := 0; m.Status()[0].DeadLettered != 1; i++ {
		if i > 6000 {
			t.Fatalf("no dead letter: %+v", m.Status()[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
	var svc, src string
	var count int
	if err := conn.QueryRow(ctx, `SELECT min(svc), min(src), count(*) FROM audit`).Scan(&svc, &src, &count); err != nil {
		t.Fatal(err)
	}
	if svc != "db" || !strings.Contains(src, ".wal:") || count != 2 {
		t.Fatalf("audit: svc %q src %q count %d", svc, src, count)
	}
}
