package query

import (
	"strings"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/rows"
	"github.com/sluicelog/sluice/internal/stage"
)

// rowMeta adds to lb the structured metadata of row r, whose field names
// index names (see hasMeta).
func rowMeta(lb *stage.Labels, r *rows.Row, names []string) {
	if !hasMeta(r) {
		return
	}
	for i := range r.Fields {
		f := &r.Fields[i]
		lb.SetMeta(names[f.Name], f.Value, f.Flags)
	}
}

// hasMeta reports whether the fields of r are structured metadata: a
// Loki push or OTLP record is its line alone, its message the whole line,
// and whatever else it carries is stored out of the line. Records of
// sluice's own formats have fields parsed from the line (or computed from
// it, as syslog's are), and a message that is part of it or is one of
// those fields: their fields are no labels, as Loki knows nothing of them.
func hasMeta(r *rows.Row) bool {
	if len(r.Fields) == 0 {
		return false
	}
	if len(r.Line) > 0 && !(r.MsgInLine && r.MsgOff == 0 && len(r.Msg) == len(r.Line)) {
		return false
	}
	for i := range r.Fields {
		if f := &r.Fields[i]; f.InLine || f.Role != record.RoleNone || f.Kind != record.String {
			return false
		}
	}
	return true
}

// StructuredMetadata appends to dst the structured metadata of a stored
// row, whose field names index names, as LogQL sees it before the
// _extracted rule: the fields of a Loki push or OTLP record (see
// hasMeta), in their stored order; nothing for the rows of sluice's own
// formats. The labels own their strings. Scan with ScanOptions.Meta (or
// without LinesOnly) for stored rows to carry their fields.
func StructuredMetadata(dst record.Labels, r *rows.Row, names []string) record.Labels {
	if !hasMeta(r) {
		return dst
	}
	var buf []byte
	for i := range r.Fields {
		f := &r.Fields[i]
		buf = record.AppendUnescaped(buf[:0], f.Value, f.Flags)
		if len(buf) > 0 {
			dst = append(dst, record.Label{Name: strings.Clone(names[f.Name]), Value: string(buf)})
		}
	}
	return dst
}
