package stage

// This file is what the query engine's columnar path (range_columns.go in
// package query) uses of the json stage. That path reads the values of a
// json stage's parameters from a stored block's columns instead of its
// lines, and must read them exactly as the stage reads a line: it plans
// with the stage's own JSON reader and sets the labels with the stage's
// own code. The query engine issue replaces that path; keep this surface
// to what it uses.

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// ParamValue is what a json parameter's path found in one line: its
// value (a string unescaped, "" for null, else its JSON text) and
// whether the path is there.
type ParamValue struct {
	Value string
	Found bool
}

// JSONParams is the first stage of a pipeline, a json stage with
// parameters. It is the pipeline's: the same goroutine uses both.
type JSONParams struct {
	s *jsonStage
}

// JSONParams returns the pipeline's first stage when it is a json stage
// with parameters.
func (p *Pipeline) JSONParams() (JSONParams, bool) {
	if len(p.stages) == 0 {
		return JSONParams{}, false
	}
	s, ok := p.stages[0].(*jsonStage)
	if !ok || len(s.params) == 0 {
		return JSONParams{}, false
	}
	return JSONParams{s: s}, true
}

// Tail returns the pipeline of the stages after the first. It shares
// them with p: the same goroutine uses both.
func (p *Pipeline) Tail() *Pipeline {
	if len(p.stages) == 0 {
		return &Pipeline{}
	}
	tail := p.stages[1:]
	if j, ok := p.stages[0].(*jsonStage); ok && j.deferErrs {
		// The caller reads the first stage's labels another way: its
		// deferred read has no line to read.
		tail = slices.DeleteFunc(slices.Clone(tail), func(s stage) bool {
			settle, ok := s.(jsonSettle)
			return ok && settle.s == j
		})
	}
	return &Pipeline{stages: tail}
}

// Len returns the number of parameters.
func (j JSONParams) Len() int { return len(j.s.params) }

// Name returns the label name of parameter i.
func (j JSONParams) Name(i int) string { return j.s.params[i].name }

// Observes reports whether the stage sets parameter i's label (the
// query observes it).
func (j JSONParams) Observes(i int) bool { return j.s.observed.observes(j.s.params[i].name) }

// Path returns the path of parameter i.
func (j JSONParams) Path(i int) JSONPath { return JSONPath{elems: j.s.params[i].path} }

// PathsKey returns the parameters' paths, written so that two stages
// have equal keys exactly when their paths are equal, in order.
func (j JSONParams) PathsKey() string {
	var b []byte
	for _, p := range j.s.params {
		b = binary.AppendUvarint(b, uint64(len(p.path)))
		for _, e := range p.path {
			b = binary.AppendVarint(b, int64(e.index))
			b = binary.AppendUvarint(b, uint64(len(e.key)))
			b = append(b, e.key...)
		}
	}
	return string(b)
}

// Apply sets the labels that the parameters' values give a row, as the
// stage sets them for a line in which it found those values: values[i]
// is parameter i's. The values must stay unchanged until lb's next
// Reset.
func (j JSONParams) Apply(lb *Labels, values []ParamValue) {
	j.s.buf.reset()
	j.s.apply(lb, values)
}

// JSONFields is the first stage of a pipeline, a json stage without
// parameters compiled to set only the labels a query observes
// (CompileObserving). It is the pipeline's: the same goroutine uses both.
type JSONFields struct {
	s *jsonStage
}

// JSONFields returns the pipeline's first stage when it is a json stage
// without parameters that sets only observed labels.
func (p *Pipeline) JSONFields() (JSONFields, bool) {
	if len(p.stages) == 0 {
		return JSONFields{}, false
	}
	s, ok := p.stages[0].(*jsonStage)
	if !ok || len(s.params) > 0 || s.observed == nil {
		return JSONFields{}, false
	}
	return JSONFields{s: s}, true
}

// Observes reports whether a field json names name may set a label the
// query observes: name, or name with ExtractedSuffix when name is one of
// a stream's labels.
func (j JSONFields) Observes(name []byte) bool {
	o := j.s.observed
	if o.observesBytes(name) {
		return true
	}
	for _, n := range o.names {
		if len(n) == len(name)+len(ExtractedSuffix) && n[:len(name)] == string(name) && n[len(name):] == ExtractedSuffix {
			return true
		}
	}
	return false
}

// Observed returns the labels the stage sets, sorted, the error labels
// among them.
func (j JSONFields) Observed() []string { return j.s.observed.Names() }

// Apply sets the labels that fields named names[i] with values values[i]
// (Found false: a value that sets none, null or an array) give a row, in
// that order, as the stage sets them walking a line with those fields.
// The values must stay unchanged until lb's next Reset.
func (j JSONFields) Apply(lb *Labels, names []string, values []ParamValue) {
	j.s.buf.reset()
	for i, n := range names {
		if values[i].Found {
			setParsed(lb, &j.s.buf, j.s.observed, n, values[i].Value)
		}
	}
}

// JSONPath is the path of a json parameter.
type JSONPath struct {
	elems []jsonPathElem
}

// JSONScanner reads JSON as the json stage reads a line: the columnar
// path plans a template with it (where a template's skeleton holds each
// parameter) and checks a column's values. Offsets are into the input; a
// method that fails returns -1 and records the first error (Failed). A
// string it returns views the input or its buffer, valid until the next
// Reset, Unquote or Valid. The zero JSONScanner is ready to use.
//
// Concurrency: one goroutine.
type JSONScanner struct {
	s jsonStage
}

// Reset starts reading data. holes are the offsets in data of a
// template's values (each a placeholder): a path that reads a key from
// one, or descends into one, fails (Locate).
func (sc *JSONScanner) Reset(data []byte, holes []int) {
	sc.s.holes = holes
	sc.s.buf.reset()
	sc.s.sc.reset(data, &sc.s.buf)
}

// Space returns the offset of the first byte at or after i that is not
// JSON white space.
func (sc *JSONScanner) Space(i int) int { return sc.s.sc.space(i) }

// Locate returns the offset of the value at path from the value at i, or
// -1 when it is not there or on an error.
func (sc *JSONScanner) Locate(i int, path JSONPath) int { return sc.s.locate(i, path.elems) }

// Failed reports whether reading met an error since Reset.
func (sc *JSONScanner) Failed() bool { return sc.s.sc.errMsg != "" }

// Skip reads the value at i, validating it, and returns the offset after
// it, or -1.
func (sc *JSONScanner) Skip(i int) int { return sc.s.sc.skip(i, 0) }

// ValueAt returns the value at i (a valid one) as a parameter gives it: a
// string unescaped, "" for null, the JSON text of anything else; false
// when it cannot be read.
func (sc *JSONScanner) ValueAt(i int) (string, bool) { return sc.s.valueAt(i) }

// UnquoteAppend appends to dst the value of the JSON string whose text,
// between its quotes, is text (a string the stage reads ends at its first
// unescaped quote, if text has one), and reports whether that string is
// well-formed. It reads text as str does, without copying it first.
func (sc *JSONScanner) UnquoteAppend(dst, text []byte) ([]byte, bool) {
	j := bytes.IndexByte(text, '\\')
	if j < 0 {
		j = len(text)
	}
	if q := bytes.IndexByte(text[:j], '"'); q >= 0 {
		return append(dst, text[:q]...), true
	}
	// The stage's arena borrows dst for the call.
	buf := &sc.s.buf
	own := buf.b
	buf.b = dst
	sc.s.sc.reset(text, buf)
	sc.s.sc.content = true
	_, end := sc.s.sc.unescape(0, j)
	dst, buf.b = buf.b, own
	return dst, end >= 0
}

// Fields walks the object at i as json without parameters walks a line,
// telling field of each field it would set a label for (not those whose
// value is null, an array or an object: an object's own fields are told)
// with its name, valid only during the call, and its value's offsets. It
// returns the offset after the object, or -1 when reading fails: a
// syntax error, or a key in one of the holes given to Reset.
func (sc *JSONScanner) Fields(i int, field func(name []byte, start, end int)) int {
	s := &sc.s
	s.field, s.observed, s.name, s.done = field, nil, s.name[:0], false
	defer func() { s.field = nil }()
	return s.object(i, 0, 0, nil)
}

// Valid reports whether v is one JSON value, and nothing else.
func (sc *JSONScanner) Valid(v []byte) bool {
	sc.s.sc.reset(v, &sc.s.buf)
	return len(v) > 0 && sc.s.sc.skip(0, 0) == len(v)
}
