package store

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/vfs"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/v<ManifestVersion> (a data directory) with the current store")

// The golden data directory, testdata/golden/v1: a MANIFEST of version 1
// naming two parts (tenants acme and default) and a WAL segment holding a
// batch that no part has yet, as writeGoldenDir leaves them (LOCK files
// removed). The parts and the WAL segment are in the formats of the
// store that wrote them (part version 3, WAL and rows version 1), which
// internal/store/part, internal/wal and internal/rows pin on their
// own; this test pins the MANIFEST and the directory as a whole.
var goldenBatches = []struct {
	tenant string
	lines  string
	flush  bool // flush after this batch
}{
	{"default", `{"ts":"2026-01-15T08:00:00Z","level":"info","msg":"up","service":"api"}
{"ts":"2026-01-15T08:00:01Z","level":"error","msg":"db down","service":"web"}
2026-01-15 08:00:02,500 WARN text line
`, false},
	{"acme", `{"ts":"2026-01-15T09:00:00Z","msg":"acme one","service":"api"}
{"ts":"2026-01-15T09:00:01Z","msg":"acme two","service":"api"}
`, true},
	{"default", `{"ts":"2026-01-15T08:00:03Z","level":"info","msg":"in the wal only","service":"api"}
{"ts":"2026-01-16T00:00:00Z","msg":"next day, wal only","service":"web"}
`, false},
}

// goldenStored is what the golden directory holds, in export order (by
// tenant, then stream, the empty label set last, then time): the acme
// rows and the first default batch from the parts, the rest from the WAL.
var goldenStored = []stored{
	{"acme", `{service="api"}`, 1768467600000000000, `{"ts":"2026-01-15T09:00:00Z","msg":"acme one","service":"api"}`},
	{"acme", `{service="api"}`, 1768467601000000000, `{"ts":"2026-01-15T09:00:01Z","msg":"acme two","service":"api"}`},
	{"default", `{service="api"}`, 1768464000000000000, `{"ts":"2026-01-15T08:00:00Z","level":"info","msg":"up","service":"api"}`},
	{"default", `{service="api"}`, 1768464003000000000, `{"ts":"2026-01-15T08:00:03Z","level":"info","msg":"in the wal only","service":"api"}`},
	{"default", `{service="web"}`, 1768464001000000000, `{"ts":"2026-01-15T08:00:01Z","level":"error","msg":"db down","service":"web"}`},
	{"default", `{service="web"}`, 1768521600000000000, `{"ts":"2026-01-16T00:00:00Z","msg":"next day, wal only","service":"web"}`},
	{"default", `{}`, 1768464002500000000, `2026-01-15 08:00:02,500 WARN text line`},
}

// goldenManifest is the golden MANIFEST, field by field.
var goldenManifest = manifest{
	Version: 1,
	WALFrom: 1,
	NextID:  3,
	Parts: []partInfo{
		{ID: 1, Seq: 1, Tenant: "acme", Day: "2026-01-15", Level: 0, Rows: 2,
			MinTime: 1768467600000000000, MaxTime: 1768467601000000000, LineBytes: 124, Size: 374, Written: 374},
		{ID: 2, Seq: 2, Tenant: "default", Day: "2026-01-15", Level: 0, Rows: 3,
			MinTime: 1768464000000000000, MaxTime: 1768464002500000000, LineBytes: 186, Size: 1040, Written: 1040},
	},
}

// writeGoldenDir writes the golden directory into dir with the current
// store: the batches in order (receive time fixed, the clock stopped so
// that no flush starts on its own), a flush where marked, then Close,
// which leaves the last batch in the WAL.
func writeGoldenDir(t *testing.T, dir string) {
	t.Helper()
	now := time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)
	s, err := Open(Options{FS: vfs.OS, Dir: dir, Logger: quiet, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, gb := range goldenBatches {
		p, err := parse.New(parse.Options{Format: "auto", Record: record.DefaultConfig()})
		if err != nil {
			t.Fatal(err)
		}
		b := &record.Batch{Data: []byte(gb.lines), ReceiveTime: now.UnixNano()}
		if n := p.Parse(b, true); n != len(gb.lines) || len(b.Errors) > 0 {
			t.Fatalf("parse: %d of %d bytes, errors %v", n, len(gb.lines), b.Errors)
		}
		if err := s.Append(context.Background(), gb.tenant, b); err != nil {
			t.Fatal(err)
		}
		if gb.flush {
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, lock := range []string{"LOCK", "wal/LOCK"} {
		if err := os.Remove(filepath.Join(dir, lock)); err != nil {
			t.Fatal(err)
		}
	}
}

// copyDir copies the files under src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestGoldenStore reads the golden data directory of each frozen
// manifest version: its MANIFEST field by field (and that saving it again
// writes the same bytes), then the directory opened read-only in place
// and read-write on a copy (replaying the WAL), every row compared with
// goldenStored. Only the current version's directory may be rewritten
// (-update); a new manifest version adds its own and keeps the old ones.
func TestGoldenStore(t *testing.T) {
	current := filepath.Join("testdata", "golden", fmt.Sprintf("v%d", ManifestVersion))
	if *update {
		if err := os.RemoveAll(current); err != nil {
			t.Fatal(err)
		}
		writeGoldenDir(t, current)
	}
	for _, v := range []int{1} {
		dir := filepath.Join("testdata", "golden", fmt.Sprintf("v%d", v))
		t.Run(fmt.Sprintf("version=%d/manifest", v), func(t *testing.T) {
			m, err := loadManifest(vfs.OS, dir)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*m, goldenManifest) {
				t.Errorf("MANIFEST reads as\n%+v\nwant\n%+v", *m, goldenManifest)
			}
			mem := vfs.NewMem()
			if err := mem.MkdirAll("d", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := m.save(mem, "d"); err != nil {
				t.Fatal(err)
			}
			got, release, err := mem.Map("d/MANIFEST")
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			want, err := os.ReadFile(filepath.Join(dir, "MANIFEST"))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("the MANIFEST saved again differs:\n%s\nwant\n%s", got, want)
			}
		})
		t.Run(fmt.Sprintf("version=%d/read-only", v), func(t *testing.T) {
			s, err := Open(Options{FS: vfs.OS, Dir: dir, Logger: quiet, ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			checkGoldenStore(t, s)
		})
		t.Run(fmt.Sprintf("version=%d/read-write", v), func(t *testing.T) {
			tmp := t.TempDir()
			copyDir(t, dir, tmp)
			s, err := Open(Options{FS: vfs.OS, Dir: tmp, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			checkGoldenStore(t, s)
			// The WAL's batch flushes into parts next to the old ones.
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			checkGoldenStore(t, s)
		})
	}
}

func checkGoldenStore(t *testing.T, s *Store) {
	t.Helper()
	if rep := s.WALReport(); rep.TornTail != nil || len(rep.Corrupt) != 0 {
		t.Errorf("WAL report %+v: want no damage", rep)
	}
	if d := s.DamagedParts(); len(d) != 0 {
		t.Errorf("damaged parts %+v", d)
	}
	got := exportAll(t, s)
	if len(got) != len(goldenStored) {
		t.Errorf("%d rows, want %d:\n%s", len(got), len(goldenStored), strings.ReplaceAll(fmt.Sprintf("%+v", got), "} {", "}\n{"))
	}
	diff(t, got, goldenStored)
}
