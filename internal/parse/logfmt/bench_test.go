package logfmt

import (
	"bytes"
	"os"
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
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
	batch := &record.Batch{Data: in}
	bl := record.NewBuilder(record.DefaultConfig())
	var sp lines.Splitter
	run := func() {
		batch.Records, batch.Fields, batch.Errors = batch.Records[:0], batch.Fields[:0], batch.Errors[:0]
		bl.Start(batch)
		sp.Reset()
		lines.Run(&sp, bl, Parser{}, true)
	}
	run() // warm the batch's slices and the name table
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		run()
	}
	if len(batch.Errors) > 0 {
		b.Fatal(batch.Errors[0].Error())
	}
}
