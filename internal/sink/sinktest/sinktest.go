// Package sinktest holds what the tests of the sink runtime and of every
// destination share: a WAL written as ingest writes it.
package sinktest

import (
	"context"
	"io"
	"log/slog"
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
