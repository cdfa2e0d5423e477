// Command pgcopy is the bare side of bench/sink-pg.sh: it reads a corpus of
// JSON lines, turns every line into the row the PostgreSQL sink writes (the
// default table: time, tenant, labels and fields as jsonb, the line) with
// sluice's own parser and record code, untimed, then copies all the rows
// into a fresh table of the same shape with one pgx CopyFrom (pgx.CopyFromRows,
// one statement, autocommitted) and prints how long that took.
//
// Output, one line: "rows N seconds S rows/s R".
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/sink"
	"github.com/sluicelog/sluice/internal/wal"
)

func main() {
	dsn := flag.String("dsn", "", "the PostgreSQL connection string")
	corpus := flag.String("corpus", "", "the NDJSON corpus `file`")
	table := flag.String("table", "pgcopy_logs", "the table to create (dropped first if it exists) and copy into")
	tenant := flag.String("tenant", "default", "the tenant of every row, as sluice gives it")
	streams := flag.String("stream-fields", "service,host", "the fields that make a line's stream (labels), as _stream_fields")
	flag.Parse()
	if *dsn == "" || *corpus == "" {
		fmt.Fprintln(os.Stderr, "pgcopy: -dsn and -corpus are required")
		os.Exit(2)
	}
	if err := run(*dsn, *corpus, *table, *tenant, strings.Split(*streams, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "pgcopy:", err)
		os.Exit(1)
	}
}

func run(dsn, corpus, table, tenant string, streams []string) error {
	ctx := context.Background()
	data, err := rowsOf(ctx, corpus, tenant, streams)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	id := pgx.Identifier{table}
	for _, s := range []string{
		`DROP TABLE IF EXISTS ` + id.Sanitize(),
		`CREATE TABLE ` + id.Sanitize() + ` (time timestamptz NOT NULL, tenant text NOT NULL, labels jsonb NOT NULL, fields jsonb NOT NULL, line text NOT NULL)`,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	start := time.Now()
	n, err := conn.CopyFrom(ctx, id, []string{"time", "tenant", "labels", "fields", "line"}, pgx.CopyFromRows(data))
	secs := time.Since(start).Seconds()
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if n != int64(len(data)) {
		return fmt.Errorf("copy: %d rows copied, %d read", n, len(data))
	}
	fmt.Printf("rows %d seconds %.3f rows/s %.0f\n", n, secs, float64(n)/secs)
	return nil
}

// rowsOf parses the corpus as POST /insert/jsonline?_stream_fields=...
// does, and returns the rows the PostgreSQL sink would write for it.
func rowsOf(ctx context.Context, corpus, tenant string, streams []string) ([][]any, error) {
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
	var out [][]any
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
			out = append(out, []any{time.Unix(0, r.Time).UTC(), r.Tenant, json.RawMessage(clone(r.LabelsJSON)),
				json.RawMessage(clone(r.FieldsJSON)), string(r.Line)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", corpus, err)
	}
	return out, nil
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
