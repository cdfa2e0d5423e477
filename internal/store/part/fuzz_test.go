package part_test

import (
	"bytes"
	"testing"

	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// FuzzContains: for any lines and literal, a read keeping the rows whose
// line contains the literal keeps exactly those (exact search), or at
// least those and no ASCII line without it (folding search).
func FuzzContains(f *testing.F) {
	f.Add(`{"ts":"2026-01-15T08:00:00Z","msg":"payment declined","n":12}
{"ts":"2026-01-15T08:00:01Z","msg":"ok","n":3}`, "payment", false)
	f.Add(`{"ts":1768464000000,"a":"x","b":"y"}
{"ts":1768464000001,"a":"xx","b":"yy"}`, `x","b`, false)
	f.Add("ts=2026-01-15T08:00:00Z level=INFO msg=\"a b\"\nts=2026-01-15T08:00:02Z level=warn msg=c", "Level=Info", true)
	f.Add("2026-01-15 08:00:00.000 WARN free text \u212a\n2026-01-15 08:00:01.000 INFO k", "k", true)
	f.Fuzz(func(t *testing.T, input, lit string, fold bool) {
		if lit == "" || len(input) > 1<<14 {
			return
		}
		if fold {
			lit = string(lowerASCII([]byte(lit)))
		}
		fs := vfs.NewMem()
		blocks := encoded(t, "auto", []byte(input+"\n"))
		if len(blocks) == 0 {
			return
		}
		writePart(t, fs, "f.part", blocks)
		rd, err := part.Open(fs, "f.part")
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		for i := range rd.Blocks {
			var all, some part.Block
			all.LinesOnly, some.LinesOnly = true, true
			some.Contains = []part.Literal{{Text: []byte(lit), Fold: fold}}
			if err := rd.ReadBlock(i, &all); err != nil {
				t.Fatal(err)
			}
			if err := rd.ReadBlock(i, &some); err != nil {
				t.Fatal(err)
			}
			var want [][]byte
			for _, r := range all.Rows {
				line := r.Line
				if fold {
					line = lowerASCII(line)
				}
				if bytes.Contains(line, []byte(lit)) {
					want = append(want, r.Line)
				}
			}
			j := 0
			for _, r := range some.Rows {
				if j < len(want) && bytes.Equal(r.Line, want[j]) {
					j++
					continue
				}
				if !fold || isASCII(string(r.Line)) {
					t.Fatalf("literal %q (fold %v): kept %q, which lacks it", lit, fold, r.Line)
				}
			}
			if j != len(want) {
				t.Fatalf("literal %q (fold %v): %d of %d matching rows kept", lit, fold, j, len(want))
			}
			// Without lines: the same rows, by their times.
			var bare part.Block
			bare.LinesOnly, bare.NoLines = true, true
			bare.Contains = some.Contains
			if err := rd.ReadBlock(i, &bare); err != nil {
				t.Fatal(err)
			}
			if len(bare.Rows) != len(some.Rows) {
				t.Fatalf("literal %q (fold %v): %d rows without lines, %d with", lit, fold, len(bare.Rows), len(some.Rows))
			}
			for k := range bare.Rows {
				if bare.Rows[k].Time != some.Rows[k].Time || bare.Rows[k].Line != nil && !bytes.Equal(bare.Rows[k].Line, some.Rows[k].Line) {
					t.Fatalf("literal %q (fold %v): row %d differs without lines", lit, fold, k)
				}
			}
			// Counted: as many.
			bare.CountOnly = true
			if err := rd.ReadBlock(i, &bare); err != nil {
				t.Fatal(err)
			}
			if bare.Matches != len(some.Rows) || len(bare.Rows) != 0 {
				t.Fatalf("literal %q (fold %v): %d rows counted (%d kept), %d read", lit, fold, bare.Matches, len(bare.Rows), len(some.Rows))
			}
		}
	})
}

func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}
