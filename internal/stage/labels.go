package stage

import (
	"slices"
	"strings"

	"github.com/sluicelog/sluice/internal/record"
)

// Labels that carry pipeline errors, as Loki names them.
const (
	ErrorLabel        = "__error__"
	ErrorDetailsLabel = "__error_details__"
)

// Error values of ErrorLabel that the stages set, as Loki's.
const (
	errJSON      = "JSONParserErr"
	errLogfmt    = "LogfmtParserErr"
	errRegexp    = "RegexpParserErr"
	errPattern   = "PatternParserErr"
	errLabelFilt = "LabelFilterErr"
	errTemplate  = "TemplateFormatErr"
)

// Labels holds a row's labels while it passes through a pipeline: its
// stream's labels, its structured metadata, then what parsers extract
// and formatters set. Values may view buffers that live only as long as
// the row (the line, a stage's arena): Copy and Categories copy what they
// return. The zero Labels is ready to use; Reset starts each row.
//
// Concurrency: one goroutine.
type Labels struct {
	stream record.Labels // sorted
	cur    []record.Label
	// meta names the labels of cur that are the row's structured
	// metadata (as named in cur): a parser or formatter that sets one
	// makes it a parsed label, as in Loki.
	meta []string
	buf  []byte // values of the row's metadata that needed decoding
}

// Reset starts a row of a stream, whose labels are sorted.
func (b *Labels) Reset(stream record.Labels) {
	b.stream = stream
	b.cur = append(b.cur[:0], stream...)
	b.meta = b.meta[:0]
	b.buf = b.buf[:0]
}

// SetMeta adds one of the row's structured metadata, as Loki does: a
// name that is one of the stream's labels gets the suffix "_extracted";
// an empty value is no label. value is the field's stored text with its
// flags (record.Escaped...): an escaped one is decoded into the
// builder's buffer. Name and value must stay unchanged until the next
// Reset.
func (b *Labels) SetMeta(name string, value []byte, flags record.Flags) {
	if flags != 0 {
		// Decoded into buf: a later append may move buf, but what the
		// earlier values view stays as it is.
		start := len(b.buf)
		b.buf = record.AppendUnescaped(b.buf, value, flags)
		value = b.buf[start:]
	}
	b.setMeta(name, bytesView(value))
}

func (b *Labels) setMeta(name, value string) {
	if value == "" {
		return
	}
	if b.IsStream(name) {
		name += ExtractedSuffix
	}
	b.set(name, value)
	b.meta = append(b.meta, name)
}

// IsMeta reports whether a current label is structured metadata.
func (b *Labels) IsMeta(name string) bool {
	for _, m := range b.meta {
		if m == name {
			return true
		}
	}
	return false
}

// unmeta makes name, which a stage sets or removes, no longer metadata.
func (b *Labels) unmeta(name string) {
	if len(b.meta) > 0 {
		b.meta = slices.DeleteFunc(b.meta, func(m string) bool { return m == name })
	}
}

// Categories splits the current labels as Loki's categorize-labels
// encoding does: the stream's own (unchanged) labels, the structured
// metadata, and the rest (parsed, formatted, errors). Each is sorted and
// owns its strings.
func (b *Labels) Categories() (stream, meta, parsed record.Labels) {
	b.sort()
	for _, l := range b.cur {
		l = record.Label{Name: strings.Clone(l.Name), Value: strings.Clone(l.Value)}
		switch v, ok := b.stream.Get(l.Name); {
		case b.IsMeta(l.Name):
			meta = append(meta, l)
		case ok && v == l.Value:
			stream = append(stream, l)
		default:
			parsed = append(parsed, l)
		}
	}
	return stream, meta, parsed
}

// IsStream reports whether name is one of the stream's labels.
func (b *Labels) IsStream(name string) bool {
	_, ok := b.stream.Get(name)
	return ok
}

// Get returns a label's value, "" when absent (as Loki's filters see an
// absent label).
func (b *Labels) Get(name string) string {
	v, _ := b.lookup(name)
	return v
}

// Lookup returns a label's value and whether it is set.
func (b *Labels) Lookup(name string) (string, bool) { return b.lookup(name) }

// lookup returns a label's value and whether it is set.
func (b *Labels) lookup(name string) (string, bool) {
	if i := b.index(name); i >= 0 {
		return b.cur[i].Value, true
	}
	return "", false
}

// index returns where label name is in cur, or -1. Names of a row's
// labels are short and often of one length (path, size, kind): the first
// byte tells most apart without a call to compare the rest.
func (b *Labels) index(name string) int {
	if name == "" {
		for i := range b.cur {
			if b.cur[i].Name == "" {
				return i
			}
		}
		return -1
	}
	c := name[0]
	for i := range b.cur {
		n := b.cur[i].Name
		if len(n) == len(name) && n[0] == c && n == name {
			return i
		}
	}
	return -1
}

// set sets a label, replacing its value if it is set.
func (b *Labels) set(name, value string) {
	b.unmeta(name)
	if i := b.index(name); i >= 0 {
		b.cur[i].Value = value
		return
	}
	b.cur = append(b.cur, record.Label{Name: name, Value: value})
}

// setExtracted sets a label a parser extracted: a name that is one of
// the stream's labels or structured metadata gets the suffix
// "_extracted", as in Loki.
func (b *Labels) setExtracted(name, value string) {
	if b.IsStream(name) || b.IsMeta(name) {
		name += ExtractedSuffix
	}
	b.set(name, value)
}

// Del removes a label. A name is set once at most (set replaces).
func (b *Labels) Del(name string) {
	b.Take(name)
}

// Take removes a label and returns its value ("" when absent).
func (b *Labels) Take(name string) string {
	i := b.index(name)
	if i < 0 {
		return ""
	}
	v := b.cur[i].Value
	b.unmeta(name)
	b.cur = slices.Delete(b.cur, i, i+1)
	return v
}

// DeleteFunc removes the labels for which del returns true.
func (b *Labels) DeleteFunc(del func(l record.Label) bool) {
	out := b.cur[:0]
	for _, l := range b.cur {
		if del(l) {
			b.unmeta(l.Name)
			continue
		}
		out = append(out, l)
	}
	clear(b.cur[len(out):])
	b.cur = out
}

// setError records a pipeline error, keeping the first one (as Loki's
// label filters do).
func (b *Labels) setError(kind, details string) {
	if _, ok := b.lookup(ErrorLabel); ok {
		return
	}
	b.set(ErrorLabel, kind)
	if details != "" {
		b.set(ErrorDetailsLabel, details)
	}
}

// ReplaceError records a pipeline error as Loki's parsers, templates and
// unwrap do (LabelsBuilder.SetErr): it replaces an error an earlier stage
// recorded, details included when there are new ones. Label filters
// instead keep an earlier error (setError), as Loki's do.
func (b *Labels) ReplaceError(kind, details string) {
	b.set(ErrorLabel, kind)
	if details != "" {
		b.set(ErrorDetailsLabel, details)
	} else {
		b.Del(ErrorDetailsLabel) // not the details of the error replaced
	}
}

// HasError reports whether a pipeline error is recorded.
func (b *Labels) HasError() bool {
	_, ok := b.lookup(ErrorLabel)
	return ok
}

// changed reports whether the labels differ from the stream's.
func (b *Labels) changed() bool {
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

// AppendKey appends an encoding of the current labels, sorted, that
// identifies the set: the key of a result series.
func (b *Labels) AppendKey(dst []byte) []byte {
	b.sort()
	return AppendLabelsKey(dst, b.cur)
}

// AppendLabelsKey appends the key of a sorted label set, as AppendKey
// encodes it: each name and value followed by 0xff, a byte no UTF-8 text
// holds.
func AppendLabelsKey(dst []byte, ls record.Labels) []byte {
	for _, l := range ls {
		dst = append(dst, l.Name...)
		dst = append(dst, 0xff)
		dst = append(dst, l.Value...)
		dst = append(dst, 0xff)
	}
	return dst
}

func (b *Labels) sort() {
	if !b.changed() {
		return
	}
	slices.SortFunc(b.cur, func(x, y record.Label) int { return strings.Compare(x.Name, y.Name) })
}

// Current returns the current labels, in no particular order, as a view
// of the builder: valid until its next change, and not to be modified.
func (b *Labels) Current() []record.Label { return b.cur }

// Restore sets the current labels to ls: what Current returned for the
// same row, after the same Reset and metadata, once one pipeline's parser
// ran. Another pipeline that starts with the same parser (only line
// filters before it) takes it instead of parsing the row again: the rules
// stage parses a line once however many rules parse it. The values must
// still be valid (a parser's values view its stage's buffer until its
// next row).
func (b *Labels) Restore(ls []record.Label) { b.cur = append(b.cur[:0], ls...) }

// Copy returns a sorted copy of the current labels that owns its
// strings.
func (b *Labels) Copy() record.Labels {
	b.sort()
	out := make(record.Labels, len(b.cur))
	for i, l := range b.cur {
		out[i] = record.Label{Name: strings.Clone(l.Name), Value: strings.Clone(l.Value)}
	}
	return out
}
