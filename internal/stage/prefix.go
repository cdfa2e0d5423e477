package stage

import (
	"slices"
	"strings"
)

// A pipeline that makes the line of one label's value and parses it as
// JSON (`| line_format "{{.log}}" | json ...`: the JSON an application
// logged, inside the JSON line of a container runtime) can often decide
// a row from the start of that value. The json stage reads a line from
// its start, so a row that the label filters right after it drop, on
// labels and errors read before the end of a prefix of the value, is
// dropped as well with the whole value. The columnar path unescapes
// only a prefix of a long value first, and the whole value only for the
// rows such a prefix does not decide.

// PrefixRead is such a pipeline, read with a prefix of the value.
type PrefixRead struct {
	p       *Pipeline
	j       *jsonStage
	label   string
	filters int // the stages after the json stage that are label filters
}

// PrefixRead returns p's PrefixRead when p's first stage is line_format
// of one label alone and its second is json.
func (p *Pipeline) PrefixRead() (PrefixRead, bool) {
	if len(p.stages) < 3 {
		return PrefixRead{}, false
	}
	lf, ok := p.stages[0].(*lineFormatStage)
	if !ok || !lf.plainOK {
		return PrefixRead{}, false
	}
	label, ok := lf.plain.oneLabel()
	if !ok {
		return PrefixRead{}, false
	}
	j, ok := p.stages[1].(*jsonStage)
	if !ok {
		return PrefixRead{}, false
	}
	r := PrefixRead{p: p, j: j, label: label}
	for _, s := range p.stages[2:] {
		f, ok := s.(*labelFilterStage)
		if !ok || !f.readsOK || slices.Contains(f.reads, r.label) {
			break // a filter of the label itself would read the prefix
		}
		r.filters++
	}
	return r, r.filters > 0
}

// Label is the label whose value the line is.
func (r PrefixRead) Label() string { return r.label }

// Process runs a row at time ts whose labels are in lb through the
// pipeline, as Pipeline.Process does, the label's value being a prefix
// of the row's; it reports whether the row was dropped for sure: by a
// label filter right after the json stage, with labels and errors that
// the whole value would give it too. The row's labels are then spent.
// kept reports that it is kept for sure instead: the stages read are
// the whole pipeline, they all keep it, and the json stage gave it no
// error and labels that the whole value would give too; lb holds its
// labels then, but the label's, whose value is the prefix (and the
// line, the prefix too). Otherwise the caller runs it again with the
// whole value.
func (r PrefixRead) Process(ts int64, lb *Labels) (dropped, kept bool) {
	var line []byte
	for i, s := range r.p.stages[:2+r.filters] {
		var ok bool
		if line, ok = s.process(ts, line, lb); !ok {
			return i >= 2 && r.j.decidedWithin(len(line)), false
		}
	}
	// An error's details may name a character the cut split: a row kept
	// with one is read whole (its query fails on it anyway).
	return false, 2+r.filters == len(r.p.stages) && r.j.sc.errMsg == "" && r.j.decidedWithin(len(line))
}

// Needle returns a label and a text such that a row whose value of the
// prefix label (the escaped text of a JSON string, as stored) holds
// neither text nor `\u` is dropped by the label filters after the json
// stage, unless the label is set before the line_format stage (a stream
// label, or a label an earlier stage set: the caller's to rule out). The
// filters keep only rows where the label equals text, and the json stage
// can only have set it from a JSON value holding text, which the stored
// text holds as it is unless an escape made some of its bytes: text has
// none that an escape other than \u makes (a quote, a backslash, a
// slash, a control byte), and \u, escaped in the value or in the JSON
// inside it, shows as `\u` in the stored text. ok is false when the
// filters require no such equality (of a label other than the error
// labels, which the json stage sets itself).
func (r PrefixRead) Needle() (label, text string, ok bool) {
	for _, s := range r.p.stages[2 : 2+r.filters] {
		f := s.(*labelFilterStage)
		n, v := f.needLabel, f.needValue
		if n == "" || n == ErrorLabel || n == ErrorDetailsLabel || strings.ContainsFunc(v, escapeMade) {
			continue
		}
		if len(v) > len(text) {
			label, text, ok = n, v, true
		}
	}
	return label, text, ok
}

// LineNeedle returns, for a pipeline whose first stage makes the line of
// one label's value alone (`| line_format "{{.log}}"`) and whose second
// keeps the lines that hold a literal (`|= "declined"`), the label and
// the literal, when no JSON escape but \u can make a byte of it: a row
// whose value of the label is a JSON string whose text holds neither the
// literal nor `\u` is dropped, unread. alone says the two are the whole
// pipeline: then a row whose value holds the literal where no escape
// begins it is kept whatever the rest of the value.
func (p *Pipeline) LineNeedle() (label, text string, alone, ok bool) {
	if len(p.stages) < 2 {
		return "", "", false, false
	}
	lf, ok := p.stages[0].(*lineFormatStage)
	if !ok || !lf.plainOK {
		return "", "", false, false
	}
	label, ok = lf.plain.oneLabel()
	if !ok {
		return "", "", false, false
	}
	f, ok := p.stages[1].(*lineFilter)
	if !ok || f.needle == "" || strings.ContainsFunc(f.needle, escapeMade) {
		return "", "", false, false
	}
	return label, f.needle, len(p.stages) == 2, true
}

// escapeMade reports whether a JSON escape other than \u makes c.
func escapeMade(c rune) bool { return c == '"' || c == '\\' || c == '/' || c < 0x20 }
