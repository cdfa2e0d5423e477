package query

import (
	"strings"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/stage"
)

// rowMeta adds to lb the structured metadata of row r, whose field names
// index names (see rows.Row.IsMetadata).
func rowMeta(lb *stage.Labels, r *rows.Row, names []string) {
	if !metaOf(r) {
		return
	}
	for i := range r.Fields {
		if f := &r.Fields[i]; r.IsMetadata(f) {
			lb.SetMeta(names[f.Name], f.Value, f.Flags)
		}
	}
}

// metaOf reports whether a stored row's fields may hold structured
// metadata (some are held apart from its line).
func metaOf(r *rows.Row) bool { return len(r.Fields) > 0 && r.MsgIsLine() }

// hasMeta reports whether a stored row has structured metadata.
func hasMeta(r *rows.Row) bool {
	if !metaOf(r) {
		return false
	}
	for i := range r.Fields {
		if r.IsMetadata(&r.Fields[i]) {
			return true
		}
	}
	return false
}

// StructuredMetadata appends to dst the structured metadata of a stored
// row, whose field names index names, as LogQL sees it before the
// _extracted rule: the fields rows.Row.IsMetadata names (a Loki push's or
// OTLP record's, held apart from its line), in their stored order;
// nothing for the rows of sluice's own formats. The labels own their
// strings. Scan with ScanOptions.Meta (or without LinesOnly) for stored
// rows to carry their fields.
func StructuredMetadata(dst record.Labels, r *rows.Row, names []string) record.Labels {
	if !metaOf(r) {
		return dst
	}
	var buf []byte
	for i := range r.Fields {
		f := &r.Fields[i]
		if !r.IsMetadata(f) {
			continue
		}
		buf = record.AppendUnescaped(buf[:0], f.Value, f.Flags)
		if len(buf) > 0 {
			dst = append(dst, record.Label{Name: strings.Clone(names[f.Name]), Value: string(buf)})
		}
	}
	return dst
}
