package store

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/vfs"
)

// TestAppendHonoursSelection stores a batch with dropped records and a
// replaced line: only the kept records are stored, the replaced one with
// its new line, in the head, after a flush and after a replay of the WAL.
func TestAppendHonoursSelection(t *testing.T) {
	fs := vfs.NewMem()
	s := open(t, fs, Options{})
	var lines []string
	for i := range 10 {
		lines = append(lines, fmt.Sprintf(`{"time":"2026-01-15T08:00:%02dZ","msg":"m%d","secret":"s3cr3t-%d"}`, i, i, i))
	}
	const redacted = `{"time":"2026-01-15T08:00:04Z","msg":"m4","secret":"[REDACTED]"}`
	var want []stored
	p, err := parse.New(parse.Options{Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Bytes(context.Background(), []byte(strings.Join(lines, "\n")+"\n"), func(b *record.Batch) error {
		for i := range b.Records {
			if i%3 == 0 {
				b.Drop(i)
			}
		}
		b.SetLine(4, []byte(redacted))
		for i := range b.Records {
			if b.Kept(i) {
				want = append(want, stored{"default", b.Labels(i).String(), b.Records[i].Time, string(b.Bytes(b.Records[i].Line))})
			}
		}
		b.Tenant = "default"
		return s.Append(context.Background(), "default", b)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 6 {
		t.Fatalf("%d kept records, want 6", len(want))
	}
	check := func(when string) {
		t.Helper()
		got := exportAll(t, s)
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows stored, want %d: %+v", when, len(got), len(want), got)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: row %d %+v, want %+v", when, i, got[i], want[i])
			}
			if strings.Contains(got[i].line, "s3cr3t-4") {
				t.Errorf("%s: the replaced line's secret was stored: %q", when, got[i].line)
			}
		}
	}
	check("head")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, fs, Options{})
	check("replayed")
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAppendTenantMismatch refuses a batch whose own tenant is not the
// one it is stored for: that is a caller's bug, and storing it under
// either tenant would put lines where their sender did not.
func TestAppendTenantMismatch(t *testing.T) {
	s := open(t, vfs.NewMem(), Options{})
	defer s.Close()
	p, err := parse.New(parse.Options{Record: record.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Bytes(context.Background(), []byte("a line\n"), func(b *record.Batch) error {
		b.Tenant = "team-a"
		return s.Append(context.Background(), "team-b", b)
	})
	if err == nil || !strings.Contains(err.Error(), `"team-a"`) || !strings.Contains(err.Error(), `"team-b"`) {
		t.Fatalf("Append of a team-a batch for team-b: %v, want an error naming both", err)
	}
	if got := exportAll(t, s); len(got) != 0 {
		t.Errorf("stored %d rows of a refused batch", len(got))
	}
}
