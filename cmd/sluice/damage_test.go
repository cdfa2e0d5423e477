package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/parse"
	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store"
	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// hashTree returns the SHA-256 of every file under dir, by path.
func hashTree(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = sha256.Sum256(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, before, after map[string][32]byte) {
	t.Helper()
	for p, h := range after {
		if b, ok := before[p]; !ok {
			t.Errorf("%s created %s", what, p)
		} else if b != h {
			t.Errorf("%s changed %s", what, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s removed %s", what, p)
		}
	}
}

// livePart returns the path of the part under dir with the most blocks,
// its blocks and streams.
func livePart(t *testing.T, dir string) (string, []part.BlockMeta, []record.Labels) {
	t.Helper()
	parts, _ := filepath.Glob(filepath.Join(dir, "parts", "*", "*", "*.part"))
	var best string
	var blocks []part.BlockMeta
	var streams []record.Labels
	for _, p := range parts {
		rd, err := part.Open(vfs.OS, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(rd.Blocks) > len(blocks) {
			best, blocks, streams = p, slices.Clone(rd.Blocks), slices.Clone(rd.Streams)
		}
		rd.Close()
	}
	if best == "" {
		t.Fatalf("no part in %s", dir)
	}
	return best, blocks, streams
}

func flipFileBit(t *testing.T, name string, off int64) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(b))
	}
	b[off] ^= 0x04
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadOnlyCommands: export, stats, check and query --data change no
// byte of a directory with a torn WAL tail and lines only in the WAL, and
// export writes the WAL's lines; repair then cuts the tail and says so.
func TestReadOnlyCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	inParts := genTenantLines(2000, 21, "flushed")
	if _, errOut, st := sluice(t, "", "ingest", "--data", dir, "--quiet", writeFile(t, "a.log", inParts)); st != 0 {
		t.Fatalf("ingest: status %d: %s", st, errOut)
	}
	// Lines acknowledged into the WAL only: Close does not flush.
	inWAL := genTenantLines(300, 22, "walonly")
	s, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := parse.New(parse.Options{Record: record.DefaultConfig()})
	err = p.Bytes(context.Background(), []byte(inWAL), func(b *record.Batch) error { return s.Append(context.Background(), "default", b) })
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	var last string
	for _, seg := range segs {
		if st, _ := os.Stat(seg); st.Size() > 64 {
			last = seg
		}
	}
	f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0x40, 0, 0, 0, 1, 2, 3}) // half a frame: a torn tail
	f.Close()
	before := hashTree(t, dir)

	out, errOut, st := sluice(t, "", "export", "--data", dir)
	if st != 0 {
		t.Fatalf("export: status %d: %s", st, errOut)
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := strings.Split(strings.TrimSuffix(inParts+inWAL, "\n"), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("export gave %d lines, want %d (the parts' and the WAL's)", len(got), len(want))
	}
	if !strings.Contains(errOut, "incomplete frame") {
		t.Errorf("export does not mention the torn WAL tail: %q", errOut)
	}
	sameTree(t, "export", before, hashTree(t, dir))

	out, errOut, st = sluice(t, "", "stats", "--data", dir)
	if st != 0 || !strings.Contains(out, "head: 300 lines") || !strings.Contains(out, "torn tail") || strings.Contains(out, "damage") {
		t.Errorf("stats: status %d, stdout %q, stderr %q", st, out, errOut)
	}
	sameTree(t, "stats", before, hashTree(t, dir))

	out, errOut, st = sluice(t, "", "query", "--data", dir, "--from", "2020-01-01T00:00:00Z", "--to", "2030-01-01T00:00:00Z", "--limit", "5000", "--output", "raw", `{service=~".+"} |= "walonly"`)
	if st != 0 || strings.Count(out, "walonly") != 300 {
		t.Errorf("query --data: status %d, %d WAL lines, stderr %q", st, strings.Count(out, "walonly"), errOut)
	}
	sameTree(t, "query --data", before, hashTree(t, dir))

	out, _, st = sluice(t, "", "check", "--data", dir)
	if st != 0 || !strings.Contains(out, "note: "+last+": at byte ") || !strings.Contains(out, "torn tail") || !strings.Contains(out, "no damage") {
		t.Errorf("check: status %d, stdout %q; want 0 and the torn tail noted", st, out)
	}
	sameTree(t, "check", before, hashTree(t, dir))

	out, errOut, st = sluice(t, "", "repair", "--data", dir)
	if st != 0 || !strings.Contains(out, "cut the WAL's torn tail at "+filepath.Base(last)) {
		t.Errorf("repair: status %d, stdout %q, stderr %q", st, out, errOut)
	}
	if out, _, st = sluice(t, "", "check", "--data", dir); st != 0 || !strings.Contains(out, "no damage") || strings.Contains(out, "note:") {
		t.Errorf("check after repair: status %d, stdout %q", st, out)
	}
	if out, _, st := sluice(t, "", "repair", "--data", dir); st != 0 || !strings.Contains(out, "nothing to repair") {
		t.Errorf("second repair: status %d, stdout %q", st, out)
	}
}

// TestDamagedPartCommands: a flipped bit in a block: export stops there
// naming file, block and offset; --skip-corrupt writes every other line
// and lists the block; check lists it; nothing is changed. A damaged
// footer: export fails before writing, --skip-corrupt names the part,
// check lists it, repair sets it aside.
func TestDamagedPartCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	lines := genTenantLines(3000, 23, "x")
	if _, errOut, st := sluice(t, "", "ingest", "--data", dir, "--quiet", writeFile(t, "a.log", lines)); st != 0 {
		t.Fatalf("ingest: status %d: %s", st, errOut)
	}
	full, _, st := sluice(t, "", "export", "--data", dir)
	if st != 0 {
		t.Fatal("export of the clean directory failed")
	}
	p, blocks, streams := livePart(t, dir)
	if len(blocks) < 3 {
		t.Fatalf("%d blocks, want 3 or more", len(blocks))
	}
	bad := blocks[1]
	flipFileBit(t, p, bad.Off+bad.Len/3)
	before := hashTree(t, dir)
	where := fmt.Sprintf("part %s: block 1 corrupt at byte %d", p, bad.Off)

	out, errOut, st := sluice(t, "", "export", "--data", dir)
	if st != 1 || !strings.Contains(errOut, where) || !strings.Contains(errOut, "--skip-corrupt") {
		t.Errorf("export: status %d, stderr %q; want 1 and %q", st, errOut, where)
	}
	if !strings.HasPrefix(full, out) {
		t.Errorf("export before the damage wrote %d bytes that are not a prefix of the full export", len(out))
	}

	out, errOut, st = sluice(t, "", "export", "--data", dir, "--skip-corrupt")
	if st != 0 || !strings.Contains(errOut, fmt.Sprintf("skipped part %s block 1 (byte %d, %d rows", p, bad.Off, bad.Rows)) {
		t.Errorf("export --skip-corrupt: status %d, stderr %q", st, errOut)
	}
	if n, want := strings.Count(out, "\n"), strings.Count(full, "\n")-bad.Rows; n != want {
		t.Errorf("export --skip-corrupt wrote %d lines, want %d (all but block 1's of %s)", n, want, streams[bad.Stream])
	}
	out, errOut, st = sluice(t, "", "check", "--data", dir)
	if want := fmt.Sprintf("%s: block 1 at byte %d: checksum mismatch\n", p, bad.Off); st != 1 || !strings.Contains(out, want) || !strings.Contains(out, "1 damaged") {
		t.Errorf("check: status %d, stdout %q, stderr %q; want 1 and %q", st, out, errOut, want)
	}
	out, errOut, st = sluice(t, "", "query", "--data", dir, "--from", "2020-01-01T00:00:00Z", "--to", "2030-01-01T00:00:00Z", "--limit", "5000", "--output", "raw", `{service=~".+"}`)
	if st != 0 || !strings.Contains(errOut, "warning: damaged data skipped: part "+p+" block 1") {
		t.Errorf("query --data: status %d, stderr %q", st, errOut)
	}
	sameTree(t, "export, check and query", before, hashTree(t, dir))

	// The footer.
	flipFileBit(t, p, -10)
	before = hashTree(t, dir)
	out, errOut, st = sluice(t, "", "export", "--data", dir)
	if st != 1 || out != "" || !strings.Contains(errOut, p) || !strings.Contains(errOut, "unreadable") {
		t.Errorf("export of an unreadable part: status %d, %d bytes out, stderr %q", st, len(out), errOut)
	}
	out, errOut, st = sluice(t, "", "export", "--data", dir, "--skip-corrupt")
	if st != 0 || !strings.Contains(errOut, "skipped part "+p+" (tenant default") {
		t.Errorf("export --skip-corrupt of an unreadable part: status %d, stderr %q", st, errOut)
	}
	rows := 0
	for _, b := range blocks {
		rows += b.Rows
	}
	if n, want := strings.Count(out, "\n"), strings.Count(full, "\n")-rows; n != want {
		t.Errorf("export --skip-corrupt wrote %d lines, want %d (all but the unreadable part's)", n, want)
	}
	out, _, st = sluice(t, "", "check", "--data", dir)
	if st != 1 || !strings.Contains(out, p+": at byte ") || !strings.Contains(out, "whole part is unreadable") {
		t.Errorf("check: status %d, stdout %q", st, out)
	}
	sameTree(t, "export and check", before, hashTree(t, dir))
	out, _, st = sluice(t, "", "repair", "--data", dir)
	if st != 0 || !strings.Contains(out, "set aside unreadable part "+p) {
		t.Errorf("repair: status %d, stdout %q", st, out)
	}
	if _, err := os.Stat(p + ".corrupt"); err != nil {
		t.Errorf("repair did not set the part aside: %v", err)
	}
	out, _, st = sluice(t, "", "check", "--data", dir)
	if st != 1 || !strings.Contains(out, p+".corrupt") {
		t.Errorf("check after repair: status %d, stdout %q; want the part set aside listed", st, out)
	}
}
