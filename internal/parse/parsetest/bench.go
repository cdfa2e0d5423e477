package parsetest

import (
	"testing"

	"github.com/sluicelog/sluice/internal/parse/lines"
	"github.com/sluicelog/sluice/internal/record"
)

// RunFunc parses the batch the builder was started on, as lines.Run or a
// multiline Joiner's Run does, and returns the bytes it consumed.
type RunFunc func(sp *lines.Splitter, bl *record.Builder) int

// Lines returns the RunFunc of a line parser.
func Lines(p lines.Parser) RunFunc {
	return func(sp *lines.Splitter, bl *record.Builder) int { return lines.Run(sp, bl, p, true) }
}

// Bench measures parsing data as one input, again and again, with the
// batch, builder and splitter reused as sluice's readers reuse them. One
// untimed pass first warms the name table and the batch's slices; any
// rejected line fails the benchmark.
func Bench(b *testing.B, data []byte, cfg record.Config, run RunFunc) {
	b.Helper()
	batch := &record.Batch{Data: data, ReceiveTime: ReceiveTime}
	bl := record.NewBuilder(cfg)
	var sp lines.Splitter
	pass := func() {
		batch.Records, batch.Fields, batch.Errors = batch.Records[:0], batch.Fields[:0], batch.Errors[:0]
		bl.Start(batch)
		sp.Reset()
		run(&sp, bl)
	}
	pass()
	if len(batch.Errors) > 0 {
		b.Fatal(batch.Errors[0].Error())
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		pass()
	}
}
