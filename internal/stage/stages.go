package stage

import (
	"fmt"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/sluicelog/sluice/internal/logql"
	"github.com/sluicelog/sluice/internal/record"
)

// This file holds what the parser stages share (the row arena, label
// name sanitizing, the _extracted rule) and the stages that only move
// labels or the line: drop, keep, unpack and decolorize.

// rowBuf is a byte arena for the strings a stage makes while it
// processes a row: label names it builds and values it unescapes.
//
// INVARIANT: bytes are only appended between two resets, so a string
// viewing them stays intact for the rest of the row even when the arena
// grows (the old array stays alive behind the string). Strings are valid
// until the next reset, which is the next row.
type rowBuf struct {
	b []byte
}

// maxRowBuf is the capacity above which a reset drops the arena instead
// of keeping it for the next row: one huge line must not pin its memory
// for the life of the query.
const maxRowBuf = 1 << 20

func (r *rowBuf) reset() {
	if cap(r.b) > maxRowBuf {
		r.b = nil
	}
	r.b = r.b[:0]
}

// view returns a string that views the arena from start to its end.
func (r *rowBuf) view(start int) string {
	return bytesView(r.b[start:])
}

// str copies p into the arena and returns a view of the copy.
func (r *rowBuf) str(p []byte) string {
	start := len(r.b)
	r.b = append(r.b, p...)
	return r.view(start)
}

// bytesView returns a string viewing b, which must not change while the
// string is in use.
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// stringBytes returns a []byte viewing s. The caller must not modify it.
func stringBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// ExtractedSuffix is what Loki appends to an extracted label whose name
// is one of the stream's labels.
const ExtractedSuffix = "_extracted"

// setParsed sets a label that a parser extracted, as Loki does: a name
// that is one of the stream's labels or of the row's structured metadata
// gets the suffix "_extracted", and a
// name that already has a value in this row (extracted earlier in the
// line, or by an earlier stage) keeps it: the first value wins. A
// suffixed name is built in buf. Empty names are ignored, and so are
// names o does not observe.
func setParsed(lb *Labels, buf *rowBuf, o *Observed, name, value string) (added bool) {
	if name == "" {
		return false
	}
	if lb.IsStream(name) || lb.IsMeta(name) {
		start := len(buf.b)
		buf.b = append(buf.b, name...)
		buf.b = append(buf.b, ExtractedSuffix...)
		name = buf.view(start)
	}
	if !o.observes(name) {
		return false
	}
	if _, ok := lb.lookup(name); ok {
		return false
	}
	lb.cur = append(lb.cur, record.Label{Name: name, Value: value})
	return true
}

// setParsedName is setParsed for a name in a scratch buffer that the
// caller reuses: the name is copied into buf only when it is set.
func setParsedName(lb *Labels, buf *rowBuf, o *Observed, name []byte, value string) (added bool) {
	if len(name) == 0 {
		return false
	}
	n := bytesView(name)
	if lb.IsStream(n) || lb.IsMeta(n) {
		return setParsed(lb, buf, o, n, value)
	}
	if !o.observesBytes(name) {
		return false
	}
	if _, ok := lb.lookup(n); ok {
		return false
	}
	lb.cur = append(lb.cur, record.Label{Name: buf.str(name), Value: value})
	return true
}

// AppendLabelName appends key made a valid label name as Loki's parsers
// make it: surrounding white space trimmed, every character (rune) that
// is not an ASCII letter, digit or '_' replaced by '_', and, when first
// is set (the key starts the name), a leading digit prefixed by '_'.
func AppendLabelName(dst, key []byte, first bool) []byte {
	key = trimSpace(key)
	if len(key) == 0 {
		return dst
	}
	if first && key[0] >= '0' && key[0] <= '9' {
		dst = append(dst, '_')
	}
	for i := 0; i < len(key); {
		c := key[i]
		if c < utf8.RuneSelf {
			if !isLabelByte(c) {
				c = '_'
			}
			dst = append(dst, c)
			i++
			continue
		}
		_, n := utf8.DecodeRune(key[i:])
		dst = append(dst, '_')
		i += n
	}
	return dst
}

// trimSpace trims Unicode white space as strings.TrimSpace does,
// without allocating.
func trimSpace(b []byte) []byte {
	for len(b) > 0 {
		r, n := rune(b[0]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRune(b)
		}
		if !unicode.IsSpace(r) {
			break
		}
		b = b[n:]
	}
	for len(b) > 0 {
		r, n := rune(b[len(b)-1]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeLastRune(b)
		}
		if !unicode.IsSpace(r) {
			break
		}
		b = b[:len(b)-n]
	}
	return b
}

func isLabelByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// validLabelName reports whether s is a valid label name:
// [a-zA-Z_][a-zA-Z0-9_]*.
func validLabelName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLabelByte(s[i]) {
			return false
		}
	}
	return true
}

// --- drop -------------------------------------------------------------

// dropStage is `| drop a, b="x"`: bare names are removed, stream labels
// and __error__ included; a matcher removes its label only when the
// label's value matches.
type dropStage struct {
	items []logql.LabelItem
}

func newDropStage(d *logql.Drop) (stage, error) {
	if err := checkLabelItems(d.Items); err != nil {
		return nil, fmt.Errorf("drop: %w", err)
	}
	return &dropStage{items: d.Items}, nil
}

func (s *dropStage) process(_ int64, line []byte, lb *Labels) ([]byte, bool) {
	for _, it := range s.items {
		if it.Matcher == nil {
			lb.Del(it.Name)
			continue
		}
		v, ok := lb.lookup(it.Matcher.Name)
		if ok && it.Matcher.Matches(v) {
			lb.Del(it.Matcher.Name)
		}
	}
	return line, true
}

// keepStage is `| keep a, b="x"`: only the listed labels stay, stream
// labels included; a matcher keeps its label only when the value
// matches. As in Loki, __error__ and __error_details__ always stay.
type keepStage struct {
	items []logql.LabelItem
}

func newKeepStage(k *logql.Keep) (stage, error) {
	if err := checkLabelItems(k.Items); err != nil {
		return nil, fmt.Errorf("keep: %w", err)
	}
	return &keepStage{items: k.Items}, nil
}

func (s *keepStage) process(_ int64, line []byte, lb *Labels) ([]byte, bool) {
	out := lb.cur[:0]
	for _, l := range lb.cur {
		if s.keeps(l) {
			out = append(out, l)
		}
	}
	clear(lb.cur[len(out):])
	lb.cur = out
	return line, true
}

func (s *keepStage) keeps(l record.Label) bool {
	if l.Name == ErrorLabel || l.Name == ErrorDetailsLabel {
		return true
	}
	for _, it := range s.items {
		if it.Matcher == nil {
			if it.Name == l.Name {
				return true
			}
			continue
		}
		if it.Matcher.Name == l.Name && it.Matcher.Matches(l.Value) {
			return true
		}
	}
	return false
}

func checkLabelItems(items []logql.LabelItem) error {
	if len(items) == 0 {
		return fmt.Errorf("no labels given")
	}
	for _, it := range items {
		if it.Matcher == nil && it.Name == "" {
			return fmt.Errorf("empty label name")
		}
	}
	return nil
}

// --- unpack -----------------------------------------------------------

// unpackStage is `| unpack`: the line is a JSON object written by
// Promtail's pack stage. Its "_entry" string becomes the line and its
// other string fields become labels (sanitized, with the _extracted rule);
// fields of other types are ignored. As in Loki, labels are only set
// when the object has an "_entry": a line that was not packed keeps its
// labels. A line that is not a JSON object gets __error__=JSONParserErr
// and stays as it is.
type unpackStage struct {
	observed *Observed // the labels set; nil: all
	sc       jsonScanner
	buf      rowBuf
	pairs    []string // name, value, name, value...
}

func newUnpackStage(*logql.Unpack) (stage, error) { return &unpackStage{}, nil }

func (s *unpackStage) process(_ int64, line []byte, lb *Labels) ([]byte, bool) {
	s.buf.reset()
	s.pairs = s.pairs[:0]
	sc := &s.sc
	sc.reset(line, &s.buf)
	i := sc.space(0)
	if i >= len(line) || line[i] != '{' {
		sc.fail(i, "expected a JSON object")
		lb.ReplaceError(errJSON, sc.details())
		return line, true
	}
	var entry string
	packed := false
	i = sc.space(i + 1)
	if i < len(line) && line[i] == '}' {
		return line, true
	}
	for i >= 0 {
		var key string
		if key, i = sc.str(i); i < 0 {
			break
		}
		if i = sc.colon(i); i < 0 {
			break
		}
		if line[i] != '"' {
			i = sc.skip(i, 0)
		} else {
			var v string
			if v, i = sc.str(i); i < 0 {
				break
			}
			if key == "_entry" {
				if !packed {
					entry, packed = v, true
				}
			} else {
				start := len(s.buf.b)
				s.buf.b = AppendLabelName(s.buf.b, stringBytes(key), true)
				s.pairs = append(s.pairs, s.buf.view(start), v)
			}
		}
		if i < 0 {
			break
		}
		var more bool
		if i, more = sc.next(i, '}'); !more {
			break
		}
	}
	if i < 0 {
		lb.ReplaceError(errJSON, sc.details())
		return line, true
	}
	if !packed {
		return line, true
	}
	for k := 0; k < len(s.pairs); k += 2 {
		setParsed(lb, &s.buf, s.observed, s.pairs[k], s.pairs[k+1])
	}
	return stringBytes(entry), true
}

// --- decolorize -------------------------------------------------------

// decolorizeStage is `| decolorize`: ANSI escape sequences are removed
// from the line. It removes, after ESC (0x1b) or the C1 CSI (U+009B):
// control sequences (CSI: parameter bytes 0x30-0x3f, intermediate bytes
// 0x20-0x2f, a final byte 0x40-0x7e), operating system commands (ESC ]
// up to BEL or ESC \) and the short escapes (intermediate bytes, then a
// final byte 0x30-0x7e). A sequence cut short at the end of the line is
// removed too. That covers what Loki's expression removes in real logs
// (colours, cursor moves, titles) without a regexp.
type decolorizeStage struct {
	buf []byte
}

func newDecolorizeStage(*logql.Decolorize) (stage, error) { return &decolorizeStage{}, nil }

func (s *decolorizeStage) process(_ int64, line []byte, _ *Labels) ([]byte, bool) {
	i := indexEscape(line)
	if i < 0 {
		return line, true
	}
	s.buf = append(s.buf[:0], line[:i]...)
	for i < len(line) {
		j := indexEscape(line[i:])
		if j < 0 {
			s.buf = append(s.buf, line[i:]...)
			break
		}
		s.buf = append(s.buf, line[i:i+j]...)
		i += j
		i += escapeLen(line[i:])
	}
	return s.buf, true
}

// indexEscape returns the index of the first ESC or C1 CSI in b, or -1.
func indexEscape(b []byte) int {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case 0x1b:
			return i
		case 0xc2:
			if i+1 < len(b) && b[i+1] == 0x9b {
				return i
			}
		}
	}
	return -1
}

// escapeLen returns the length of the escape sequence that b starts with
// (ESC or the two bytes of U+009B first).
func escapeLen(b []byte) int {
	var i int
	if b[0] == 0x1b {
		if len(b) == 1 {
			return 1
		}
		switch b[1] {
		case '[':
			i = 2
		case ']':
			return oscLen(b)
		default:
			i = 1
			for i < len(b) && b[i] >= 0x20 && b[i] <= 0x2f {
				i++
			}
			if i < len(b) && b[i] >= 0x30 && b[i] <= 0x7e {
				i++
			}
			return i
		}
	} else {
		i = 2 // C1 CSI
	}
	for i < len(b) && b[i] >= 0x30 && b[i] <= 0x3f {
		i++
	}
	for i < len(b) && b[i] >= 0x20 && b[i] <= 0x2f {
		i++
	}
	if i < len(b) && b[i] >= 0x40 && b[i] <= 0x7e {
		i++
	}
	return i
}

// oscLen returns the length of an operating system command, ESC ] up
// to and including BEL or ESC \; without a terminator the rest of the
// line.
func oscLen(b []byte) int {
	for i := 2; i < len(b); i++ {
		switch b[i] {
		case 0x07:
			return i + 1
		case 0x1b:
			if i+1 < len(b) && b[i+1] == '\\' {
				return i + 2
			}
			return i
		}
	}
	return len(b)
}
