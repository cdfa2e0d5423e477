package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"maps"
	"math"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// flipBit flips bit 0 of the byte at off of a file (from the end when off
// is negative).
func flipBit(t testing.TB, fs vfs.FS, name string, off int64) {
	t.Helper()
	data, release, err := fs.Map(name)
	if err != nil {
		t.Fatal(err)
	}
	b := slices.Clone(data)
	release()
	if off < 0 {
		off += int64(len(b))
	}
	b[off] ^= 1
	writeFile(t, fs, name, b)
}

// writeFile replaces a file's bytes with b.
func writeFile(t testing.TB, fs vfs.FS, name string, b []byte) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// onlyPart returns the path of the store's one live part and its blocks.
func onlyPart(t testing.TB, s *Store) (string, []part.BlockMeta) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.parts) != 1 {
		t.Fatalf("%d parts, want 1", len(s.parts))
	}
	return s.parts[0].rd.Path, slices.Clone(s.parts[0].rd.Blocks)
}

// damagedStore writes lines of several streams into one part and closes
// the store; it returns the part's path and blocks, and the stored rows.
func damagedStore(t *testing.T, fs vfs.FS) (string, []part.BlockMeta, []stored) {
	t.Helper()
	s := open(t, fs, Options{})
	in := map[string][]string{"default": genLines(3000, 11)}
	appendLines(t, s, "default", in["default"], 500)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	p, blocks := onlyPart(t, s)
	if len(blocks) < 3 {
		t.Fatalf("%d blocks, want 3 or more", len(blocks))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return p, blocks, expected(t, in)
}

// TestDamagedBlockQuarantined: one flipped bit in a block costs that
// block only: reads give every other row, say what they skipped, and the
// store counts the block once.
func TestDamagedBlockQuarantined(t *testing.T) {
	fs := vfs.NewMem()
	p, blocks, all := damagedStore(t, fs)
	bad := blocks[1]
	flipBit(t, fs, p, bad.Off+bad.Len/2)

	s := open(t, fs, Options{})
	defer s.Close()
	sn := s.Snapshot()
	var want []stored
	for _, r := range all {
		if r.stream != sn.parts[0].rd.Streams[bad.Stream].String() || r.time < bad.MinTime || r.time > bad.MaxTime {
			want = append(want, r)
		}
	}
	sn.Release()
	for range 2 { // a second read skips the known-bad block too
		diff(t, exportAll(t, s), want)
	}
	sn = s.Snapshot()
	defer sn.Release()
	if got := sn.Warnings(); len(got) != 0 {
		t.Errorf("a fresh snapshot warns before reading: %q", got)
	}
	if _, err := sn.StreamStats(context.Background(), "default", math.MinInt64, math.MaxInt64, nil); err != nil {
		t.Fatal(err)
	}
	d := sn.Damage()
	if len(d) != 1 || d[0].Part != p || d[0].Block != 1 || d[0].Offset != bad.Off || d[0].Rows != int64(bad.Rows) {
		t.Fatalf("damage %+v, want block 1 of %s at %d", d, p, bad.Off)
	}
	if w := sn.Warnings(); len(w) != 1 || !strings.Contains(w[0], p) || !strings.Contains(w[0], "block 1") || !strings.Contains(w[0], "checksum mismatch") {
		t.Errorf("warnings %q: want the part, the block and the reason", w)
	}
	if st := s.Stats(); st.QuarantinedBlocks != 1 || st.BadBlocks != 1 {
		t.Errorf("quarantined %d, bad %d: want 1 and 1", st.QuarantinedBlocks, st.BadBlocks)
	}

	// Columnar reads skip it too.
	n := 0
	for _, ls := range sn.Streams("default", math.MinInt64, math.MaxInt64) {
		err := sn.ScanColumns(context.Background(), "default", ls, math.MinInt64, math.MaxInt64, Shard{}, NewestFirst,
			func(b *part.Block) error { n += b.NumRows(); return nil }, nil, func(*rows.Row, []string) error { n++; return nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	if n != len(want) {
		t.Errorf("columnar reads gave %d rows, want %d", n, len(want))
	}

	// A strict snapshot fails, naming the file, block and offset.
	strict := s.Snapshot()
	defer strict.Release()
	strict.FailOnDamage()
	var buf bytes.Buffer
	err := strict.Export(context.Background(), nil, math.MinInt64, math.MaxInt64, nil, &buf)
	var ce *part.CorruptionError
	if !errors.As(err, &ce) || ce.Path != p || ce.Block != 1 || ce.Offset != bad.Off {
		t.Fatalf("strict export: %v, want block 1 of %s at %d", err, p, bad.Off)
	}
	// Merges never drop the damaged block's rows: the part stays.
	if err := s.Compact(context.Background()); err != nil && !errors.Is(err, part.ErrCorrupt) {
		t.Fatal(err)
	}
	if q, _ := onlyPart(t, s); q != p {
		t.Errorf("the damaged part %s was replaced by %s", p, q)
	}
}

// TestDamagedFooter: a part whose footer is damaged is set aside, and
// every read of its tenant and day says so, after a restart too.
func TestDamagedFooter(t *testing.T) {
	fs := vfs.NewMem()
	p, _, _ := damagedStore(t, fs)
	flipBit(t, fs, p, -30)
	for i := range 2 {
		s := open(t, fs, Options{})
		if st := s.Stats(); st.BadParts != 1 || st.Parts != 0 {
			t.Errorf("open %d: %d bad parts, %d parts: want 1, 0", i, st.BadParts, st.Parts)
		}
		sn := s.Snapshot()
		sn.Streams("default", math.MinInt64, math.MaxInt64)
		w := sn.Warnings()
		if len(w) != 1 || !strings.Contains(w[0], p+".corrupt") || !strings.Contains(w[0], "unreadable") {
			t.Errorf("open %d: warnings %q: want %s.corrupt named", i, w, p)
		}
		other := s.Snapshot()
		other.Streams("someone-else", math.MinInt64, math.MaxInt64)
		if w := other.Warnings(); len(w) != 0 {
			t.Errorf("another tenant's query warns: %q", w)
		}
		other.Release()
		sn.Release()
		strict := s.Snapshot()
		strict.FailOnDamage()
		var buf bytes.Buffer
		if err := strict.Export(context.Background(), nil, math.MinInt64, math.MaxInt64, nil, &buf); !errors.Is(err, part.ErrCorrupt) || buf.Len() != 0 {
			t.Errorf("open %d: strict export: %v after %d bytes, want ErrCorrupt before any", i, err, buf.Len())
		}
		strict.Release()
		s.Close()
	}
}

// hashDir returns the SHA-256 of every file under dir, by path.
func hashDir(t testing.TB, fs vfs.FS, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	var walk func(string)
	walk = func(d string) {
		names, err := fs.List(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			p := path.Join(d, n)
			if st, err := fs.Stat(p); err == nil && st.IsDir() {
				walk(p)
				continue
			}
			data, release, err := fs.Map(p)
			if err != nil {
				t.Fatal(err)
			}
			out[p] = sha256.Sum256(data)
			release()
		}
	}
	walk(dir)
	return out
}

// TestReadOnly: a read-only store reads the WAL (damaged tail and all)
// into memory and skips a damaged part, changing no byte of the
// directory.
func TestReadOnly(t *testing.T) {
	fs := vfs.NewMem()
	s := open(t, fs, Options{})
	in := map[string][]string{"default": genLines(1000, 12), "b": genLines(300, 13)}
	appendLines(t, s, "b", in["b"], 100)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	appendLines(t, s, "default", in["default"], 100) // stays in the WAL
	p, _ := onlyPart(t, s)
	s.Close()
	segs, _ := fs.List("data/wal")
	last := ""
	for _, n := range segs {
		if strings.HasSuffix(n, ".wal") {
			last = n
		}
	}
	f, err := fs.OpenReadWrite("data/wal/" + last)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	f.Close()
	torn := st.Size()
	data, release, _ := fs.Map("data/wal/" + last)
	grown := append(slices.Clone(data), 0x17, 0, 0, 0, 0xde, 0xad) // an incomplete frame: a torn tail
	release()
	f, _ = fs.Create("data/wal/" + last)
	f.Write(grown)
	f.Close()
	flipBit(t, fs, p, -30) // and tenant b's part is unreadable
	before := hashDir(t, fs, "data")

	for range 2 {
		ro, err := Open(Options{FS: fs, Dir: "data", Logger: quiet, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		diff(t, exportAll(t, ro), expected(t, map[string][]string{"default": in["default"]}))
		rst := ro.Stats()
		if rst.TornWAL == "" || rst.BadParts != 1 {
			t.Errorf("stats: torn %q, bad parts %d: want the torn tail and 1", rst.TornWAL, rst.BadParts)
		}
		if err := appendBatch(ro, "default", in["default"][:1]); !errors.Is(err, ErrReadOnly) {
			t.Errorf("append to a read-only store: %v, want ErrReadOnly", err)
		}
		if err := ro.Flush(); !errors.Is(err, ErrReadOnly) {
			t.Errorf("flush of a read-only store: %v, want ErrReadOnly", err)
		}
		if r := ro.Repairs(); len(r) != 0 {
			t.Errorf("read-only repairs: %q", r)
		}
		if err := ro.Close(); err != nil {
			t.Fatal(err)
		}
		after := hashDir(t, fs, "data")
		if len(after) != len(before) {
			t.Fatalf("files %d, want %d", len(after), len(before))
		}
		for k, v := range before {
			if after[k] != v {
				t.Errorf("%s changed", k)
			}
		}
	}

	// Opening read-write repairs, and says what it did.
	rw := open(t, fs, Options{})
	defer rw.Close()
	rep := strings.Join(rw.Repairs(), "\n")
	if !strings.Contains(rep, "torn tail") || !strings.Contains(rep, p) {
		t.Errorf("repairs:\n%s\nwant the torn tail cut at %d and %s set aside", rep, torn, p)
	}
	diff(t, exportAll(t, rw), expected(t, map[string][]string{"default": in["default"]}))
}

// TestCheck: Check lists every damage with its file, block and offset,
// and changes nothing.
func TestCheck(t *testing.T) {
	fs := vfs.NewMem()
	p, blocks, _ := damagedStore(t, fs)
	check := func() []Finding {
		t.Helper()
		var out []Finding
		if _, err := Check(context.Background(), fs, "data", func(f Finding) { out = append(out, f) }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if f := check(); len(f) != 0 {
		t.Fatalf("clean directory: %v", f)
	}
	// More data in the WAL, then damage in a block and a WAL frame.
	s := open(t, fs, Options{})
	appendLines(t, s, "default", genLines(200, 14), 100)
	s.Close()
	flipBit(t, fs, p, blocks[2].Off+3)
	segs, _ := fs.List("data/wal")
	var wal string
	for _, n := range segs {
		if strings.HasSuffix(n, ".wal") {
			if data, release, _ := fs.Map("data/wal/" + n); len(data) > 100 {
				wal = "data/wal/" + n
				release()
			}
		}
	}
	if wal == "" {
		t.Fatal("no WAL segment with records")
	}
	flipBit(t, fs, wal, 60)
	before := hashDir(t, fs, "data")
	f := check()
	if len(f) != 2 {
		t.Fatalf("findings %v, want 2", f)
	}
	if f[0].File != p || f[0].Block != 2 || f[0].Offset != blocks[2].Off || !strings.Contains(f[0].String(), "block 2 at byte") {
		t.Errorf("finding %v: want block 2 of %s", f[0], p)
	}
	if f[1].File != wal || f[1].Offset < 0 {
		t.Errorf("finding %v: want %s", f[1], wal)
	}
	for k, v := range hashDir(t, fs, "data") {
		if before[k] != v {
			t.Errorf("check changed %s", k)
		}
	}
	flipBit(t, fs, "data/MANIFEST", 10)
	if f := check(); len(f) == 0 || f[0].File != "data/MANIFEST" {
		t.Errorf("damaged manifest: %v", f)
	}
}

// TestNewerPartRefused: a sound part in a format version above this
// binary's (its header and footer name the same later version) is no
// damage: the store refuses to open, naming it, and leaves every file as
// it was; a part whose header alone names a later version is damaged and
// set aside as before.
func TestNewerPartRefused(t *testing.T) {
	fs := vfs.NewMem()
	p, _, _ := damagedStore(t, fs)
	data, release, err := fs.Map(p)
	if err != nil {
		t.Fatal(err)
	}
	b := slices.Clone(data)
	release()
	newer := slices.Clone(b)
	binary.LittleEndian.PutUint32(newer[8:], part.Version+1)
	ft := newer[len(newer)-68:]
	binary.LittleEndian.PutUint32(ft[20:], part.Version+1)
	binary.LittleEndian.PutUint32(ft[64:], crc32.Checksum(ft[:64], crc32.MakeTable(crc32.Castagnoli)))
	writeFile(t, fs, p, newer)
	before := hashDir(t, fs, "data")
	s, err := Open(Options{FS: fs, Dir: "data", Logger: quiet})
	if err == nil {
		s.Close()
		t.Fatal("a store with a part of a later format opened")
	}
	if !errors.Is(err, part.ErrNewerFormat) || errors.Is(err, part.ErrCorrupt) || !strings.Contains(err.Error(), p) {
		t.Errorf("open: %v: want ErrNewerFormat naming %s, not damage", err, p)
	}
	if after := hashDir(t, fs, "data"); !maps.Equal(before, after) {
		t.Errorf("the refused open changed the data directory")
	}

	headerOnly := slices.Clone(b)
	binary.LittleEndian.PutUint32(headerOnly[8:], part.Version+1)
	writeFile(t, fs, p, headerOnly)
	s = open(t, fs, Options{})
	defer s.Close()
	if st := s.Stats(); st.BadParts != 1 || st.Parts != 0 {
		t.Errorf("a header alone naming a later version: %d bad parts, %d parts: want 1, 0 (damage)", st.BadParts, st.Parts)
	}
}
