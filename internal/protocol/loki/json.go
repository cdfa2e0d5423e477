package loki

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/sluicelog/sluice/internal/record"
)

// The JSON push body, {"streams":[{"stream":{...},"values":[[ts,line,{meta}]...]}]},
// is decoded here without encoding/json and without copying: strings are
// views of the body, decoded into the decoder's arena only when they hold
// escapes or invalid UTF-8.
//
// What it accepts, rejects and stores is what encoding/json.Unmarshal into
// the struct below gave (the decoder before this one; the differential
// test keeps them equal):
//
//	struct{ Streams []struct{ Stream map[string]string; Values []json.RawMessage } }
//
// with each value then unmarshalled into []json.RawMessage, its timestamp
// and line into strings and its metadata into a map[string]string. So:
//   - the body must be valid JSON (RFC 8259, nesting up to 10000 deep),
//     or nothing is stored;
//   - keys match "streams", "stream" and "values" case-insensitively (as
//     encoding/json folds them); other keys are skipped;
//   - a value of the wrong type in the body's structure (the top level,
//     streams, a stream, its labels, values) rejects the body; null is
//     the empty value;
//   - within one entry it rejects the entry alone;
//   - of keys repeated in an object the last wins; a repeated "stream"
//     adds to the labels before it; invalid UTF-8 in a string becomes
//     U+FFFD, as does a lone surrogate escape.
//
// A body holding the top-level "streams" key three times or more may
// differ from encoding/json, which decodes the third array into stale
// elements of its slice's backing array: no client sends that.

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

// maxKeptArena bounds the string arena a decoder keeps between bodies.
const maxKeptArena = 1 << 20

// jstr is a decoded string: a span of the body, or of the arena when it
// had to be decoded.
type jstr struct {
	off, n uint32
	arena  bool
}

// jpair is a label or a metadata entry.
type jpair struct{ name, value jstr }

// jstream is a stream of the body: its labels are pairs[from:to] (later
// pairs win), its values entries[first:end].
type jstream struct {
	hasMap     bool // a "stream" object was seen (null resets it)
	from, to   int
	first, end int
}

// jentry is one value of a stream: its timestamp, line and metadata
// (meta[from:to]), or why it is left out.
type jentry struct {
	ts       int64
	line     jstr
	from, to int
	reason   string // non-empty: rejected
}

// jsonState is a JSON push body being decoded; its slices are kept in the
// Decoder between bodies.
type jsonState struct {
	data    []byte
	pos     int
	arena   []byte
	streams []jstream
	pairs   []jpair // labels
	meta    []jpair // entries' metadata
	entries []jentry
	labels  record.Labels
	names   []byte // the labels' text of one stream
	sorted  []jpair
	err     *jsonError // sticky: the body is refused

	// Where the decoder is, for errors.
	si, vi int
	field  string
}

// jsonError is a body that is not a push request: what and where.
type jsonError struct {
	off  int
	path string
	msg  string
}

func (e *jsonError) Error() string {
	if e.path == "" {
		return fmt.Sprintf("%s at byte %d", e.msg, e.off)
	}
	return fmt.Sprintf("%s: %s at byte %d", e.path, e.msg, e.off)
}

// path names where the decoder is: streams[1].values[3].
func (s *jsonState) path() string {
	switch s.field {
	case "":
		return ""
	case "streams":
		if s.si < 0 {
			return "streams"
		}
		return fmt.Sprintf("streams[%d]", s.si)
	case "values":
		if s.vi < 0 {
			return fmt.Sprintf("streams[%d].values", s.si)
		}
		return fmt.Sprintf("streams[%d].values[%d]", s.si, s.vi)
	}
	return fmt.Sprintf("streams[%d].%s", s.si, s.field)
}

// fail makes the body's error (the first one stays).
func (s *jsonState) fail(off int, format string, args ...any) {
	if s.err == nil {
		s.err = &jsonError{off: off, path: s.path(), msg: fmt.Sprintf(format, args...)}
	}
}

// syntax fails at the current byte.
func (s *jsonState) syntax(what string) {
	if s.pos >= len(s.data) {
		s.fail(s.pos, "unexpected end of JSON input (%s)", what)
		return
	}
	s.fail(s.pos, "invalid character %s (%s)", quoteChar(s.data[s.pos]), what)
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return "'" + string(c) + "'"
}

// str returns a decoded string's bytes: valid until the arena grows.
func (s *jsonState) str(j jstr) []byte {
	if j.arena {
		return s.arena[j.off : j.off+j.n]
	}
	return s.data[j.off : j.off+j.n]
}

func (s *jsonState) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, 0 at the end (as for a
// NUL byte, which is no valid start of anything either).
func (s *jsonState) peek() byte {
	s.space()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// kind names a JSON value by its first byte, for type errors.
func kind(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// literal reads true, false or null.
func (s *jsonState) literal(lit string) bool {
	if len(s.data)-s.pos >= len(lit) && string(s.data[s.pos:s.pos+len(lit)]) == lit {
		s.pos += len(lit)
		return true
	}
	for i := 0; i < len(lit); i++ {
		if s.pos >= len(s.data) || s.data[s.pos] != lit[i] {
			s.syntax("in literal " + lit)
			return false
		}
		s.pos++
	}
	return true
}

// null reads a null if one is next.
func (s *jsonState) null() bool {
	if s.peek() != 'n' {
		return false
	}
	return s.literal("null")
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number reads a number, checking its syntax.
func (s *jsonState) number() bool {
	d := s.data
	if s.pos < len(d) && d[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(d) && d[s.pos] == '0':
		s.pos++
	case s.pos < len(d) && d[s.pos] >= '1' && d[s.pos] <= '9':
		for s.pos < len(d) && isDigit(d[s.pos]) {
			s.pos++
		}
	default:
		s.syntax("in numeric literal")
		return false
	}
	if s.pos < len(d) && d[s.pos] == '.' {
		s.pos++
		if s.pos >= len(d) || !isDigit(d[s.pos]) {
			s.syntax("after decimal point in numeric literal")
			return false
		}
		for s.pos < len(d) && isDigit(d[s.pos]) {
			s.pos++
		}
	}
	if s.pos < len(d) && (d[s.pos] == 'e' || d[s.pos] == 'E') {
		s.pos++
		if s.pos < len(d) && (d[s.pos] == '+' || d[s.pos] == '-') {
			s.pos++
		}
		if s.pos >= len(d) || !isDigit(d[s.pos]) {
			s.syntax("in exponent of numeric literal")
			return false
		}
		for s.pos < len(d) && isDigit(d[s.pos]) {
			s.pos++
		}
	}
	return true
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// str reads a string (the next byte is its quote) and returns it decoded.
func (s *jsonState) string() (jstr, bool) {
	d := s.data
	start := s.pos + 1
	i := start
	plain := true
	for {
		for i < len(d) && d[i] >= 0x20 && d[i] < utf8.RuneSelf && d[i] != '"' && d[i] != '\\' {
			i++
		}
		if i >= len(d) {
			s.pos = i
			s.syntax("in string literal")
			return jstr{}, false
		}
		c := d[i]
		switch {
		case c == '"':
			s.pos = i + 1
			if plain {
				return jstr{off: uint32(start), n: uint32(i - start)}, true
			}
			return s.unquote(d[start:i]), true
		case c == '\\':
			plain = false
			if i+1 >= len(d) {
				s.pos = i + 1
				s.syntax("in string escape code")
				return jstr{}, false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if k >= len(d) || !isHex(d[k]) {
						s.pos = k
						s.syntax("in \\u hexadecimal character escape")
						return jstr{}, false
					}
				}
				i += 6
			default:
				s.pos = i + 1
				s.syntax("in string escape code")
				return jstr{}, false
			}
		case c < 0x20:
			s.pos = i
			s.syntax("in string literal")
			return jstr{}, false
		default:
			r, n := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && n == 1 {
				plain = false
			}
			i += n
		}
	}
}

// unquote decodes a string's escapes and invalid UTF-8 into the arena,
// as encoding/json does: invalid bytes and lone surrogates become U+FFFD.
// REQUIRES: q is a checked string's content.
func (s *jsonState) unquote(q []byte) jstr {
	off := len(s.arena)
	a := s.arena
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '\\':
			switch q[i+1] {
			case 'b':
				a = append(a, '\b')
			case 'f':
				a = append(a, '\f')
			case 'n':
				a = append(a, '\n')
			case 'r':
				a = append(a, '\r')
			case 't':
				a = append(a, '\t')
			case 'u':
				r := hex4(q[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					if len(q)-i >= 6 && q[i] == '\\' && q[i+1] == 'u' {
						if r2 := hex4(q[i+2:]); r2 >= 0 {
							if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
								a = utf8.AppendRune(a, dec)
								i += 6
								continue
							}
						}
					}
					r = unicode.ReplacementChar
				}
				a = utf8.AppendRune(a, r)
				continue
			default: // '"', '\\', '/'
				a = append(a, q[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			a = append(a, c)
			i++
		default:
			r, n := utf8.DecodeRune(q[i:])
			a = utf8.AppendRune(a, r)
			i += n
		}
	}
	s.arena = a
	return jstr{off: uint32(off), n: uint32(len(a) - off), arena: true}
}

// skip reads any value at depth (of the container holding it), checking
// its syntax.
func (s *jsonState) skip(depth int) bool {
	switch c := s.peek(); c {
	case '{':
		if !s.open(depth) {
			return false
		}
		for more := s.first('}'); more; more = s.next('}') {
			if _, ok := s.key(); !ok {
				return false
			}
			if !s.skip(depth + 1) {
				return false
			}
		}
		return s.err == nil
	case '[':
		if !s.open(depth) {
			return false
		}
		for more := s.first(']'); more; more = s.next(']') {
			if !s.skip(depth + 1) {
				return false
			}
		}
		return s.err == nil
	case '"':
		_, ok := s.string()
		return ok
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return s.number()
	default:
		s.syntax("looking for beginning of value")
		return false
	}
}

// open reads the '{' or '[' opening a container at depth.
func (s *jsonState) open(depth int) bool {
	if depth+1 > maxJSONDepth {
		s.fail(s.pos, "exceeded max depth")
		return false
	}
	s.pos++
	return true
}

// first reports whether the container just opened holds a first element
// (else it reads its closing byte).
func (s *jsonState) first(end byte) bool {
	switch s.peek() {
	case end:
		s.pos++
		return false
	case 0:
		s.syntax("looking for beginning of value")
		return false
	}
	return true
}

// next reads a ',' (true) or the container's closing byte (false).
func (s *jsonState) next(end byte) bool {
	if s.err != nil {
		return false
	}
	switch s.peek() {
	case ',':
		s.pos++
		if end == '}' && s.peek() != '"' {
			s.syntax("looking for beginning of object key string")
			return false
		}
		return true
	case end:
		s.pos++
		return false
	}
	if end == '}' {
		s.syntax("after object key:value pair")
	} else {
		s.syntax("after array element")
	}
	return false
}

// key reads an object's key and its ':'.
func (s *jsonState) key() (jstr, bool) {
	if s.peek() != '"' {
		s.syntax("looking for beginning of object key string")
		return jstr{}, false
	}
	k, ok := s.string()
	if !ok {
		return k, false
	}
	if s.peek() != ':' {
		s.syntax("after object key")
		return k, false
	}
	s.pos++
	return k, true
}

// isKey reports whether key is name as encoding/json matches a struct
// field: folded, so that "Streams", "STREAMS" and "ſtreams" (U+017F)
// match "streams". name is lower-case ASCII.
func isKey(key []byte, name string) bool {
	if string(key) == name {
		return true
	}
	j := 0
	for i := 0; i < len(key); {
		c := key[i]
		var r rune
		if c < utf8.RuneSelf {
			r = rune(c)
			if 'a' <= c && c <= 'z' {
				r -= 'a' - 'A'
			}
			i++
		} else {
			var n int
			r, n = utf8.DecodeRune(key[i:])
			r = foldRune(r)
			i += n
		}
		if j >= len(name) || r != rune(name[j]-('a'-'A')) {
			return false
		}
		j++
	}
	return j == len(name)
}

// foldRune is the smallest rune of r's case-folding set.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// typeError fails the body: a value of the wrong type in its structure
// (or no value: a syntax error).
func (s *jsonState) typeError(want string) {
	switch c := s.peek(); c {
	case '{', '[', '"', 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		s.fail(s.pos, "%s, want %s", kind(c), want)
	default:
		s.syntax("looking for beginning of value")
	}
}

// body reads the whole push.
func (s *jsonState) body() {
	s.field = ""
	if s.null() {
		s.end()
		return
	}
	if s.peek() != '{' {
		if s.peek() == 0 {
			s.syntax("looking for beginning of value")
			return
		}
		s.typeError("an object holding streams")
		if s.skip(0) {
			s.end()
		}
		return
	}
	s.open(0)
	for more := s.first('}'); more; more = s.next('}') {
		k, ok := s.key()
		if !ok {
			return
		}
		if !isKey(s.str(k), "streams") {
			if !s.skip(1) {
				return
			}
			continue
		}
		s.field, s.si = "streams", -1
		s.streamList()
		s.field = ""
	}
	s.end()
}

// end checks that only white space follows the body's value.
func (s *jsonState) end() {
	if s.err != nil {
		return
	}
	if s.space(); s.pos < len(s.data) {
		s.syntax("after top-level value")
	}
}

// streamList reads the streams array (depth 1), decoding its elements
// into the streams before (a repeated key), as encoding/json does.
func (s *jsonState) streamList() {
	if s.null() {
		s.streams = s.streams[:0]
		return
	}
	if s.peek() != '[' {
		s.typeError("an array of streams")
		s.skip(1)
		return
	}
	s.open(1)
	i := 0
	for more := s.first(']'); more; more = s.next(']') {
		if i >= len(s.streams) {
			s.streams = append(s.streams, jstream{})
		}
		s.si = i
		s.stream(&s.streams[i])
		i++
		if s.err != nil {
			return
		}
	}
	s.streams = s.streams[:i]
}

// stream reads one element of streams (depth 2).
func (s *jsonState) stream(st *jstream) {
	if s.null() {
		return
	}
	if s.peek() != '{' {
		s.typeError("a stream object")
		s.skip(2)
		return
	}
	s.open(2)
	for more := s.first('}'); more; more = s.next('}') {
		k, ok := s.key()
		if !ok {
			return
		}
		switch key := s.str(k); {
		case isKey(key, "stream"):
			s.field = "stream"
			s.labelMap(st)
		case isKey(key, "values"):
			s.field, s.vi = "values", -1
			s.values(st)
		default:
			s.skip(3)
		}
		s.field = "streams"
		if s.err != nil {
			return
		}
	}
}

// labelMap reads a stream's labels (depth 3), adding them to those
// before.
func (s *jsonState) labelMap(st *jstream) {
	if s.null() {
		st.hasMap = false
		st.from, st.to = len(s.pairs), len(s.pairs)
		return
	}
	if s.peek() != '{' {
		s.typeError("an object of labels")
		s.skip(3)
		return
	}
	switch {
	case !st.hasMap:
		st.from, st.to = len(s.pairs), len(s.pairs)
	case st.to != len(s.pairs):
		// Another stream's labels came since: move this one's to the end.
		n := len(s.pairs)
		s.pairs = append(s.pairs, s.pairs[st.from:st.to]...)
		st.from, st.to = n, len(s.pairs)
	}
	st.hasMap = true
	s.open(3)
	for more := s.first('}'); more; more = s.next('}') {
		k, ok := s.key()
		if !ok {
			return
		}
		var v jstr
		switch c := s.peek(); c {
		case '"':
			if v, ok = s.string(); !ok {
				return
			}
		case 'n':
			if !s.literal("null") {
				return
			}
		default:
			s.fail(s.pos, "label %q is %s, want a string", s.str(k), kind(c))
			s.skip(4)
			return
		}
		s.pairs = append(s.pairs, jpair{name: k, value: v})
	}
	st.to = len(s.pairs)
}

// values reads a stream's values (depth 3).
func (s *jsonState) values(st *jstream) {
	if s.null() {
		st.first, st.end = len(s.entries), len(s.entries)
		return
	}
	if s.peek() != '[' {
		s.typeError("an array of entries")
		s.skip(3)
		return
	}
	s.open(3)
	st.first = len(s.entries)
	for more := s.first(']'); more; more = s.next(']') {
		s.vi = len(s.entries) - st.first
		s.entry()
		if s.err != nil {
			return
		}
	}
	st.end = len(s.entries)
}

// entry reads one value of a stream (depth 4): [ts, line] or [ts, line,
// {metadata}]. A value of the wrong type rejects the entry, not the body.
func (s *jsonState) entry() {
	e := jentry{from: len(s.meta), to: len(s.meta)}
	start := s.pos
	switch c := s.peek(); c {
	case '[':
	case 'n':
		if s.literal("null") {
			e.reason = "0 elements, want [timestamp, line] or [timestamp, line, {metadata}]"
			s.entries = append(s.entries, e)
		}
		return
	default:
		e.reason = fmt.Sprintf("%s at byte %d, want an array", kind(c), start)
		if s.skip(4) {
			s.entries = append(s.entries, e)
		}
		return
	}
	s.open(4)
	n := 0
	var bad string // the first element of the wrong type
	var tsText jstr
	for more := s.first(']'); more; more = s.next(']') {
		at := s.pos
		c := s.peek()
		switch {
		case n < 2 && c == '"':
			v, ok := s.string()
			if !ok {
				return
			}
			if n == 0 {
				tsText = v
			} else {
				e.line = v
			}
		case n < 2 && c == 'n':
			if !s.literal("null") {
				return
			}
		case n == 2 && c == '{':
			if !s.metaMap(&e, &bad) {
				return
			}
		case n == 2 && c == 'n':
			if !s.literal("null") {
				return
			}
		default:
			if n <= 2 && bad == "" {
				what := [...]string{"timestamp", "line", "metadata"}[n]
				want := "a string"
				if n == 2 {
					want = "an object"
				}
				bad = fmt.Sprintf("%s is %s at byte %d, want %s", what, kind(c), at, want)
			}
			if !s.skip(5) {
				return
			}
		}
		n++
	}
	if s.err != nil {
		return
	}
	switch {
	case n < 2 || n > 3:
		e.reason = fmt.Sprintf("%d elements, want [timestamp, line] or [timestamp, line, {metadata}]", n)
	case bad != "":
		e.reason = bad
	default:
		text := s.str(tsText)
		ts, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(text), len(text)), 10, 64)
		if err != nil {
			e.reason = fmt.Sprintf("timestamp %q is not Unix nanoseconds as a string", text)
		}
		e.ts = ts
	}
	e.to = len(s.meta)
	s.entries = append(s.entries, e)
}

// metaMap reads an entry's structured metadata (depth 5); a value of the
// wrong type sets bad if nothing before did.
func (s *jsonState) metaMap(e *jentry, bad *string) bool {
	s.open(5)
	for more := s.first('}'); more; more = s.next('}') {
		k, ok := s.key()
		if !ok {
			return false
		}
		var v jstr
		switch c := s.peek(); c {
		case '"':
			if v, ok = s.string(); !ok {
				return false
			}
		case 'n':
			if !s.literal("null") {
				return false
			}
		default:
			if *bad == "" {
				*bad = fmt.Sprintf("metadata %q is %s at byte %d, want a string", s.str(k), kind(c), s.pos)
			}
			if !s.skip(6) {
				return false
			}
			continue
		}
		s.meta = append(s.meta, jpair{name: k, value: v})
	}
	return s.err == nil
}

// lastOfEach sorts pairs by name, stably, and keeps the last of each
// name, as a map filled in their order would.
func (s *jsonState) lastOfEach(pairs []jpair) []jpair {
	s.sorted = append(s.sorted[:0], pairs...)
	slices.SortStableFunc(s.sorted, func(a, b jpair) int { return bytes.Compare(s.str(a.name), s.str(b.name)) })
	out := s.sorted[:0]
	for i, p := range s.sorted {
		if i+1 < len(s.sorted) && bytes.Equal(s.str(p.name), s.str(s.sorted[i+1].name)) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// reset drops what the state holds of the last body, keeping its buffers.
func (s *jsonState) reset() {
	s.data, s.pos, s.err = nil, 0, nil
	if cap(s.arena) > maxKeptArena {
		s.arena = nil
	}
	s.arena = s.arena[:0]
	s.streams, s.pairs, s.meta, s.entries = s.streams[:0], s.pairs[:0], s.meta[:0], s.entries[:0]
	clear(s.labels[:cap(s.labels)])
	s.labels = s.labels[:0]
	s.si, s.vi, s.field = 0, 0, ""
}

// DecodeJSON decodes a JSON push body into b (replacing its content). An
// entry or stream that is wrong is left out and reported in the Result;
// the error (matching ErrBadRequest) is for a body that is not a push
// request at all, and names the byte and the field where it went wrong.
func (d *Decoder) DecodeJSON(body []byte, b *record.Batch) (Result, error) {
	var res Result
	s := &d.json
	s.reset()
	defer func() { s.data = nil }()
	s.data = body
	s.body()
	if s.err != nil {
		return res, fmt.Errorf("%w: JSON: %v", ErrBadRequest, s.err)
	}
	d.batch(b)
	for si := range s.streams {
		st := &s.streams[si]
		n := st.end - st.first
		res.Entries += n
		id, err := d.jsonStream(b, st)
		if err != nil {
			res.reject(n, "stream %d: %v", si, err)
			continue
		}
		for vi, e := range s.entries[st.first:st.end] {
			if e.reason != "" {
				res.reject(1, "stream %d, entry %d: %s", si, vi, e.reason)
				continue
			}
			d.meta = d.meta[:0]
			for _, p := range s.lastOfEach(s.meta[e.from:e.to]) {
				d.meta = append(d.meta, [2][]byte{s.str(p.name), s.str(p.value)})
			}
			d.add(b, id, e.ts, s.str(e.line), d.meta, &res)
		}
	}
	return res, nil
}

// jsonStream interns a stream's labels. Their text is copied into one
// string: the stream table keeps the labels.
func (d *Decoder) jsonStream(b *record.Batch, st *jstream) (uint32, error) {
	s := &d.json
	pairs := s.lastOfEach(s.pairs[st.from:st.to])
	s.names = s.names[:0]
	for _, p := range pairs {
		s.names = append(s.names, s.str(p.name)...)
		s.names = append(s.names, s.str(p.value)...)
	}
	text := string(s.names)
	// Room for service_name, which stream adds.
	s.labels = slices.Grow(s.labels[:0], len(pairs)+1)
	off := 0
	for _, p := range pairs {
		nl, vl := int(p.name.n), int(p.value.n)
		s.labels = append(s.labels, record.Label{Name: text[off : off+nl], Value: text[off+nl : off+nl+vl]})
		off += nl + vl
	}
	return d.stream(b, s.labels)
}
