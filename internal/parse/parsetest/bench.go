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

// AllocsPerLine parses line with p once to warm the builder (names,
// streams, slices), checks that it became a record, and returns the
// allocations of parsing it again, averaged over 100 runs.
func AllocsPerLine(tb testing.TB, p lines.Parser, line string) float64 {
	tb.Helper()
	b := &record.Batch{Data: []byte(line), ReceiveTime: ReceiveTime}
	bl := record.NewBuilder(record.DefaultConfig())
	bl.Start(b)
	span := record.Span{Len: uint32(len(line))}
	run := func() {
		b.Records, b.Fields, b.Errors = b.Records[:0], b.Fields[:0], b.Errors[:0]
		bl.SetPos(1, 0)
		p.ParseLine(bl, span)
	}
	run()
	if len(b.Records) != 1 {
		tb.Fatalf("%q did not become a record: %v", line, b.Errors)
	}
	return testing.AllocsPerRun(100, run)
}
