package json

import (
	"bytes"
	stdjson "encoding/json"
	"os"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/record"
)

// benchParse parses data as one input, over and over, the way sluice's
// readers do: large buffers, one builder and parser reused.
func benchParse(b *testing.B, data []byte) {
	bl := record.NewBuilder(record.DefaultConfig())
	batch := &record.Batch{}
	var sp lines.Splitter
	var p Parser
	const chunk = 4 << 20
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		sp.Reset()
		for off := 0; off < len(data); {
			end := min(off+chunk, len(data))
			batch.Data = data[off:end]
			batch.Records, batch.Fields, batch.Errors = batch.Records[:0], batch.Fields[:0], batch.Errors[:0]
			bl.Start(batch)
			n := lines.Run(&sp, bl, &p, end == len(data))
			if len(batch.Errors) > 0 {
				b.Fatal(batch.Errors[0].Error())
			}
			off += n
		}
	}
}

// BenchmarkParse measures the JSON record parser on the sample corpus in
// testdata: every field typed and flattened, the timestamp parsed, the
// stream resolved.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/app-1000.ndjson")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("corpus=app-1000", func(b *testing.B) { benchParse(b, data) })
	// The reference point most Go log tools start from: encoding/json
	// decoding each line into a map, in the same run.
	b.Run("corpus=app-1000/impl=encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			for line := range bytes.Lines(data) {
				var m map[string]any
				if err := stdjson.Unmarshal(line, &m); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkCorpus measures the parser on the file named by $SLUICE_CORPUS
// (the canonical corpus; see bench/README.md), read into memory first, as
// the simdjson harness does (its load is not timed either).
func BenchmarkCorpus(b *testing.B) {
	path := os.Getenv("SLUICE_CORPUS")
	if path == "" {
		b.Skip("SLUICE_CORPUS is not set")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	benchParse(b, data)
}
