package logfmt

import (
	"bytes"
	"os"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/parsetest"
	"github.com/sluicelog/sluice/internal/record"
)

// BenchmarkParse parses the sample corpus (gen.py logfmt, seed 1)
// repeated to about 4 MB, so that the input does not sit in cache.
func BenchmarkParse(b *testing.B) {
	sample, err := os.ReadFile("testdata/sample.log")
	if err != nil {
		b.Fatal(err)
	}
	in := bytes.Repeat(sample, 4<<20/len(sample))
	parsetest.Bench(b, in, record.DefaultConfig(), parsetest.Lines(Parser{}))
}
