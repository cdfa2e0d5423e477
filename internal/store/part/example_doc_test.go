package part_test

import (
	"encoding/hex"
	"flag"
	"os"
	"testing"

	"github.com/sluicelog/sluice/internal/vfs"
)

var update = flag.Bool("update", false, "rewrite testdata/example.hex and testdata/golden/vN.part (N: the current version) from what the writer makes")

// TestExample writes the part of docs/format/part.md's example and
// compares it with testdata/example.hex, the dump the document quotes:
// a change of the format shows here first.
func TestExample(t *testing.T) {
	input := `{"ts":"2026-01-15T08:00:00Z","msg":"up","service":"api"}
{"ts":"2026-01-15T08:00:01Z","msg":"a \"b\"","service":"api","ms":250}
`
	fs := vfs.NewMem()
	writePart(t, fs, "p.part", encoded(t, "json", []byte(input)))
	data, release, err := fs.Map("p.part")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	got := hex.Dump(data)
	if *update {
		if err := os.WriteFile("testdata/example.hex", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/example.hex")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the example part changed (run with -update, then update docs/format/part.md):\n%s", got)
	}
}
