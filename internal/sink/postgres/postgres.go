// Package postgres is the PostgreSQL destination of a sink: batches of
// records written with COPY inside a transaction that also commits the
// sink's WAL position, in a positions table keyed by sink name, so a crash
// or a retry never inserts a row twice (exactly once).
//
// The default table, created if absent:
//
//	CREATE TABLE sluice_logs (time timestamptz NOT NULL, tenant text NOT NULL,
//	    labels jsonb NOT NULL, fields jsonb NOT NULL, line text NOT NULL)
//
// with no index: each costs every row at COPY (a GIN index on fields cut a
// bare COPY of the benchmark's rows to a quarter, a btree on tenant and
// time by a fifth; bench/pg-ceiling.sh), so the user adds those the
// queries need. JSONType makes labels and fields json or text: jsonb's
// parse is most of what PostgreSQL spends on a row (json took half the
// backend's CPU of jsonb, text 40%), so a table that is written more than
// queried into fields is cheaper with json. A table created by the user
// with json or text there is written in binary COPY too.
//
// A user table takes a column mapping (Columns: column → source, sources
// time, tenant, labels, fields, line, wal, and label.NAME for one label's
// value). Rows PostgreSQL rejects for their data (SQLSTATE classes 22 and
// 23: invalid text, a constraint) are found one by one under savepoints and
// go to the sink's dead letter; the rest of the batch is committed.
//
// Replay takes the records of the dead letter again: each batch with the
// identities of its rows in ReplayedTable, in the same transaction, so that
// no replay inserts a record twice.
//
// Deliver may run for several batches at once (the sink's concurrency,
// sink.Ordered), each on a connection of its own: the COPYs run at once,
// and each transaction writes its position as its last statement, only
// once every earlier batch committed (Batch.Turn), then commits. The
// position row is locked by the UPDATE of a transaction until it ends, so
// writing it last, after the predecessor's commit, keeps the later
// transaction from waiting on that lock while holding its rows. The
// position upsert only moves forward: a batch whose position PostgreSQL
// holds already was committed before (a commit whose answer was lost),
// and its retry rolls back and reports it delivered.
//
// It must never commit rows without the position that covers them.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/wal"
)

// Defaults.
const (
	DefaultTable   = "sluice_logs"
	PositionsTable = "sluice_sink_positions"
	// ReplayedTable holds the identities of the dead-lettered records a
	// replay delivered (Dest.Replay).
	ReplayedTable    = "sluice_sink_replayed"
	DefaultPoolConns = 2
	// DefaultConcurrency is the sink's concurrency when its config sets
	// none and its policy is block (drop_oldest delivers one batch at a
	// time): a second batch copies while the one before commits and
	// waits for PostgreSQL's WAL fsync. Measured (bench/sink-pg.sh,
	// 1M lines): 104k rows/s against 82k at 1 (quiet), 43-51k against
	// 26-39k on a loaded machine, where ingest beside it kept 0.91 of
	// its no-sink rate against 0.57-0.63 at 1.
	DefaultConcurrency = 2
)

// Config configures the destination.
type Config struct {
	// Sink is the sink's name: the key of its row in the positions table.
	Sink string
	// DSN is a libpq connection string or URL.
	DSN string
	// Table is the table rows go to (DefaultTable if empty), schema-
	// qualified or not.
	Table string
	// Columns maps the table's columns to sources; empty means the
	// default table's five columns.
	Columns map[string]string
	// Pool is the connections the sink may open (if 0: Concurrency+1,
	// at least DefaultPoolConns): one per batch in flight, one spare for
	// a retry while a broken one closes.
	Pool int
	// Concurrency is the sink's (sink.Config.Concurrency): how many
	// batches Deliver may be copying at once. It only sizes the default
	// Pool.
	Concurrency int
	// Timeout bounds one delivery, connecting included (DefaultTimeout
	// if 0): a destination that hangs is retried like one that fails.
	Timeout time.Duration
	// JSONType is the type of the labels and fields columns when Open
	// creates the default table: JSONB (if empty), JSON or Text. Only
	// without Columns.
	JSONType string
}

// DefaultTimeout bounds a delivery.
const DefaultTimeout = time.Minute

// Dest is the PostgreSQL destination.
type Dest struct {
	cfg   Config
	table pgx.Identifier
	cols  []string
	srcs  []source
	pool  *pgxpool.Pool
}

// layout is how a transaction writes rows, as checkBinary found the table
// in it. Each transaction has its own: batches copied at once on two
// connections must not share one that either may be rewriting.
type layout struct {
	// binary is set when the table's columns are the default table's,
	// with its types: rows are then written by binaryRows, with labels
	// and fields as jsonb where jsonb says so.
	binary  bool
	jsonb   jsonCols
	copySQL string
}

type source struct {
	kind  string // time, tenant, labels, fields, line, wal, label
	label string
}

// New checks cfg and returns the destination; Open connects.
func New(cfg Config) (*Dest, error) {
	if cfg.DSN == "" {
		return nil, fmt.Errorf("postgres sink %q: no dsn", cfg.Sink)
	}
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if cfg.Pool <= 0 {
		cfg.Pool = max(DefaultPoolConns, cfg.Concurrency+1)
	}
	if cfg.Pool < cfg.Concurrency {
		// A later batch holding the last connection while it waits for
		// its turn would starve the earlier one until the timeout.
		return nil, fmt.Errorf("postgres sink %q: pool %d is below the sink's concurrency %d: each batch in flight holds a connection", cfg.Sink, cfg.Pool, cfg.Concurrency)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	switch cfg.JSONType {
	case "":
		cfg.JSONType = JSONB
	case JSONB, JSON, Text:
	default:
		return nil, fmt.Errorf("postgres sink %q: json_type %q: want jsonb, json or text", cfg.Sink, cfg.JSONType)
	}
	if cfg.JSONType != JSONB && len(cfg.Columns) != 0 {
		return nil, fmt.Errorf("postgres sink %q: json_type is the default table's; a table with columns has the types it was created with", cfg.Sink)
	}
	if _, err := pgxpool.ParseConfig(cfg.DSN); err != nil {
		return nil, fmt.Errorf("postgres sink %q: dsn: %w", cfg.Sink, err)
	}
	d := &Dest{cfg: cfg, table: pgx.Identifier(strings.Split(cfg.Table, "."))}
	cols := cfg.Columns
	if len(cols) == 0 {
		cols = map[string]string{"time": "time", "tenant": "tenant", "labels": "labels", "fields": "fields", "line": "line"}
		d.cols = []string{"time", "tenant", "labels", "fields", "line"}
	} else {
		for c := range cols {
			d.cols = append(d.cols, c)
		}
		sort.Strings(d.cols)
	}
	for _, c := range d.cols {
		src := cols[c]
		switch {
		case src == "time" || src == "tenant" || src == "labels" || src == "fields" || src == "line" || src == "wal":
			d.srcs = append(d.srcs, source{kind: src})
		case strings.HasPrefix(src, "label.") && len(src) > len("label."):
			d.srcs = append(d.srcs, source{kind: "label", label: strings.TrimPrefix(src, "label.")})
		default:
			return nil, fmt.Errorf("postgres sink %q: column %q: source %q: want time, tenant, labels, fields, line, wal or label.NAME", cfg.Sink, c, src)
		}
	}
	return d, nil
}

// Open connects, creates the default table and the positions table if
// absent, and reads the sink's position.
func (d *Dest) Open(ctx context.Context) (wal.Pos, bool, error) {
	if d.pool == nil {
		pc, err := pgxpool.ParseConfig(d.cfg.DSN)
		if err != nil {
			return wal.Pos{}, false, sink.Permanent(fmt.Errorf("postgres sink %q: dsn: %w", d.cfg.Sink, err))
		}
		pc.MaxConns = int32(d.cfg.Pool)
		pc.MinConns = 0
		if pc.ConnConfig.ConnectTimeout == 0 {
			pc.ConnConfig.ConnectTimeout = 10 * time.Second
		}
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			return wal.Pos{}, false, fmt.Errorf("postgres sink %q: connect: %w", d.cfg.Sink, err)
		}
		d.pool = pool
	}
	stmts := []string{`CREATE TABLE IF NOT EXISTS ` + PositionsTable + ` (sink text PRIMARY KEY, segment bigint NOT NULL, "offset" bigint NOT NULL, updated_at timestamptz NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS ` + ReplayedTable + ` (sink text NOT NULL, wal text NOT NULL, "row" integer NOT NULL, replayed_at timestamptz NOT NULL, PRIMARY KEY (sink, wal, "row"))`}
	if len(d.cfg.Columns) == 0 {
		stmts = append(stmts, `CREATE TABLE IF NOT EXISTS `+d.table.Sanitize()+` (time timestamptz NOT NULL, tenant text NOT NULL, labels `+
			d.cfg.JSONType+` NOT NULL, fields `+d.cfg.JSONType+` NOT NULL, line text NOT NULL)`)
	}
	if err := d.createTables(ctx, stmts); err != nil {
		return wal.Pos{}, false, fmt.Errorf("postgres sink %q: create tables: %w", d.cfg.Sink, err)
	}
	if _, err := d.checkBinary(ctx, d.pool); err != nil {
		return wal.Pos{}, false, fmt.Errorf("postgres sink %q: %w", d.cfg.Sink, err)
	}
	var seg, off int64
	err := d.pool.QueryRow(ctx, `SELECT segment, "offset" FROM `+PositionsTable+` WHERE sink = $1`, d.cfg.Sink).Scan(&seg, &off)
	if errors.Is(err, pgx.ErrNoRows) {
		return wal.Pos{}, false, nil
	}
	if err != nil {
		return wal.Pos{}, false, fmt.Errorf("postgres sink %q: read position: %w", d.cfg.Sink, err)
	}
	return wal.Pos{Segment: uint64(seg), Offset: off}, true, nil
}

// tablesLock is the key of the transaction-level advisory lock under which
// Open creates its tables: CREATE TABLE IF NOT EXISTS is not atomic
// against itself, and two sessions that run it at once for the same name
// (two sinks on one database starting together, the positions table
// first) may both find it absent and one fail on pg_type's unique index
// ("duplicate key value violates unique constraint
// pg_type_typname_nsp_index"). Any 64-bit constant will do: "sluice" in
// ASCII.
const tablesLock = 0x736c75696365

// createTables runs stmts in one transaction, under tablesLock.
func (d *Dest) createTables(ctx context.Context, stmts []string) error {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(tablesLock)); err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// checkBinary returns the layout of the table as q sees it: binary when
// the sink writes the default columns and the table has them with the
// default types (labels and fields: jsonb, json or text).
func (d *Dest) checkBinary(ctx context.Context, q querier) (layout, error) {
	if len(d.cfg.Columns) != 0 {
		return layout{}, nil
	}
	types := map[string]string{}
	rs, err := q.Query(ctx, `SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`, d.table.Sanitize())
	if err != nil {
		return layout{}, fmt.Errorf("read the columns of %s: %w", d.cfg.Table, err)
	}
	for rs.Next() {
		var name, typ string
		if err := rs.Scan(&name, &typ); err != nil {
			rs.Close()
			return layout{}, fmt.Errorf("read the columns of %s: %w", d.cfg.Table, err)
		}
		types[name] = typ
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return layout{}, fmt.Errorf("read the columns of %s: %w", d.cfg.Table, err)
	}
	var cols []string
	var jsonb jsonCols
	for _, c := range defaultTypes {
		switch typ := types[c[0]]; {
		case c[1] == "json" && (typ == JSONB || typ == JSON || typ == Text):
			jsonb[len(cols)-2] = typ == JSONB // labels, fields: the third and fourth
		case typ != c[1]:
			return layout{}, nil
		}
		cols = append(cols, pgx.Identifier{c[0]}.Sanitize())
	}
	return layout{binary: true, jsonb: jsonb,
		copySQL: `COPY ` + d.table.Sanitize() + ` (` + strings.Join(cols, ", ") + `) FROM STDIN BINARY`}, nil
}

// lockTable locks the default table against changes of its columns until
// tx ends, then checks their types again: binary COPY must match them, and
// a text column would take a jsonb value's version byte as text.
// It returns the table's layout as tx sees it.
func (d *Dest) lockTable(ctx context.Context, tx pgx.Tx) (layout, error) {
	if len(d.cfg.Columns) != 0 {
		return layout{}, nil
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+d.table.Sanitize()+` IN ROW EXCLUSIVE MODE`); err != nil {
		return layout{}, fmt.Errorf("lock %s: %w", d.cfg.Table, err)
	}
	return d.checkBinary(ctx, tx)
}

// copyRows copies recs (those at only, if not nil) in tx, as lay says.
func (d *Dest) copyRows(ctx context.Context, tx pgx.Tx, lay layout, recs []sink.Record, only []int) error {
	if !lay.binary {
		_, err := tx.CopyFrom(ctx, d.table, d.cols, &rowSource{d: d, recs: recs, only: only, i: -1})
		return err
	}
	r := newBinaryRows(recs, only, lay.jsonb)
	defer r.close()
	_, err := tx.Conn().PgConn().CopyFrom(ctx, r, lay.copySQL)
	return err
}

// Deliver copies b's records and commits b.End in one transaction. It
// may run for several batches at once (sink.Ordered), each on a
// connection of its own: the rows are copied at once, and each
// transaction writes its position and commits only after b.Turn, when
// every earlier batch committed.
//
// A batch whose position PostgreSQL already holds (a commit whose answer
// was lost, then retried) is rolled back and reported delivered: the
// position only moves forward.
func (d *Dest) Deliver(ctx context.Context, b *sink.Batch) ([]sink.Rejected, error) {
	return d.copyIn(ctx, b, nil, d.savePosition)
}

// Ordered marks Dest as a sink.Ordered destination: Deliver waits for
// b.Turn before it writes the position and commits.
func (d *Dest) Ordered() {}

// errDelivered is savePosition's answer when PostgreSQL's position is at
// or past the batch's end already: the batch was committed before.
var errDelivered = errors.New("the position is at or past the batch's end: committed before")

// Replay copies the records of b that no earlier replay of this sink
// copied, and records their identities (WAL frame and row) in
// ReplayedTable in the same transaction, without moving the sink's
// position: a replay that crashed before the dead letter was rewritten
// inserts nothing twice when it runs again.
func (d *Dest) Replay(ctx context.Context, b *sink.Batch) ([]sink.Rejected, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	walKeys := make([]string, len(b.Records))
	for i := range b.Records {
		walKeys[i] = b.Records[i].Pos.String()
	}
	type id struct {
		wal string
		row int
	}
	done := map[id]bool{}
	rs, err := d.pool.Query(ctx, `SELECT wal, "row" FROM `+ReplayedTable+` WHERE sink = $1 AND wal = ANY($2)`, d.cfg.Sink, walKeys)
	if err != nil {
		return nil, fmt.Errorf("postgres sink %q: read replayed records: %w", d.cfg.Sink, err)
	}
	for rs.Next() {
		var k id
		if err := rs.Scan(&k.wal, &k.row); err != nil {
			rs.Close()
			return nil, fmt.Errorf("postgres sink %q: read replayed records: %w", d.cfg.Sink, err)
		}
		done[k] = true
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("postgres sink %q: read replayed records: %w", d.cfg.Sink, err)
	}
	var todo []int
	for i := range b.Records {
		if !done[id{walKeys[i], b.Records[i].Row}] {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	return d.copyIn(ctx, b, todo, func(ctx context.Context, tx pgx.Tx, b *sink.Batch, rej []sink.Rejected) error {
		rows := make([][]any, 0, len(todo))
		for _, i := range todo {
			if !slices.ContainsFunc(rej, func(r sink.Rejected) bool { return r.Index == i }) {
				rows = append(rows, []any{d.cfg.Sink, walKeys[i], b.Records[i].Row, time.Now()})
			}
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{ReplayedTable}, []string{"sink", "wal", "row", "replayed_at"}, pgx.CopyFromRows(rows))
		if err != nil {
			return fmt.Errorf("postgres sink %q: record replayed records: %w", d.cfg.Sink, err)
		}
		return nil
	})
}

// copyIn copies the records of b (those of only, if not nil) in one
// transaction that commit completes before it commits. Rows PostgreSQL
// refuses for their data are found one by one under savepoints, the rest
// copied, and the refused ones go to the dead letter before the commit.
func (d *Dest) copyIn(ctx context.Context, b *sink.Batch, only []int, commit func(context.Context, pgx.Tx, *sink.Batch, []sink.Rejected) error) ([]sink.Rejected, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	err := d.tx(ctx, b, func(tx pgx.Tx) error {
		lay, err := d.lockTable(ctx, tx)
		if err != nil {
			return err
		}
		if err := d.copyRows(ctx, tx, lay, b.Records, only); err != nil {
			return fmt.Errorf("copy %d rows into %s: %w", len(b.Records), d.cfg.Table, err)
		}
		return commit(ctx, tx, b, nil)
	})
	if err == nil || errors.Is(err, errDelivered) {
		return nil, nil
	}
	if !dataError(err) {
		return nil, err
	}
	// Some row is refused for its data: find which, one by one.
	idx := only
	if idx == nil {
		idx = make([]int, len(b.Records))
		for i := range idx {
			idx[i] = i
		}
	}
	var rej []sink.Rejected
	err = d.tx(ctx, b, func(tx pgx.Tx) error {
		rej = rej[:0]
		lay, err := d.lockTable(ctx, tx)
		if err != nil {
			return err
		}
		for _, i := range idx {
			if _, err := tx.Exec(ctx, "SAVEPOINT r"); err != nil {
				return err
			}
			if err := d.copyRows(ctx, tx, lay, b.Records[i:i+1], nil); err != nil {
				if !dataError(err) {
					return fmt.Errorf("copy a row into %s: %w", d.cfg.Table, err)
				}
				rej = append(rej, sink.Rejected{Index: i, Reason: err.Error()})
				if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT r"); err != nil {
					return err
				}
				continue
			}
			if _, err := tx.Exec(ctx, "RELEASE SAVEPOINT r"); err != nil {
				return err
			}
		}
		if err := commit(ctx, tx, b, rej); err != nil {
			return err
		}
		// Before the commit: a crash after it must not lose them.
		return b.DeadLetter(rej)
	})
	if errors.Is(err, errDelivered) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return rej, nil
}

// savePosition upserts b.End as the sink's position in tx, as the
// transaction's last statement, once every earlier batch committed
// (b.Turn): the row's lock is then free (an earlier transaction's UPDATE
// of it would make this one wait until it ended) and the position moves
// in order. The upsert only moves the position forward: when PostgreSQL
// holds b.End or a later one already, b was committed before and
// savePosition returns errDelivered (the caller rolls back).
func (d *Dest) savePosition(ctx context.Context, tx pgx.Tx, b *sink.Batch, _ []sink.Rejected) error {
	if err := b.Turn(ctx); err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO `+PositionsTable+` AS p (sink, segment, "offset", updated_at) VALUES ($1, $2, $3, now())
		ON CONFLICT (sink) DO UPDATE SET segment = excluded.segment, "offset" = excluded."offset", updated_at = excluded.updated_at
		WHERE (p.segment, p."offset") < (excluded.segment, excluded."offset")`,
		d.cfg.Sink, int64(b.End.Segment), b.End.Offset)
	if err != nil {
		return fmt.Errorf("postgres sink %q: save position: %w", d.cfg.Sink, err)
	}
	if tag.RowsAffected() == 0 {
		return errDelivered
	}
	return nil
}

// tx runs write in one transaction and commits it.
func (d *Dest) tx(ctx context.Context, b *sink.Batch, write func(pgx.Tx) error) error {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres sink %q: begin: %w", d.cfg.Sink, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := write(tx); err != nil {
		return fmt.Errorf("postgres sink %q: %w", d.cfg.Sink, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres sink %q: commit: %w", d.cfg.Sink, err)
	}
	return nil
}

// dataError reports whether PostgreSQL refused a row for its data: a data
// exception (class 22) or an integrity constraint violation (class 23).
func dataError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23"))
}

// Close closes the pool.
func (d *Dest) Close() error {
	if d.pool != nil {
		d.pool.Close()
		d.pool = nil
	}
	return nil
}

// rowSource feeds records to COPY: recs, or those of recs at only if
// only is not nil.
type rowSource struct {
	d    *Dest
	recs []sink.Record
	only []int
	i    int
	vals []any
}

func (s *rowSource) Next() bool {
	s.i++
	if s.only != nil {
		return s.i < len(s.only)
	}
	return s.i < len(s.recs)
}

func (s *rowSource) Err() error { return nil }

func (s *rowSource) Values() ([]any, error) {
	r := &s.recs[s.i]
	if s.only != nil {
		r = &s.recs[s.only[s.i]]
	}
	s.vals = s.vals[:0]
	for _, src := range s.d.srcs {
		var v any
		switch src.kind {
		case "time":
			v = time.Unix(0, r.Time).UTC()
		case "tenant":
			v = r.Tenant
		case "labels":
			v = json.RawMessage(r.LabelsJSON)
		case "fields":
			v = json.RawMessage(r.FieldsJSON)
		case "line":
			v = string(r.Line)
		case "wal":
			v = r.Pos.String()
		case "label":
			if lv, ok := r.Labels.Get(src.label); ok {
				v = lv
			}
		}
		s.vals = append(s.vals, v)
	}
	return s.vals, nil
}
