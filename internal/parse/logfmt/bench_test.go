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

// BenchmarkParseSWAR is BenchmarkParse with the scans of machines without
// AVX2 (where it is BenchmarkParse).
func BenchmarkParseSWAR(b *testing.B) {
	sample, err := os.ReadFile("testdata/sample.log")
	if err != nil {
		b.Fatal(err)
	}
	in := bytes.Repeat(sample, 4<<20/len(sample))
	parsetest.Bench(b, in, record.DefaultConfig(), parsetest.Lines(Parser{swar: true}))
}

// emptyRecords makes each line an empty record: the cost of splitting and
// of the builder's per-record work, without any field.
type emptyRecords struct{}

func (emptyRecords) ParseLine(bl *record.Builder, line record.Span) {
	bl.Begin(line)
	bl.End()
}

// BenchmarkParts splits BenchmarkParse's cost: splitting plus empty
// records; parsing without time, message and stream resolution (an empty
// record.Config); and everything.
func BenchmarkParts(b *testing.B) {
	sample, err := os.ReadFile("testdata/sample.log")
	if err != nil {
		b.Fatal(err)
	}
	in := bytes.Repeat(sample, 4<<20/len(sample))
	b.Run("part=split+records", func(b *testing.B) {
		parsetest.Bench(b, in, record.DefaultConfig(), parsetest.Lines(emptyRecords{}))
	})
	b.Run("part=fields", func(b *testing.B) {
		parsetest.Bench(b, in, record.Config{}, parsetest.Lines(Parser{}))
	})
	b.Run("part=all", func(b *testing.B) {
		parsetest.Bench(b, in, record.DefaultConfig(), parsetest.Lines(Parser{}))
	})
}
