package loki

import (
	"github.com/sluicelog/sluice/internal/parse/json"
	"github.com/sluicelog/sluice/internal/record"
)

// LineFields says which pushed lines keep the fields they hold.
//
// Loki stores a pushed line as text, and a query's `| json` parses it
// again each time it reads it. A line that is a JSON object (what most
// services log, and what Alloy or Promtail push of them) can give its
// keys as fields of its record instead, spans of the line: the store
// then keeps the line as a template and its values as columns, which a
// query reads without rebuilding the line. Nothing a client sees
// changes: the line is kept byte for byte, it is still the record's
// message, and the fields parsed from it are no labels (only structured
// metadata is: record.Record.IsMetadata), so a query sees what Loki
// would. VictoriaLogs parses such lines too (and, unlike this, replaces
// them by their fields).
type LineFields struct {
	// JSON parses each line whose first byte that is not a space is '{'
	// as a JSON object (package parse/json: nested keys dotted, arrays
	// kept as their text). A line that is not valid JSON, or holds more
	// than MaxFields fields, is kept as text without fields, as before.
	JSON bool
	// MaxFields is the most fields a line may give (0: no limit).
	MaxFields int
}

// DefaultLineFields parses JSON lines of up to 1000 fields (the server's
// default --max-fields).
var DefaultLineFields = LineFields{JSON: true, MaxFields: 1000}

// jsonFields parses lines for Decoder.add with a record.Builder of its
// own, which knows no time, message or stream field (a pushed entry has
// its time and stream already), into a scratch batch that shares the
// decoded batch's Data, so that the fields' spans are the line's in it.
type jsonFields struct {
	p       json.Parser
	bl      *record.Builder
	max     int
	scratch record.Batch
	// ids maps the builder's name ids to the decoded batch's, plus one
	// (0: not yet looked up), for names of builder generation gen in the
	// batch's names table names.
	ids   []uint32
	gen   uint64
	names *record.Names
}

// add appends to b the fields of line (a span of b.Data, the record's
// line) when it is a JSON object; it reports whether it did. Fields go
// in whole or not at all.
func (j *jsonFields) add(b *record.Batch, line record.Span, max int) bool {
	// Keys take names from the batch's table, which its structured
	// metadata needs too: lines of ever new keys stay text once they
	// have taken half of it.
	if !jsonObject(b.Bytes(line)) || b.Names.Len() >= record.MaxTableSize/2 {
		return false
	}
	// The builder's name table outlives the batch (a decoder is kept
	// between requests): lines of ever new keys get a new one.
	if j.bl == nil || j.max != max || j.scratch.Names != nil && j.scratch.Names.Len() > maxBuilderNames {
		j.bl = record.NewBuilder(record.Config{MaxFields: max})
		j.max = max
	}
	s := &j.scratch
	s.Data, s.Fields, s.Records, s.Errors = b.Data, s.Fields[:0], s.Records[:0], s.Errors[:0]
	j.bl.Start(s)
	j.p.ParseLine(j.bl, line)
	s.Data = nil // not to pin b's
	if len(s.Records) != 1 || len(s.Errors) != 0 {
		return false
	}
	if j.gen != j.bl.Generation() || j.names != b.Names {
		j.ids = j.ids[:0]
		j.gen, j.names = j.bl.Generation(), b.Names
	}
	start := len(b.Fields)
	for _, f := range s.Fields {
		for int(f.Name) >= len(j.ids) {
			j.ids = append(j.ids, 0)
		}
		id := j.ids[f.Name]
		if id == 0 {
			n, ok := b.Names.Lookup([]byte(s.Names.Get(f.Name)))
			if !ok { // the table is full: the line stays text
				b.Fields = b.Fields[:start]
				return false
			}
			id = n + 1
			j.ids[f.Name] = id
		}
		f.Name = id - 1
		b.Fields = append(b.Fields, f)
	}
	return true
}

// maxBuilderNames is the most names jsonFields' builder keeps between
// requests.
const maxBuilderNames = 1 << 16

// jsonObject reports whether line's first byte that is not JSON's
// whitespace is '{'.
func jsonObject(line []byte) bool {
	for _, c := range line {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}
