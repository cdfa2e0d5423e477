package query

import (
	"slices"
	"strings"

	"github.com/sluicelog/sluice/internal/record"
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
}

func newLabelsBuilder() *labelsBuilder { return &labelsBuilder{} }

// reset starts a row of a stream.
func (b *labelsBuilder) reset(stream record.Labels) {
	b.stream = stream
	b.cur = append(b.cur[:0], stream...)
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
	for i := range b.cur {
		if b.cur[i].Name == name {
			b.cur[i].Value = value
			return
		}
	}
	b.cur = append(b.cur, record.Label{Name: name, Value: value})
}

// setExtracted sets a label a parser extracted: a name that is one of
// the stream's labels gets the suffix "_extracted", as in Loki.
func (b *labelsBuilder) setExtracted(name, value string) {
	if b.isStream(name) {
		name += "_extracted"
	}
	b.set(name, value)
}

// del removes a label.
func (b *labelsBuilder) del(name string) {
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
