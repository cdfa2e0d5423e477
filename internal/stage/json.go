package stage

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/logql"
)

// jsonStage is `| json`. Without parameters every field of the line's
// object becomes a label: nested objects are flattened with "_" (a.b
// becomes a_b), names are sanitized, arrays and nulls are skipped,
// strings are unescaped and numbers and booleans keep their JSON text.
// With parameters only the given paths are extracted: a string is
// unescaped, an object or array keeps its JSON text, null and a missing
// path give an empty label.
//
// A line that is not a JSON object gets __error__=JSONParserErr (and
// __error_details__) and stays in the result, as in Loki; without
// parameters the fields before the error are kept, as Loki's parser
// keeps them. Text after the object is ignored, as Loki ignores it.
//
// Processing a line allocates nothing once the stage's buffers have
// grown: values view the line unless they have escapes, names are built
// in a per-row arena.
type jsonStage struct {
	params   []jsonParam // nil: extract every field
	observed *Observed   // the labels set; nil: all
	sc       jsonScanner
	buf      rowBuf
	name     []byte // the name being built while walking nested objects
	values   []ParamValue
	// holes, when planning a template (JSONScanner), are the offsets
	// of its values in the skeleton searched: a path that reads a key
	// from one, or descends into one, fails.
	holes []int
	// field, when planning a template (JSONScanner.Fields), is told of
	// each field the walk of an object would set a label for, instead of
	// the label being set: its name and its value's offsets.
	field func(name []byte, start, end int)
	// done: every label the query observes is set (Observed.allSet),
	// and the rest of the line is only read over for its errors.
	done bool
	// deferErrs: the stages after this one, up to its jsonSettle, are
	// label filters that read neither these errors nor what they
	// change. Once done, the rest of the line is read over there, for
	// the rows those filters keep: a row they drop never shows its
	// errors. pending is where that read starts (-1: none), rest whether
	// it starts inside the line's object, after a member.
	deferErrs bool
	pending   int
	rest      bool
	// reach: with parameters, the offset after the furthest value the
	// row's labels were read from (PrefixRead).
	reach int
}

// jsonParam is one `name="path"` parameter of json.
type jsonParam struct {
	name string
	path []jsonPathElem
}

// jsonPathElem is one step of a JSON path: a field (index < 0) or an
// array index.
type jsonPathElem struct {
	key   string
	index int
}

// maxJSONDepth bounds the nesting the walker follows, so that a hostile
// line cannot make it recurse without limit.
const maxJSONDepth = 1000

func newJSONStage(j *logql.JSONParser) (stage, error) {
	s := &jsonStage{pending: -1}
	for _, p := range j.Params {
		expr := p.Expr
		if expr == "" {
			expr = p.Name
		}
		if !validLabelName(p.Name) {
			return nil, fmt.Errorf("json: invalid label name %q", p.Name)
		}
		path, err := parseJSONPath(expr)
		if err != nil {
			return nil, fmt.Errorf("json: %s: %w", p.Name, err)
		}
		s.params = append(s.params, jsonParam{name: p.Name, path: path})
	}
	return s, nil
}

func (s *jsonStage) process(_ int64, line []byte, lb *Labels) ([]byte, bool) {
	s.buf.reset()
	sc := &s.sc
	sc.reset(line, &s.buf)
	i := sc.space(0)
	if i >= len(line) || line[i] != '{' {
		sc.failChar(i, "a JSON object")
		lb.ReplaceError(errJSON, sc.details())
		return line, true
	}
	if s.params == nil {
		s.pending = -1
		s.name, s.done = s.name[:0], s.observed.allSet(lb)
		if s.object(i, 0, 0, lb) < 0 {
			lb.ReplaceError(errJSON, sc.details())
		}
		return line, true
	}
	// As Loki's, the line is read only as far as the paths need: a
	// syntax error after them goes unnoticed, and the search for a field
	// stops where it is found (most of this stage's speed).
	s.values, s.reach = s.values[:0], 0
	for _, p := range s.params {
		v, found := s.find(i, p.path)
		if sc.errMsg != "" {
			lb.ReplaceError(errJSON, sc.details())
			return line, true
		}
		if !found {
			s.reach = len(line) // a path is missing as far as the line goes
		}
		s.values = append(s.values, ParamValue{v, found})
	}
	s.apply(lb, s.values)
	return line, true
}

// jsonSettle reads the rest of a line its json stage left for later
// (Pipeline.deferJSONErrors), for a row the filters between them kept,
// and sets the errors it finds, as the stage would have set them.
type jsonSettle struct{ s *jsonStage }

func (t jsonSettle) process(_ int64, line []byte, lb *Labels) ([]byte, bool) {
	s := t.s
	if s.pending < 0 {
		return line, true
	}
	sc := &s.sc
	var end int
	if s.rest {
		end = sc.skipRest(s.pending, 0, '}')
	} else {
		end = sc.skip(s.pending, 0)
	}
	s.pending = -1
	if end < 0 {
		lb.ReplaceError(errJSON, sc.details())
	}
	return line, true
}

// apply sets the labels of the parameters' values, as process does.
func (s *jsonStage) apply(lb *Labels, values []ParamValue) {
	for k, p := range s.params {
		v, found := values[k].Value, values[k].Found
		// As Loki, a missing path gives "" unless the label is set (a
		// stream label included).
		if _, ok := lb.lookup(p.name); found || !ok {
			setParsed(lb, &s.buf, s.observed, p.name, v)
		}
	}
}

// object walks the object at i (line[i] == '{') setting a label for
// each field; the names start with s.name[:prefix]. It returns the
// offset after the object, or -1 on a syntax error.
func (s *jsonStage) object(i, prefix, depth int, lb *Labels) int {
	sc := &s.sc
	d := sc.data
	if depth >= maxJSONDepth {
		return sc.fail(i, "nested too deeply")
	}
	if s.done {
		if depth == 0 && s.deferErrs {
			s.pending, s.rest = i, false
			return i
		}
		return sc.skip(i, depth)
	}
	i = sc.space(i + 1)
	if i < len(d) && d[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return sc.failChar(i, "a string key")
		}
		var key string
		k := i
		if key, i = sc.str(i); i < 0 {
			return -1
		}
		if s.field != nil && s.holeWithin(k, i) {
			return sc.fail(k, "a key in a template's value")
		}
		if i = sc.colon(i); i < 0 {
			return -1
		}
		s.name = s.name[:prefix]
		if prefix > 0 {
			s.name = append(s.name, '_')
		}
		s.name = AppendLabelName(s.name, stringBytes(key), prefix == 0)
		switch c := d[i]; {
		case c == '{' && !s.observed.underPrefix(s.name):
			// No label the query observes is named in it: read over it
			// (as strictly: its errors are the same).
			i = sc.skip(i, depth+1)
		case c == '{':
			i = s.object(i, len(s.name), depth+1, lb)
		case c == '[':
			i = sc.skip(i, depth+1)
		case c == '"':
			start := i
			var v string
			if v, i = sc.str(i); i >= 0 {
				s.set(lb, start, i, v)
			}
		case c == 'n':
			i = sc.lit(i, "null")
		case c == 't' || c == 'f':
			start := i
			if c == 't' {
				i = sc.lit(i, "true")
			} else {
				i = sc.lit(i, "false")
			}
			if i >= 0 {
				s.set(lb, start, i, bytesView(d[start:i]))
			}
		default:
			start := i
			if i = sc.number(i); i >= 0 {
				s.set(lb, start, i, bytesView(d[start:i]))
			}
		}
		if i < 0 {
			return -1
		}
		if s.done {
			if depth == 0 && s.deferErrs {
				s.pending, s.rest = i, true
				return i
			}
			return sc.skipRest(i, depth, '}')
		}
		var more bool
		if i, more = sc.next(i, '}'); !more {
			return i
		}
	}
}

// set sets the label of the field named s.name whose value, v, is
// line[start:end]; or, planning a template, tells s.field of it.
func (s *jsonStage) set(lb *Labels, start, end int, v string) {
	if s.field != nil {
		s.field(s.name, start, end)
		return
	}
	if setParsedName(lb, &s.buf, s.observed, s.name, v) {
		s.done = s.observed.allSet(lb)
	}
}

// find returns the value at path from the (valid) value at i, and
// whether the path is there.
func (s *jsonStage) find(i int, path []jsonPathElem) (string, bool) {
	i = s.locate(i, path)
	if i < 0 {
		return "", false
	}
	return s.valueAt(i)
}

// locate returns the offset of the value at path from the value at i,
// or -1.
func (s *jsonStage) locate(i int, path []jsonPathElem) int {
	sc := &s.sc
	d := sc.data
	for _, e := range path {
		if s.holes != nil && s.isHole(i) {
			sc.fail(i, "a path into a template's value")
			return -1
		}
		if e.index < 0 {
			if d[i] != '{' {
				return -1
			}
			i = s.member(i, e.key)
		} else {
			if d[i] != '[' {
				return -1
			}
			i = s.element(i, e.index)
		}
		if i < 0 {
			return -1
		}
	}
	return i
}

// isHole reports whether a value at i is a template's value (planning).
func (s *jsonStage) isHole(i int) bool {
	for _, h := range s.holes {
		if h == i {
			return true
		}
	}
	return false
}

// holeWithin reports whether a template's value lies in [start, end).
func (s *jsonStage) holeWithin(start, end int) bool {
	for _, h := range s.holes {
		if h >= start && h < end {
			return true
		}
	}
	return false
}

// valueAt returns the value at i as find gives it: a string unescaped,
// "" for null, the text of anything else.
func (s *jsonStage) valueAt(i int) (string, bool) {
	sc := &s.sc
	d := sc.data
	switch d[i] {
	case '"':
		v, end := sc.str(i)
		s.reach = max(s.reach, end)
		return v, true
	case 'n':
		s.reach = max(s.reach, i+1)
		return "", true
	}
	end := sc.skip(i, 0)
	if end < 0 {
		return "", false
	}
	s.reach = max(s.reach, end)
	return bytesView(d[i:end]), true
}

// decidedWithin reports whether the labels and errors process gave the
// line it read last are those it gives any line of which that one is the
// first n bytes: every value read, and the error met, was delimited
// before n.
func (s *jsonStage) decidedWithin(n int) bool {
	sc := &s.sc
	switch {
	case sc.errMsg != "":
		return sc.errChar && sc.errOff < n
	case s.params != nil:
		return s.reach < n
	default:
		// The object ended, or every observed label was set by the
		// value before pending.
		return s.pending < n
	}
}

// member returns the offset of the value of field key in the object at
// i, or -1.
func (s *jsonStage) member(i int, key string) int {
	sc := &s.sc
	d := sc.data
	i = sc.space(i + 1)
	if i >= len(d) || d[i] == '}' {
		return -1
	}
	for i >= 0 {
		var k string
		start := i
		if k, i = sc.str(i); i < 0 {
			return -1
		}
		if s.holes != nil && s.holeWithin(start, i) {
			return sc.fail(start, "a key from a template's value")
		}
		if i = sc.colon(i); i < 0 {
			return -1
		}
		if k == key {
			return i
		}
		if i = sc.skip(i, 0); i < 0 {
			return -1
		}
		var more bool
		if i, more = sc.next(i, '}'); !more {
			return -1
		}
	}
	return -1
}

// element returns the offset of element n of the array at i, or -1.
func (s *jsonStage) element(i, n int) int {
	sc := &s.sc
	d := sc.data
	i = sc.space(i + 1)
	if i >= len(d) || d[i] == ']' {
		return -1
	}
	for k := 0; i >= 0; k++ {
		if k == n {
			return i
		}
		if i = sc.skip(i, 0); i < 0 {
			return -1
		}
		var more bool
		if i, more = sc.next(i, ']'); !more {
			return -1
		}
	}
	return -1
}

// parseJSONPath parses a json parameter's expression: fields joined by
// "." or written ["field"], and array indexes [0], as in
// `request.headers["User-Agent"]` or `items[0].id`.
func parseJSONPath(expr string) ([]jsonPathElem, error) {
	var path []jsonPathElem
	i := 0
	for i < len(expr) {
		switch {
		case expr[i] == '[':
			j := strings.IndexByte(expr[i:], ']')
			if expr[i+1:] != "" && (expr[i+1] == '"' || expr[i+1] == '`') {
				j = closingQuote(expr, i+1)
				if j < 0 || j+1 >= len(expr) || expr[j+1] != ']' {
					return nil, fmt.Errorf("invalid path %q: unterminated field at offset %d", expr, i)
				}
				key, err := strconv.Unquote(expr[i+1 : j+1])
				if err != nil {
					return nil, fmt.Errorf("invalid path %q: %w", expr, err)
				}
				path = append(path, jsonPathElem{key: key, index: -1})
				i = j + 2
				continue
			}
			if j < 0 {
				return nil, fmt.Errorf("invalid path %q: missing ']'", expr)
			}
			n, err := strconv.Atoi(expr[i+1 : i+j])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("invalid path %q: bad index %q", expr, expr[i+1:i+j])
			}
			path = append(path, jsonPathElem{index: n})
			i += j + 1
		case expr[i] == '.' && len(path) > 0:
			i++
			fallthrough
		default:
			j := i
			for j < len(expr) && expr[j] != '.' && expr[j] != '[' && expr[j] != ']' && expr[j] != ' ' {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("invalid path %q: empty field at offset %d", expr, i)
			}
			path = append(path, jsonPathElem{key: expr[i:j], index: -1})
			i = j
		}
	}
	if len(path) == 0 {
		return nil, fmt.Errorf("empty path")
	}
	return path, nil
}

// closingQuote returns the index of the quote closing the string that
// starts at i (a '"' with Go escapes or a '`'), or -1.
func closingQuote(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q == '"':
			j++
		case s[j] == q:
			return j
		}
	}
	return -1
}

// jsonScanner reads JSON from a line: it validates what it passes and
// unescapes strings into a row arena. Offsets are into data; a method
// that fails records the first error and returns -1.
type jsonScanner struct {
	data   []byte
	buf    *rowBuf
	errOff int
	errMsg string // what was expected, when errChar
	// errChar: the error is an unexpected character, errRune, where
	// errMsg was expected. Its message is written only when asked for
	// (details): a line that is not JSON (k8s' text logs under | json)
	// must not cost a Sprintf.
	errChar bool
	errRune rune
	// content: data is a string's text without its quotes
	// (JSONScanner.UnquoteAppend), so its end ends the string.
	content bool
}

func (sc *jsonScanner) reset(data []byte, buf *rowBuf) {
	*sc = jsonScanner{data: data, buf: buf}
}

func (sc *jsonScanner) fail(i int, msg string) int {
	if sc.errMsg == "" {
		sc.errOff, sc.errMsg = i, msg
	}
	return -1
}

// failChar records an unexpected character (or end of input) at i where
// want was expected.
func (sc *jsonScanner) failChar(i int, want string) int {
	if i >= len(sc.data) {
		return sc.fail(i, "unexpected end of input, expected "+want)
	}
	if sc.errMsg == "" {
		r, _ := utf8.DecodeRune(sc.data[i:])
		sc.errChar, sc.errRune = true, r
	}
	return sc.fail(i, want)
}

// details formats the recorded error for __error_details__, in the row
// arena.
func (sc *jsonScanner) details() string {
	buf := sc.buf
	start := len(buf.b)
	buf.b = append(buf.b, "syntax error at offset "...)
	buf.b = strconv.AppendInt(buf.b, int64(sc.errOff), 10)
	buf.b = append(buf.b, ": "...)
	if sc.errChar {
		buf.b = append(buf.b, "unexpected "...)
		buf.b = strconv.AppendQuoteRune(buf.b, sc.errRune)
		buf.b = append(buf.b, ", expected "...)
	}
	buf.b = append(buf.b, sc.errMsg...)
	return buf.view(start)
}

func (sc *jsonScanner) space(i int) int {
	d := sc.data
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// colon reads the ':' after a key and the space around it, returning the
// offset of the value.
func (sc *jsonScanner) colon(i int) int {
	i = sc.space(i)
	if i >= len(sc.data) || sc.data[i] != ':' {
		return sc.failChar(i, "':'")
	}
	i = sc.space(i + 1)
	if i >= len(sc.data) {
		return sc.failChar(i, "a value")
	}
	return i
}

// next reads what follows a member or element: ',' (more is true and i
// is the next member or element, after space) or the closing byte (more
// is false and i is past it).
func (sc *jsonScanner) next(i int, closing byte) (int, bool) {
	d := sc.data
	i = sc.space(i)
	if i < len(d) {
		switch d[i] {
		case ',':
			i = sc.space(i + 1)
			if i >= len(d) {
				return sc.failChar(i, "a value"), false
			}
			return i, true
		case closing:
			return i + 1, false
		}
	}
	return sc.failChar(i, "',' or '"+string(closing)+"'"), false
}

// str reads the string at i (data[i] == '"') and returns its value, a
// view of the line when it has no escapes, else unescaped into the row
// arena, and the offset after it.
func (sc *jsonScanner) str(i int) (string, int) {
	d := sc.data
	if i >= len(d) || d[i] != '"' {
		return "", sc.failChar(i, "a string")
	}
	q := bytes.IndexByte(d[i+1:], '"')
	if q < 0 {
		return "", sc.fail(i, "unterminated string")
	}
	seg := d[i+1 : i+1+q]
	e := bytes.IndexByte(seg, '\\')
	if e < 0 {
		return bytesView(seg), i + q + 2
	}
	return sc.unescape(i+1, i+1+e)
}

// unescape unescapes the string whose text starts at start and has its
// first backslash at j. Its text unescaped is never longer than it is
// escaped (\uXXXX is at most three bytes, a surrogate pair of twelve
// four), so the arena grows once, to what is left of the data, and the
// loop writes by index, without a check of capacity per byte: escaped
// JSON inside a field (k8s' log) has an escape every few bytes.
func (sc *jsonScanner) unescape(start, j int) (string, int) {
	d := sc.data
	buf := sc.buf
	b0 := len(buf.b)
	out := slices.Grow(buf.b, len(d)-start)
	n := b0 + copy(out[b0:b0+j-start], d[start:j])
	out = out[:cap(out)]
	for j < len(d) {
		c := d[j]
		if c == '"' {
			buf.b = out[:n]
			return buf.view(b0), j + 1
		}
		if c != '\\' {
			out[n] = c
			n++
			j++
			continue
		}
		if j+1 >= len(d) {
			buf.b = out[:b0]
			return "", sc.fail(j, "unterminated string")
		}
		switch e := d[j+1]; e {
		case '"', '\\', '/':
			out[n] = e
		case 'b':
			out[n] = '\b'
		case 'f':
			out[n] = '\f'
		case 'n':
			out[n] = '\n'
		case 'r':
			out[n] = '\r'
		case 't':
			out[n] = '\t'
		case 'u':
			r, ok := hex4(d, j+2)
			if !ok {
				buf.b = out[:b0]
				return "", sc.fail(j, "invalid \\u escape")
			}
			j += 6
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if r < 0xdc00 && j+1 < len(d) && d[j] == '\\' && d[j+1] == 'u' {
					r2, ok = hex4(d, j+2)
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r = dec
					j += 6
				} else {
					r = utf8.RuneError
				}
			}
			n += utf8.EncodeRune(out[n:], r)
			continue
		default:
			buf.b = out[:b0]
			return "", sc.fail(j, fmt.Sprintf("invalid escape %q", "\\"+string(rune(e))))
		}
		n++
		j += 2
	}
	if sc.content {
		buf.b = out[:n]
		return buf.view(b0), j
	}
	buf.b = out[:b0]
	return "", sc.fail(start-1, "unterminated string")
}

// hex4 reads the four hex digits at d[i:].
func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// lit reads the literal word (true, false, null) at i.
func (sc *jsonScanner) lit(i int, word string) int {
	if d := sc.data[i:]; len(d) < len(word) || string(d[:len(word)]) != word {
		return sc.failChar(i, word)
	}
	return i + len(word)
}

// number reads the JSON number at i.
func (sc *jsonScanner) number(i int) int {
	d := sc.data
	start := i
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		i = digits(d, i)
	default:
		return sc.failChar(i, "a value")
	}
	if i < len(d) && d[i] == '.' {
		j := digits(d, i+1)
		if j == i+1 {
			return sc.fail(start, "invalid number")
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := digits(d, i)
		if j == i {
			return sc.fail(start, "invalid number")
		}
		i = j
	}
	return i
}

func digits(d []byte, i int) int {
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	return i
}

// skip reads the value at i, validating it, and returns the offset after
// it.
func (sc *jsonScanner) skip(i, depth int) int {
	d := sc.data
	if i >= len(d) {
		return sc.failChar(i, "a value")
	}
	switch d[i] {
	case '"':
		return sc.skipStr(i)
	case '{', '[':
		if depth >= maxJSONDepth {
			return sc.fail(i, "nested too deeply")
		}
		closing := byte('}')
		if d[i] == '[' {
			closing = ']'
		}
		i = sc.space(i + 1)
		if i < len(d) && d[i] == closing {
			return i + 1
		}
		if i = sc.member(i, depth, closing); i < 0 {
			return -1
		}
		return sc.skipRest(i, depth, closing)
	case 't':
		return sc.lit(i, "true")
	case 'f':
		return sc.lit(i, "false")
	case 'n':
		return sc.lit(i, "null")
	default:
		return sc.number(i)
	}
}

// member reads over one member, at i, of the object or array (as its
// closing byte says) at depth: a key, its colon and its value, or a
// value.
func (sc *jsonScanner) member(i, depth int, closing byte) int {
	if closing == '}' {
		if d := sc.data; i >= len(d) || d[i] != '"' {
			return sc.failChar(i, "a string key") // as object says
		}
		if i = sc.skipStr(i); i < 0 {
			return -1
		}
		if i = sc.colon(i); i < 0 {
			return -1
		}
	}
	return sc.skip(i, depth+1)
}

// skipRest reads over what is left of the object or array at depth after
// one of its members (i is past it), and returns the offset after it.
func (sc *jsonScanner) skipRest(i, depth int, closing byte) int {
	for {
		var more bool
		if i, more = sc.next(i, closing); !more {
			return i
		}
		if i = sc.member(i, depth, closing); i < 0 {
			return -1
		}
	}
}

// skipStr reads the string at i, validating its escapes, without
// unescaping it.

func (sc *jsonScanner) skipStr(i int) int {
	d := sc.data
	if i >= len(d) || d[i] != '"' {
		return sc.failChar(i, "a string")
	}
	// It fails where str fails, with the same words: a hinted json
	// parser reads over what it does not observe with skip. As str, a
	// string without a backslash before its first quote ends there.
	q := bytes.IndexByte(d[i+1:], '"')
	if q < 0 {
		return sc.fail(i, "unterminated string")
	}
	e := bytes.IndexByte(d[i+1:i+1+q], '\\')
	if e < 0 {
		return i + q + 2
	}
	for j := i + 1 + e; j < len(d); j++ {
		switch d[j] {
		case '"':
			return j + 1
		case '\\':
			if j+1 >= len(d) {
				return sc.fail(j, "unterminated string")
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if _, ok := hex4(d, j+2); !ok {
					return sc.fail(j, "invalid \\u escape")
				}
				j += 5
			default:
				return sc.fail(j, fmt.Sprintf("invalid escape %q", "\\"+string(rune(d[j+1]))))
			}
		}
	}
	return sc.fail(i, "unterminated string")
}
