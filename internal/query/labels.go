package query

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/sluicelog/sluice/internal/record"
	"github.com/sluicelog/sluice/internal/store/rows"
)

// Labels that carry pipeline errors, as Loki names them.
const (
	errorLabel        = "__error__"
	errorDetailsLabel = "__error_details__"
)

// Error values of errorLabel, as Loki's.
const (
	errJSON       = "JSONParserErr"
	errLogfmt     = "LogfmtParserErr"
	errRegexp     = "RegexpParserErr"
	errPattern    = "PatternParserErr"
	errLabelFilt  = "LabelFilterErr"
	errTemplate   = "TemplateFormatErr"
	errSampleConv = "SampleExtractionErr"
)

// labelsBuilder holds a row's labels while it passes through a pipeline:
// its stream's labels, then what parsers extract and formatters set.
// Values may view buffers that live only as long as the row: Labels
// copies what it returns.
//
// Concurrency: one goroutine.
type labelsBuilder struct {
	stream record.Labels // sorted
	cur    []record.Label
	// meta names the labels of cur that are the row's structured
	// metadata (as named in cur): a parser or formatter that sets one
	// makes it a parsed label, as in Loki.
	meta []string
	buf  []byte // values of the row's metadata that needed decoding
}

func newLabelsBuilder() *labelsBuilder { return &labelsBuilder{} }

// reset starts a row of a stream.
func (b *labelsBuilder) reset(stream record.Labels) {
	b.stream = stream
	b.cur = append(b.cur[:0], stream...)
	b.meta = b.meta[:0]
}

// setMeta adds one of the row's structured metadata, as Loki does: a
// name that is one of the stream's labels gets the suffix "_extracted";
// an empty value is no label.
func (b *labelsBuilder) setMeta(name, value string) {
	if value == "" {
		return
	}
	if b.isStream(name) {
		name += "_extracted"
	}
	b.set(name, value)
	b.meta = append(b.meta, name)
}

// isMeta reports whether a current label is structured metadata.
func (b *labelsBuilder) isMeta(name string) bool {
	for _, m := range b.meta {
		if m == name {
			return true
		}
	}
	return false
}

// unmeta makes name, which a stage sets or removes, no longer metadata.
func (b *labelsBuilder) unmeta(name string) {
	if len(b.meta) > 0 {
		b.meta = slices.DeleteFunc(b.meta, func(m string) bool { return m == name })
	}
}

// categories splits the current labels as Loki's categorize-labels
// encoding does: the stream's own (unchanged) labels, the structured
// metadata, and the rest (parsed, formatted, errors). Each is sorted and
// owns its strings.
func (b *labelsBuilder) categories() (stream, meta, parsed record.Labels) {
	b.sort()
	for _, l := range b.cur {
		l = record.Label{Name: strings.Clone(l.Name), Value: strings.Clone(l.Value)}
		switch v, ok := b.stream.Get(l.Name); {
		case b.isMeta(l.Name):
			meta = append(meta, l)
		case ok && v == l.Value:
			stream = append(stream, l)
		default:
			parsed = append(parsed, l)
		}
	}
	return stream, meta, parsed
}

// isStream reports whether name is one of the stream's labels.
func (b *labelsBuilder) isStream(name string) bool {
	_, ok := b.stream.Get(name)
	return ok
}

// get returns a label's value, "" when absent (as Loki's filters see an
// absent label).
func (b *labelsBuilder) get(name string) string {
	v, _ := b.lookup(name)
	return v
}

// lookup returns a label's value and whether it is set.
func (b *labelsBuilder) lookup(name string) (string, bool) {
	for _, l := range b.cur {
		if l.Name == name {
			return l.Value, true
		}
	}
	return "", false
}

// set sets a label, replacing its value if it is set.
func (b *labelsBuilder) set(name, value string) {
	b.unmeta(name)
	for i := range b.cur {
		if b.cur[i].Name == name {
			b.cur[i].Value = value
			return
		}
	}
	b.cur = append(b.cur, record.Label{Name: name, Value: value})
}

// setExtracted sets a label a parser extracted: a name that is one of
// the stream's labels or structured metadata gets the suffix
// "_extracted", as in Loki.
func (b *labelsBuilder) setExtracted(name, value string) {
	if b.isStream(name) || b.isMeta(name) {
		name += "_extracted"
	}
	b.set(name, value)
}

// del removes a label.
func (b *labelsBuilder) del(name string) {
	b.unmeta(name)
	b.cur = slices.DeleteFunc(b.cur, func(l record.Label) bool { return l.Name == name })
}

// setError records a pipeline error, keeping the first one.
func (b *labelsBuilder) setError(kind, details string) {
	if _, ok := b.lookup(errorLabel); ok {
		return
	}
	b.set(errorLabel, kind)
	if details != "" {
		b.set(errorDetailsLabel, details)
	}
}

// hasError reports whether a pipeline error is recorded.
func (b *labelsBuilder) hasError() bool {
	_, ok := b.lookup(errorLabel)
	return ok
}

// changed reports whether the labels differ from the stream's.
func (b *labelsBuilder) changed() bool {
	if len(b.cur) != len(b.stream) {
		return true
	}
	for i := range b.cur {
		if b.cur[i] != b.stream[i] {
			return true
		}
	}
	return false
}

// appendKey appends an encoding of the current labels, sorted, that
// identifies the set: the key of a result series.
func (b *labelsBuilder) appendKey(dst []byte) []byte {
	b.sort()
	for _, l := range b.cur {
		dst = append(dst, l.Name...)
		dst = append(dst, 0xff)
		dst = append(dst, l.Value...)
		dst = append(dst, 0xff)
	}
	return dst
}

func (b *labelsBuilder) sort() {
	if !b.changed() {
		return
	}
	slices.SortFunc(b.cur, func(x, y record.Label) int { return strings.Compare(x.Name, y.Name) })
}

// labels returns a sorted copy of the current labels that owns its
// strings.
func (b *labelsBuilder) labels() record.Labels {
	b.sort()
	out := make(record.Labels, len(b.cur))
	for i, l := range b.cur {
		out[i] = record.Label{Name: strings.Clone(l.Name), Value: strings.Clone(l.Value)}
	}
	return out
}

// rowMeta adds the structured metadata of row r, whose field names
// index names (see hasMeta).
func (b *labelsBuilder) rowMeta(r *rows.Row, names []string) {
	if !hasMeta(r) {
		return
	}
	b.buf = b.buf[:0]
	for i := range r.Fields {
		f := &r.Fields[i]
		v := f.Value
		if f.Flags != 0 {
			// Decoded into buf: a later append may move buf, but what the
			// earlier values view stays as it is.
			start := len(b.buf)
			b.buf = record.AppendUnescaped(b.buf, v, f.Flags)
			v = b.buf[start:]
		}
		b.setMeta(names[f.Name], unsafe.String(unsafe.SliceData(v), len(v)))
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
