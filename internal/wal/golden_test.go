package wal

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicelog/sluice/internal/vfs"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/v<FormatVersion> from what the writer makes")

// goldenPayloads are the payloads of the golden logs: an ordinary one,
// an empty one, one of 300 bytes of every value, and one in the second
// segment.
func goldenPayloads() [][]byte {
	big := make([]byte, 300)
	for i := range big {
		big[i] = byte(i*37 + 11)
	}
	return [][]byte{[]byte("hello"), {}, big, []byte("after rotate")}
}

// goldenWant is what a golden log replays: two segments, 7 and 8, the
// first holding three frames back to back from offset 20 (the header's
// size), the second one.
var goldenWant = []Pos{{7, 20}, {7, 37}, {7, 49}, {8, 20}}

// writeGolden writes the golden log into dir with the current writer:
// Open at segment 7, three appends, a rotation, one append, Close.
func writeGolden(t *testing.T, dir string) {
	t.Helper()
	l, _, err := Open(Options{FS: vfs.OS, Dir: dir, Logger: discardLogger()}, 7, func(Pos, []byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	p := goldenPayloads()
	for i, pl := range p {
		if i == 3 {
			if _, err := l.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
		pos, err := l.Append(pl)
		if err != nil {
			t.Fatal(err)
		}
		if pos != goldenWant[i] {
			t.Fatalf("payload %d appended at %v, want %v", i, pos, goldenWant[i])
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// goldenSegments returns the .wal files of dir, sorted.
func goldenSegments(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// TestGoldenWAL reads the logs of testdata/golden, one directory per
// frozen format version (v1: segments 00000000000000000007.wal and
// ...08.wal, written by writeGolden at FormatVersion 1), and checks every
// frame's position and payload, byte for byte: a change that makes them
// read differently breaks the WALs of older binaries, which a newer one
// must replay. Only the current version's directory may be rewritten
// (-update); a new version adds its own and keeps the old ones.
func TestGoldenWAL(t *testing.T) {
	current := filepath.Join("testdata", "golden", fmt.Sprintf("v%d", FormatVersion))
	if *update {
		if err := os.RemoveAll(current); err != nil {
			t.Fatal(err)
		}
		writeGolden(t, current)
		if err := os.Remove(filepath.Join(current, lockName)); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []int{1} {
		dir := filepath.Join("testdata", "golden", fmt.Sprintf("v%d", v))
		t.Run(fmt.Sprintf("version=%d/replay", v), func(t *testing.T) {
			// Replay changes nothing, so it reads testdata in place.
			var got []record
			rep, err := Replay(Options{FS: vfs.OS, Dir: dir, Logger: discardLogger()}, 0, func(pos Pos, p []byte) error {
				got = append(got, record{pos, bytes.Clone(p)})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, got)
			if rep.Segments != 2 || rep.Records != 4 || rep.Bytes != 317 || rep.TornTail != nil || len(rep.Corrupt) != 0 {
				t.Errorf("report %+v, want 2 segments, 4 records, 317 bytes, no damage", rep)
			}
		})
		t.Run(fmt.Sprintf("version=%d/open", v), func(t *testing.T) {
			// Open recovers (and would repair) a copy, then appends after it.
			tmp := t.TempDir()
			for _, name := range goldenSegments(t, dir) {
				b, err := os.ReadFile(name)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(tmp, filepath.Base(name)), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			opts := Options{FS: vfs.OS, Dir: tmp, Logger: discardLogger()}
			l, rep, got := openLog(t, opts, 0)
			checkGolden(t, got)
			if rep.TornTail != nil || len(rep.Corrupt) != 0 {
				t.Errorf("report %+v, want no damage", rep)
			}
			pos, err := l.Append([]byte("new"))
			if err != nil {
				t.Fatal(err)
			}
			if pos != (Pos{9, 20}) {
				t.Errorf("append after the golden log at %v, want segment 9 offset 20", pos)
			}
		})
	}
	t.Run("writer", func(t *testing.T) {
		// The current writer still writes its version's golden bytes.
		tmp := t.TempDir()
		writeGolden(t, tmp)
		got, want := goldenSegments(t, tmp), goldenSegments(t, current)
		if len(got) != len(want) {
			t.Fatalf("wrote %d segments, %s has %d", len(got), current, len(want))
		}
		for i := range want {
			g, err := os.ReadFile(got[i])
			if err != nil {
				t.Fatal(err)
			}
			w, err := os.ReadFile(want[i])
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Base(got[i]) != filepath.Base(want[i]) || !bytes.Equal(g, w) {
				t.Errorf("%s differs from %s: the format changed (a new FormatVersion, then -update)", got[i], want[i])
			}
		}
	})
}

func checkGolden(t *testing.T, got []record) {
	t.Helper()
	p := goldenPayloads()
	if len(got) != len(p) {
		t.Fatalf("replayed %d frames, want %d", len(got), len(p))
	}
	for i := range p {
		if got[i].pos != goldenWant[i] || !bytes.Equal(got[i].payload, p[i]) {
			t.Errorf("frame %d: %v %q, want %v %q", i, got[i].pos, got[i].payload, goldenWant[i], p[i])
		}
	}
}
