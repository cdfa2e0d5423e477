// Package sinktest holds what the tests of the sink runtime and of every
// destination share: a WAL written as ingest writes it.
package sinktest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/wal"
)

// Quiet is a logger that writes nothing.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// AppendLines parses JSON lines and appends them to l as one WAL record
// of tenant, as ingest does.
func AppendLines(t testing.TB, l *wal.Log, tenant string, lines ...string) {
	t.Helper()
	p, err := parse.New(parse.Options{Format: "json", Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	var enc rows.Encoder
	err = p.Bytes(context.Background(), []byte(strings.Join(lines, "\n")+"\n"), func(b *record.Batch) error {
		_, err := l.Append(enc.Append(nil, tenant, b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// AppendRouted is AppendLines with routes, as the rules' route action
// leaves them: route(i) names the sinks line i goes to (nil: none).
func AppendRouted(t testing.TB, l *wal.Log, tenant string, route func(i int) []string, lines ...string) {
	t.Helper()
	p, err := parse.New(parse.Options{Format: "json", Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	var enc rows.Encoder
	n := 0
	err = p.Bytes(context.Background(), []byte(strings.Join(lines, "\n")+"\n"), func(b *record.Batch) error {
		SetRoutes(b, func(i int) []string { return route(n + i) })
		n += len(b.Records)
		_, err := l.Append(enc.Append(nil, tenant, b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// SetRoutes routes each record i of b to route(i), as the rules do.
func SetRoutes(b *record.Batch, route func(i int) []string) {
	b.Routes = b.Routes[:0]
	for i := range b.Records {
		names := route(i)
		b.Records[i].Route = 0
		if len(names) == 0 {
			continue
		}
		k := slices.IndexFunc(b.Routes, func(r []string) bool { return slices.Equal(r, names) })
		if k < 0 {
			b.Routes = append(b.Routes, names)
			k = len(b.Routes) - 1
		}
		b.Records[i].Route = uint16(k + 1)
	}
}

// Frames parses NDJSON data (lines of JSON) as ingest does, the records'
// streams made of streamFields, and returns the WAL records it appends,
// one per parsed batch, and how many records they hold.
func Frames(t testing.TB, tenant string, data []byte, streamFields ...string) ([][]byte, int) {
	t.Helper()
	cfg := record.DefaultConfig()
	cfg.StreamFields = streamFields
	p, err := parse.New(parse.Options{Format: "json", Record: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var enc rows.Encoder
	var out [][]byte
	n := 0
	err = p.Bytes(context.Background(), data, func(b *record.Batch) error {
		if len(b.Errors) > 0 {
			return fmt.Errorf("%d lines refused, the first: %v", len(b.Errors), b.Errors[0])
		}
		out = append(out, enc.Append(nil, tenant, b))
		n += len(b.Records)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, n
}
