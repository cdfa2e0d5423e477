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
	return runN(t, dsn, dir, l, columns, table, 1)
}

// runN is run with the sink's concurrency n.
func runN(t *testing.T, dsn, dir string, l *wal.Log, columns map[string]string, table string, n int) (*sink.Manager, *running) {
	t.Helper()
	dest, err := postgres.New(postgres.Config{Sink: "pg", DSN: dsn, Columns: columns, Table: table, Concurrency: n})
	if err != nil {
		t.Fatal(err)
	}
	return runDestN(t, dest, dir, l, n)
}

// runDest runs a sink named pg of the tenant t1 to dest.
func runDest(t *testing.T, dest *postgres.Dest, dir string, l *wal.Log) (*sink.Manager, *running) {
	t.Helper()
	return runDestN(t, dest, dir, l, 1)
}

// runDestN is runDest with the sink's concurrency n.
func runDestN(t *testing.T, dest *postgres.Dest, dir string, l *wal.Log, n int) (*sink.Manager, *running) {
	t.Helper()
	s, err := sink.New(sink.Config{Name: "pg", Type: "postgres", Tenant: "t1", BatchSize: 50, Linger: time.Millisecond,
		Retry: sink.Backoff{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond}, Dir: dir, Concurrency: n}, dest, sinktest.Quiet())
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
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprint("concurrency=", n), func(t *testing.T) { exactlyOnceWithOutageAndRestart(t, n) })
	}
}

// exactlyOnceWithOutageAndRestart is TestExactlyOnceWithOutageAndRestart
// with the sink's concurrency: with 2, the outage fails batches in
// flight, which roll back and go again in order.
func exactlyOnceWithOutageAndRestart(t *testing.T, concurrency int) {
	pg := pgtest.Start(t)
	ctx := context.Background()
	dir := t.TempDir()
	l, _, err := wal.Open(wal.Options{Dir: filepath.Join(dir, "wal"), SegmentSize: 16 << 10, Logger: sinktest.Quiet()}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m, r := runN(t, pg.DSN(), filepath.Join(dir, "sink"), l, nil, "", concurrency)
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
	runN(t, pg.DSN(), filepath.Join(dir, "sink"), l, nil, "", concurrency)
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
	conn := pg.Conn(t)
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

// TestDeadLetterReplay: rows refused by a constraint go to the dead letter;
// the constraint is changed and the dead letter replayed (by a second Sink
// over the same directory, as `sluice sink dead-letter --replay` does while
// the server runs): what PostgreSQL takes now arrives once and leaves the
// dead letter, what it still refuses stays with the new reason. A replay
// run again on the dead letter as it was before (a replay that crashed
// after its commit) inserts nothing twice.
func TestDeadLetterReplay(t *testing.T) {
	pg := pgtest.Start(t)
	ctx := context.Background()
	conn := pg.Conn(t)
	_, err := conn.Exec(ctx, `CREATE TABLE sluice_logs (time timestamptz NOT NULL, tenant text NOT NULL, labels jsonb NOT NULL,
		fields jsonb NOT NULL, line text NOT NULL, CONSTRAINT no_forbidden CHECK (line NOT LIKE '%forbidden%'))`)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sinkDir := filepath.Join(dir, "sink")
	l, _, err := wal.Open(wal.Options{Dir: filepath.Join(dir, "wal"), Logger: sinktest.Quiet()}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m, _ := run(t, pg.DSN(), sinkDir, l, nil, "")
	for i := 0; m.Status()[0].Position == (wal.Pos{}).String() || m.Status()[0].LastError != ""; i++ {
		if i > 6000 {
			t.Fatalf("the sink never started: %+v", m.Status()[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
	var lines []string
	for i := range 10 {
		msg := fmt.Sprintf("ok %d", i)
		switch i {
		case 2, 5:
			msg = fmt.Sprintf("forbidden %d", i)
		case 7:
			msg = fmt.Sprintf("forbidden for good %d", i)
		}
		lines = append(lines, fmt.Sprintf(`{"service":"db","msg":%q,"seq":%d}`, msg, i))
	}
	sinktest.AppendLines(t, l, "t1", lines...)
	waitRows(t, conn, "SELECT count(*) FROM sluice_logs", 7)
	for i := 0; m.Status()[0].DeadLettered != 3; i++ {
		if i > 6000 {
			t.Fatalf("dead-lettered: %+v", m.Status()[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
	dlPath := sink.DeadLetterPath(sinkDir)
	before, err := os.ReadFile(dlPath)
	if err != nil {
		t.Fatal(err)
	}

	// The user fixes the table, all but one row's cause.
	if _, err := conn.Exec(ctx, `ALTER TABLE sluice_logs DROP CONSTRAINT no_forbidden, ADD CONSTRAINT not_for_good CHECK (line NOT LIKE '%for good%')`); err != nil {
		t.Fatal(err)
	}
	replay := func() sink.ReplayResult {
		t.Helper()
		dest, err := postgres.New(postgres.Config{Sink: "pg", DSN: pg.DSN()})
		if err != nil {
			t.Fatal(err)
		}
		s, err := sink.New(sink.Config{Name: "pg", Type: "postgres", BatchSize: 2, Dir: sinkDir}, dest, sinktest.Quiet())
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Replay(ctx)
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		return res
	}
	check := func(what string) {
		t.Helper()
		var n, distinct int
		var seqs string
		err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT line), string_agg(fields->>'seq', ',' ORDER BY (fields->>'seq')::int) FROM sluice_logs`).Scan(&n, &distinct, &seqs)
		if err != nil {
			t.Fatal(err)
		}
		if n != 9 || distinct != 9 || seqs != "0,1,2,3,4,5,6,8,9" {
			t.Fatalf("%s: %d rows, %d distinct, seq %s; want 9 rows once each, every seq but 7", what, n, distinct, seqs)
		}
		dl, err := os.ReadFile(dlPath)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(dl), "\n"); got != 1 || !strings.Contains(string(dl), `forbidden for good 7`) ||
			!strings.Contains(string(dl), "not_for_good") || !strings.Contains(string(dl), `"row":7`) {
			t.Fatalf("%s: dead letter holds %d records, want the one still refused with its new reason:\n%s", what, got, dl)
		}
	}
	if res := replay(); res != (sink.ReplayResult{Read: 3, Delivered: 2, Kept: 1}) {
		t.Fatalf("replay: %+v, want 3 read, 2 delivered, 1 kept", res)
	}
	check("after the replay")

	// The replay crashed after its commit, before the dead letter was
	// rewritten: the next one finds the two rows already replayed.
	if err := os.WriteFile(dlPath, before, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := replay(); res != (sink.ReplayResult{Read: 3, Delivered: 2, Kept: 1}) {
		t.Fatalf("replay again: %+v, want 3 read, 2 delivered (already), 1 kept", res)
	}
	check("after a replay of the old dead letter")

	// The running sink dead-letters into the rewritten file.
	sinktest.AppendLines(t, l, "t1", `{"service":"db","msg":"for good again","seq":10}`)
	for i := 0; m.Status()[0].DeadLettered != 4; i++ {
		if i > 6000 {
			t.Fatalf("dead-lettered: %+v", m.Status()[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
	dl, err := os.ReadFile(dlPath)
	if err != nil || strings.Count(string(dl), "\n") != 2 || !strings.Contains(string(dl), "for good again") {
		t.Fatalf("dead letter after one more refused row: %s (%v)", dl, err)
	}
}

// TestDefaultTableTypesChecked: the default table's rows go in binary COPY
// format as the columns' types are in each transaction; a column changed
// under the running sink (labels to text) takes the next rows as text,
// not as jsonb's binary form, nothing dead-lettered.
func TestDefaultTableTypesChecked(t *testing.T) {
	pg := pgtest.Start(t)
	ctx := context.Background()
	conn := pg.Conn(t)
	dir := t.TempDir()
	l, _, err := wal.Open(wal.Options{Dir: filepath.Join(dir, "wal"), Logger: sinktest.Quiet()}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m, _ := run(t, pg.DSN(), filepath.Join(dir, "sink"), l, nil, "")
	for i := 0; !hasTable(t, conn); i++ {
		if i > 6000 {
			t.Fatal("the sink never created its tables")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sinktest.AppendLines(t, l, "t1", `{"service":"api","msg":"one"}`)
	waitRows(t, conn, "SELECT count(*) FROM sluice_logs", 1)
	if _, err := conn.Exec(ctx, `ALTER TABLE sluice_logs ALTER COLUMN labels TYPE text`); err != nil {
		t.Fatal(err)
	}
	sinktest.AppendLines(t, l, "t1", `{"service":"api","msg":"two"}`)
	waitRows(t, conn, "SELECT count(*) FROM sluice_logs", 2)
	var labels string
	if err := conn.QueryRow(ctx, `SELECT labels FROM sluice_logs WHERE line LIKE '%two%'`).Scan(&labels); err != nil {
		t.Fatal(err)
	}
	if labels != `{"service":"api"}` {
		t.Fatalf("labels in a text column: %q, want the JSON text", labels)
	}
	if st := m.Status()[0]; st.DeadLettered != 0 {
		t.Fatalf("status: %+v, want nothing dead-lettered", st)
	}
}

// TestJSONType: json_type json or text creates the default table with
// labels and fields of that type; rows arrive with the JSON text as it
// was, including a \u0000 that jsonb refuses, nothing dead-lettered.
func TestJSONType(t *testing.T) {
	pg := pgtest.Start(t)
	ctx := context.Background()
	conn := pg.Conn(t)
	for _, typ := range []string{postgres.JSON, postgres.Text} {
		t.Run("type="+typ, func(t *testing.T) {
			dir := t.TempDir()
			l, _, err := wal.Open(wal.Options{Dir: filepath.Join(dir, "wal"), Logger: sinktest.Quiet()}, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			table := "logs_" + typ
			// Each subtest's sink pg follows a WAL of its own: not the
			// position the one before committed.
			if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS `+postgres.PositionsTable); err != nil {
				t.Fatal(err)
			}
			dest, err := postgres.New(postgres.Config{Sink: "pg", DSN: pg.DSN(), Table: table, JSONType: typ})
			if err != nil {
				t.Fatal(err)
			}
			m, _ := runDest(t, dest, filepath.Join(dir, "sink"), l)
			sinktest.AppendLines(t, l, "t1", `{"service":"api","msg":"one","n":1.50,"nul":"a\u0000b"}`, `{"service":"api","msg":"two"}`)
			waitRows(t, conn, "SELECT count(*) FROM pg_tables WHERE tablename = '"+table+"'", 1)
			waitRows(t, conn, "SELECT count(*) FROM "+table, 2)
			var lt, ft, labels, fields string
			if err := conn.QueryRow(ctx, `SELECT format_type(l.atttypid, l.atttypmod), format_type(f.atttypid, f.atttypmod)
				FROM pg_attribute l, pg_attribute f WHERE l.attrelid = $1::regclass AND l.attname = 'labels'
				AND f.attrelid = l.attrelid AND f.attname = 'fields'`, table).Scan(&lt, &ft); err != nil {
				t.Fatal(err)
			}
			if lt != typ || ft != typ {
				t.Fatalf("labels %s, fields %s: want %s", lt, ft, typ)
			}
			if err := conn.QueryRow(ctx, `SELECT labels::text, fields::text FROM `+table+` WHERE line LIKE '%one%'`).Scan(&labels, &fields); err != nil {
				t.Fatal(err)
			}
			if labels != `{"service":"api"}` || fields != `{"service":"api","n":1.50,"nul":"a\u0000b"}` {
				t.Fatalf("labels %s, fields %s: want the JSON text as the sink rendered it", labels, fields)
			}
			if st := m.Status()[0]; st.DeadLettered != 0 {
				t.Fatalf("status: %+v, want nothing dead-lettered", st)
			}
		})
	}
	for _, c := range []struct {
		cfg  postgres.Config
		want string
	}{
		{postgres.Config{Sink: "pg", DSN: pg.DSN(), JSONType: "hstore"}, `json_type "hstore": want jsonb, json or text`},
		{postgres.Config{Sink: "pg", DSN: pg.DSN(), JSONType: "json", Columns: map[string]string{"body": "line"}}, "json_type is the default table's"},
		{postgres.Config{Sink: "pg", DSN: pg.DSN(), Pool: 1, Concurrency: 2}, "pool 1 is below the sink's concurrency 2"},
	} {
		if _, err := postgres.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v, want an error with %q", c.cfg, err, c.want)
		}
	}
}

// TestDeliverCommittedBatch: a batch whose position PostgreSQL holds
// already (a commit whose answer was lost, then retried) is reported
// delivered and inserts nothing; a later batch is written.
func TestDeliverCommittedBatch(t *testing.T) {
	pg := pgtest.Start(t)
	ctx := context.Background()
	conn := pg.Conn(t)
	dest, err := postgres.New(postgres.Config{Sink: "pg", DSN: pg.DSN()})
	if err != nil {
		t.Fatal(err)
	}
	defer dest.Close()
	if _, ok, err := dest.Open(ctx); err != nil || ok {
		t.Fatalf("Open: position known %v, %v; want none", ok, err)
	}
	batch := func(end wal.Pos, lines ...string) *sink.Batch {
		b := &sink.Batch{End: end}
		for _, ln := range lines {
			b.Records = append(b.Records, sink.Record{Time: time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).UnixNano(), Tenant: "t1",
				LabelsJSON: []byte(`{"service":"api"}`), FieldsJSON: []byte(`{}`), Line: []byte(ln)})
		}
		return b
	}
	for i, c := range []struct {
		b    *sink.Batch
		rows int
	}{
		{batch(wal.Pos{Segment: 1, Offset: 100}, "a", "b"), 2},
		{batch(wal.Pos{Segment: 1, Offset: 100}, "a", "b"), 2}, // again: committed before
		{batch(wal.Pos{Segment: 1, Offset: 50}, "x"), 2},       // behind the position
		{batch(wal.Pos{Segment: 2, Offset: 0}, "c"), 3},
	} {
		if rej, err := dest.Deliver(ctx, c.b); err != nil || len(rej) != 0 {
			t.Fatalf("Deliver %d: %v rejected, %v", i, rej, err)
		}
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM sluice_logs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != c.rows {
			t.Fatalf("after Deliver %d: %d rows, want %d", i, n, c.rows)
		}
	}
	var seg, off int64
	if err := conn.QueryRow(ctx, `SELECT segment, "offset" FROM `+postgres.PositionsTable+` WHERE sink = 'pg'`).Scan(&seg, &off); err != nil {
		t.Fatal(err)
	}
	if seg != 2 || off != 0 {
		t.Fatalf("position %d/%d, want 2/0", seg, off)
	}
}

// TestOpenAtOnce: sinks on one database that start together create the
// shared tables without tripping on each other (CREATE TABLE IF NOT
// EXISTS run at once can fail on pg_type's unique index).
func TestOpenAtOnce(t *testing.T) {
	pg := pgtest.Start(t)
	ctx := context.Background()
	const n = 4
	errs := make(chan error, n)
	for i := range n {
		dest, err := postgres.New(postgres.Config{Sink: fmt.Sprint("pg", i), DSN: pg.DSN(), Table: "logs"})
		if err != nil {
			t.Fatal(err)
		}
		defer dest.Close()
		go func() {
			_, _, err := dest.Open(ctx)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("Open: %v", err)
		}
	}
}
