package part_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicelog/sluice/internal/store/part"
	"github.com/sluicelog/sluice/internal/vfs"
)

// TestDictRestPromotes: a message repeated in 1% of a block's rows, on
// rows the writer's sample of 128 values never looks at, still becomes
// an entry of its dictionary-and-rest column (counted among the rest and
// promoted), while the messages met once stay with the rest; every value
// reads back as written.
func TestDictRestPromotes(t *testing.T) {
	const n = 2000 // the sample reads every 15th row: 15i is never 7 mod 100 nor 3 mod 5
	var lines []string
	want := make([]string, n)
	for i := range n {
		msg := []string{"upstream timeout", "cache miss", "payment declined", "slow query"}[i%4]
		switch {
		case i%100 == 7:
			msg = "Zahlung fehlgeschlagen"
		case i%5 == 3:
			msg = fmt.Sprintf("query %d took %dms", i, i%97)
		}
		want[i] = msg
		lines = append(lines, fmt.Sprintf(`{"ts":%d,"msg":"%s"}`, 1768464000000+int64(i), msg))
	}
	fs := vfs.NewMem()
	writePart(t, fs, "p.part", encoded(t, "auto", []byte(strings.Join(lines, "\n")+"\n")))
	rd, err := part.Open(fs, "p.part")
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if len(rd.Blocks) != 1 {
		t.Fatalf("%d blocks, want 1", len(rd.Blocks))
	}
	var b part.Block
	if err := rd.ReadColumns(0, &b); err != nil {
		t.Fatal(err)
	}
	found := false
	for col := range b.NumColumns() {
		ids, ok := b.EntryIDs(col)
		if !ok {
			continue
		}
		found = true
		if len(ids) != n {
			t.Fatalf("%d values, want %d", len(ids), n)
		}
		for i, id := range ids {
			v, _, err := b.Value(col, i, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(v) != want[i] {
				t.Fatalf("value %d: %q, want %q", i, v, want[i])
			}
			if rest := strings.HasPrefix(want[i], "query "); rest != (id == part.RestID) {
				t.Errorf("value %d (%q): entry id %d", i, v, id)
			}
		}
	}
	if !found {
		t.Fatal("no dictionary-and-rest column")
	}
}
