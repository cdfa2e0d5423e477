package text

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

// loghubDir returns ../shared/loghub, or skips the test when it is absent
// (its terms keep it out of the repository).
func loghubDir(tb testing.TB) string { return parsetest.Shared(tb, "loghub") }

// parseAll parses in whole and returns its batch.
func parseAll(in []byte) *record.Batch {
	b := &record.Batch{Data: in}
	bl := record.NewBuilder(record.DefaultConfig())
	bl.Start(b)
	var sp lines.Splitter
	lines.Run(&sp, bl, Parser{}, true)
	return b
}

// TestLoghubLevels checks the level found on each line of the Loghub
// samples against their ground truth, for the systems whose levels are
// words of our list.
func TestLoghubLevels(t *testing.T) {
	dir := loghubDir(t)
	for _, sys := range []string{"Apache", "Hadoop", "HDFS", "Spark", "Windows", "Zookeeper", "OpenStack", "BGL"} {
		t.Run("system="+sys, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join(dir, sys, sys+"_2k.log"))
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(filepath.Join(dir, sys, sys+"_2k.log_structured.csv"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rows, err := csv.NewReader(f).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			col := -1
			for i, h := range rows[0] {
				if h == "Level" {
					col = i
				}
			}
			b := parseAll(in)
			if len(b.Errors) != 0 || len(b.Records) != len(rows)-1 {
				t.Fatalf("%d records for %d rows, errors %v", len(b.Records), len(rows)-1, b.Errors)
			}
			checked, wrong, timed := 0, 0, 0
			for i := range b.Records {
				if b.Records[i].TimeSource == record.FromData {
					timed++
				}
				want := rows[i+1][col]
				if !isLevel([]byte(want)) {
					continue // SEVERE, FAILURE, ...: not ours to find
				}
				checked++
				got := ""
				for _, f := range b.RecordFields(i) {
					got = string(b.Bytes(f.Raw))
				}
				if got != want {
					wrong++
					if wrong <= 3 {
						t.Errorf("line %d: level %q, want %q: %s", i+1, got, want, b.Bytes(b.Records[i].Line))
					}
				}
			}
			t.Logf("%d of %d levels right; %d of %d lines timed", checked-wrong, checked, timed, len(b.Records))
			if checked == 0 || wrong*100 > checked {
				t.Errorf("%d of %d levels wrong", wrong, checked)
			}
		})
	}
}
