// Command pgcopy is the bare side of bench/sink-pg.sh: it reads a corpus of
// JSON lines, turns every line into the row the PostgreSQL sink writes (the
// default table: time, tenant, labels and fields as jsonb, the line) with
// sluice's own parser and record code, untimed, then copies all the rows
// into a fresh table of the same shape with one pgx CopyFrom (pgx.CopyFromRows,
// one statement, autocommitted) and prints how long that took.
//
// Flags change the copy to measure what bounds it (bench/pg-ceiling.sh runs
// them one by one): -types the type of labels and fields (jsonb, json or
// text), -unlogged, -index an index to create first (gin: GIN on fields;
// time: a btree on tenant, time; brin: BRIN on time), -batch rows per COPY, each in a
// transaction of its own (0: one COPY of every row), -sync-commit off,
// -mode how the rows are encoded (pgx: pgx.CopyFromRows; binary: binary
// COPY written by hand as the sink does; text: text COPY), -narrow a table
// of time and tenant alone (a small row, as ../shared/INFRA.md's 1M rows/s
// were: what a row's width costs).
//
// -streams N copies on N connections at once (each every N-th chunk of
// -batch rows), as a sink with parallel COPY streams would.
//
// Output, one line: "rows N seconds S rows/s R client-cpu C backend-cpu B",
// the CPU seconds of this process and of its PostgreSQL backends (from
// /proc: the server must be on this machine) during the copy.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/wal"
)

// options are the variants of the copy.
type options struct {
	table, types, index, mode, syncCommit string
	unlogged, narrow                      bool
	batch, streams                        int
}

func main() {
	dsn := flag.String("dsn", "", "the PostgreSQL connection string")
	corpus := flag.String("corpus", "", "the NDJSON corpus `file`")
	tenant := flag.String("tenant", "default", "the tenant of every row, as sluice gives it")
	streams := flag.String("stream-fields", "service,host", "the fields that make a line's stream (labels), as _stream_fields")
	var o options
	flag.StringVar(&o.table, "table", "pgcopy_logs", "the table to create (dropped first if it exists) and copy into")
	flag.StringVar(&o.types, "types", "jsonb", "the type of the labels and fields columns: jsonb, json or text")
	flag.StringVar(&o.index, "index", "", "an index to create before the copy: gin (GIN on fields), time (btree on tenant, time) or brin (BRIN on time)")
	flag.StringVar(&o.mode, "mode", "pgx", "how rows are encoded: pgx (pgx.CopyFromRows), binary (binary COPY by hand, as the sink) or text (text COPY)")
	flag.StringVar(&o.syncCommit, "sync-commit", "", "synchronous_commit for the session (on, off); empty: the server's")
	flag.BoolVar(&o.unlogged, "unlogged", false, "create the table UNLOGGED")
	flag.BoolVar(&o.narrow, "narrow", false, "a table of time and tenant alone (small rows; -mode pgx only)")
	flag.IntVar(&o.batch, "batch", 0, "rows per COPY, each in a transaction of its own; 0: one COPY of every row")
	flag.IntVar(&o.streams, "streams", 1, "connections copying at once, each every streams-th chunk of -batch rows (-batch needed above 1)")
	flag.Parse()
	if *dsn == "" || *corpus == "" {
		fmt.Fprintln(os.Stderr, "pgcopy: -dsn and -corpus are required")
		os.Exit(2)
	}
	if err := run(*dsn, *corpus, *tenant, strings.Split(*streams, ","), o); err != nil {
		fmt.Fprintln(os.Stderr, "pgcopy:", err)
		os.Exit(1)
	}
}

// row is one row of the default table.
type row struct {
	time           time.Time
	tenant         string
	labels, fields []byte
	line           string
}

func run(dsn, corpus, tenant string, streams []string, o options) error {
	ctx := context.Background()
	switch o.types {
	case "jsonb", "json", "text":
	default:
		return fmt.Errorf("-types %q: want jsonb, json or text", o.types)
	}
	switch o.mode {
	case "pgx", "binary", "text":
	default:
		return fmt.Errorf("-mode %q: want pgx, binary or text", o.mode)
	}
	if o.streams < 1 || o.streams > 1 && o.batch <= 0 {
		return fmt.Errorf("-streams %d: want 1, or more with -batch", o.streams)
	}
	if o.narrow && o.mode != "pgx" {
		return fmt.Errorf("-narrow with -mode %q: -narrow copies with pgx only", o.mode)
	}
	data, err := rowsOf(ctx, corpus, tenant, streams)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	id := pgx.Identifier{o.table}
	unlogged := ""
	if o.unlogged {
		unlogged = "UNLOGGED "
	}
	create := `CREATE ` + unlogged + `TABLE ` + id.Sanitize() + ` (time timestamptz NOT NULL, tenant text NOT NULL, labels ` + o.types +
		` NOT NULL, fields ` + o.types + ` NOT NULL, line text NOT NULL)`
	cols := []string{"time", "tenant", "labels", "fields", "line"}
	if o.narrow {
		create = `CREATE ` + unlogged + `TABLE ` + id.Sanitize() + ` (time timestamptz NOT NULL, tenant text NOT NULL)`
		cols = cols[:2]
	}
	stmts := []string{`DROP TABLE IF EXISTS ` + id.Sanitize(), create}
	switch o.index {
	case "":
	case "gin":
		stmts = append(stmts, `CREATE INDEX ON `+id.Sanitize()+` USING gin (fields)`)
	case "time":
		stmts = append(stmts, `CREATE INDEX ON `+id.Sanitize()+` (tenant, time)`)
	case "brin":
		stmts = append(stmts, `CREATE INDEX ON `+id.Sanitize()+` USING brin (time)`)
	default:
		return fmt.Errorf("-index %q: want gin, time or brin", o.index)
	}
	if o.syncCommit != "" {
		stmts = append(stmts, `SET synchronous_commit = `+pgx.Identifier{o.syncCommit}.Sanitize())
	}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	batch := o.batch
	if batch <= 0 {
		batch = len(data)
	}
	copySQL := `COPY ` + id.Sanitize() + ` (time, tenant, labels, fields, line) FROM STDIN`
	if o.mode == "binary" {
		copySQL += ` BINARY`
	}
	// Stream k copies every streams-th chunk of batch rows from chunk k,
	// on a connection of its own (the first is conn).
	conns := []*pgx.Conn{conn}
	for range o.streams - 1 {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		defer c.Close(ctx)
		if o.syncCommit != "" {
			if _, err := c.Exec(ctx, `SET synchronous_commit = `+pgx.Identifier{o.syncCommit}.Sanitize()); err != nil {
				return err
			}
		}
		conns = append(conns, c)
	}
	backends := make([]int, len(conns))
	for k, c := range conns {
		if err := c.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backends[k]); err != nil {
			return fmt.Errorf("backend pid: %w", err)
		}
	}
	b0, err := procsCPU(backends)
	if err != nil {
		return err
	}
	c0 := selfCPU()
	start := time.Now()
	counts := make([]int64, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for k, c := range conns {
		wg.Go(func() {
			for at := k * batch; at < len(data); at += len(conns) * batch {
				n, err := copyRows(ctx, c, id, cols, copySQL, data[at:min(at+batch, len(data))], o)
				if err != nil {
					errs[k] = fmt.Errorf("copy (stream %d): %w", k, err)
					return
				}
				counts[k] += n
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	c1 := selfCPU()
	b1, err := procsCPU(backends)
	if err != nil {
		return err
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var n int64
	for _, k := range counts {
		n += k
	}
	if n != int64(len(data)) {
		return fmt.Errorf("copy: %d rows copied, %d read", n, len(data))
	}
	fmt.Printf("rows %d seconds %.3f rows/s %.0f client-cpu %.2f backend-cpu %.2f\n", n, secs, float64(n)/secs, c1-c0, b1-b0)
	return nil
}

// copyRows copies part in one COPY, autocommitted, as o says.
func copyRows(ctx context.Context, conn *pgx.Conn, id pgx.Identifier, cols []string, copySQL string, part []row, o options) (int64, error) {
	if o.mode == "pgx" {
		return conn.CopyFrom(ctx, id, cols, pgx.CopyFromSlice(len(part), func(i int) ([]any, error) {
			r := &part[i]
			if o.narrow {
				return []any{r.time, r.tenant}, nil
			}
			if o.types == "text" {
				return []any{r.time, r.tenant, string(r.labels), string(r.fields), r.line}, nil
			}
			return []any{r.time, r.tenant, json.RawMessage(r.labels), json.RawMessage(r.fields), r.line}, nil
		}))
	}
	tag, err := conn.PgConn().CopyFrom(ctx, &encoder{rows: part, mode: o.mode, jsonb: o.types == "jsonb"}, copySQL)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// procsCPU returns the CPU seconds of the processes pids so far, summed.
func procsCPU(pids []int) (float64, error) {
	var sum float64
	for _, p := range pids {
		c, err := procCPU(p)
		if err != nil {
			return 0, err
		}
		sum += c
	}
	return sum, nil
}

// selfCPU returns this process's CPU seconds so far.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// procCPU returns the CPU seconds of process pid so far, from
// /proc/PID/stat (utime and stime, in clock ticks of 100 Hz).
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("the backend's CPU (is PostgreSQL on this machine?): %w", err)
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing parenthesis (field 3 is the state).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return float64(u+s) / 100, nil
}

// encoder reads as the COPY of rows, in binary (as the sink's binaryRows)
// or text format, 64 KB at a time.
type encoder struct {
	rows    []row
	mode    string
	jsonb   bool
	i       int
	buf     []byte
	off     int
	started bool
	ended   bool
}

// microsFromUnixToY2K is 2000-01-01 00:00 UTC in microseconds since the
// Unix epoch: timestamptz's zero.
const microsFromUnixToY2K = 946_684_800 * 1_000_000

func (e *encoder) Read(p []byte) (int, error) {
	if e.off == len(e.buf) {
		e.buf, e.off = e.buf[:0], 0
		if !e.started && e.mode == "binary" {
			e.buf = append(e.buf, "PGCOPY\n\xff\r\n\x00"...)
			e.buf = binary.BigEndian.AppendUint64(e.buf, 0) // flags, header extension
		}
		e.started = true
		for ; e.i < len(e.rows) && len(e.buf) < 64<<10; e.i++ {
			if e.mode == "binary" {
				e.buf = e.appendBinary(e.buf, &e.rows[e.i])
			} else {
				e.buf = appendText(e.buf, &e.rows[e.i])
			}
		}
		if e.i == len(e.rows) && !e.ended {
			if e.mode == "binary" {
				e.buf = binary.BigEndian.AppendUint16(e.buf, 0xffff)
			}
			e.ended = true
		}
		if len(e.buf) == 0 {
			return 0, io.EOF
		}
	}
	n := copy(p, e.buf[e.off:])
	e.off += n
	return n, nil
}

func (e *encoder) appendBinary(dst []byte, r *row) []byte {
	dst = binary.BigEndian.AppendUint16(dst, 5)
	dst = binary.BigEndian.AppendUint32(dst, 8)
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.time.UnixMicro()-microsFromUnixToY2K))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.tenant)))
	dst = append(dst, r.tenant...)
	for _, j := range [][]byte{r.labels, r.fields} {
		if e.jsonb {
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(j)+1))
			dst = append(dst, 1)
		} else {
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(j)))
		}
		dst = append(dst, j...)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.line)))
	return append(dst, r.line...)
}

// appendText appends r as a line of text COPY: tab-separated, with
// backslash, tab, newline and carriage return escaped.
func appendText(dst []byte, r *row) []byte {
	dst = r.time.AppendFormat(dst, "2006-01-02 15:04:05.999999-07")
	for _, v := range [][]byte{[]byte(r.tenant), r.labels, r.fields, []byte(r.line)} {
		dst = append(dst, '\t')
		for _, c := range v {
			switch c {
			case '\\':
				dst = append(dst, '\\', '\\')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			default:
				dst = append(dst, c)
			}
		}
	}
	return append(dst, '\n')
}

// rowsOf parses the corpus as POST /insert/jsonline?_stream_fields=...
// does, and returns the rows the PostgreSQL sink would write for it.
func rowsOf(ctx context.Context, corpus, tenant string, streams []string) ([]row, error) {
	f, err := os.Open(corpus)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cfg := record.DefaultConfig()
	cfg.StreamFields = streams
	p, err := parse.New(parse.Options{Format: "json", Record: cfg})
	if err != nil {
		return nil, err
	}
	var enc rows.Encoder
	var out []row
	var b sink.Batch
	err = p.Reader(ctx, f, func(rb *record.Batch) error {
		if len(rb.Errors) > 0 {
			return fmt.Errorf("%s: %d lines refused, the first: %v", corpus, len(rb.Errors), rb.Errors[0])
		}
		blk, err := rows.Decode(enc.Append(nil, tenant, rb))
		if err != nil {
			return err
		}
		b.Reset()
		b.AppendBlock(blk, wal.Pos{})
		for i := range b.Records {
			r := &b.Records[i]
			out = append(out, row{time: time.Unix(0, r.Time).UTC(), tenant: r.Tenant, labels: clone(r.LabelsJSON),
				fields: clone(r.FieldsJSON), line: string(r.Line)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", corpus, err)
	}
	return out, nil
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
