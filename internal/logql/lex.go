package logql

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tEOF tokKind = iota
	tErr         // a lexical error: text is the message
	tIdent
	tString
	tNumber
	tDuration // a number with a duration unit: 5m, 1h30m
	tBytes    // a number with a byte unit: 20MB, 1.5KiB
	tRange    // [5m]
	tFlag     // --strict
	tLBrace
	tRBrace
	tLParen
	tRParen
	tComma
	tEq      // =
	tNeq     // !=
	tRe      // =~
	tNre     // !~
	tCmpEq   // ==
	tGt      // >
	tGte     // >=
	tLt      // <
	tLte     // <=
	tPipe    // |
	tPipeEq  // |=
	tPipeRe  // |~
	tPipePat // |>
	tNpa     // !>
	tAdd
	tSub
	tMul
	tDiv
	tMod
	tPow
)

// token is one lexical token. pos is its byte offset in the source.
type token struct {
	kind  tokKind
	pos   int
	text  string        // the source text; the message of a tErr
	str   string        // the value of a tString
	num   float64       // the value of a tNumber
	dur   time.Duration // the value of a tDuration or tRange
	bytes uint64        // the value of a tBytes
}

// keywords are the words a token description names literally, as
// Loki's messages do ("unexpected by"); other identifiers, function
// names included (Loki's lexer makes them keywords only before a
// parenthesis), are IDENTIFIER.
var keywords = map[string]bool{
	"and": true, "or": true, "unless": true, "by": true, "without": true,
	"bool": true, "on": true, "ignoring": true, "group_left": true,
	"group_right": true, "offset": true, "unwrap": true, "ip": true,
	"json": true, "logfmt": true, "regexp": true, "pattern": true,
	"unpack": true, "line_format": true, "label_format": true, "drop": true,
	"keep": true, "decolorize": true,
}

// desc names a token in a syntax error the way Loki's (goyacc) messages
// do: punctuation and keywords literally, the rest by class.
func (t token) desc() string {
	switch t.kind {
	case tEOF:
		return "$end"
	case tIdent:
		if keywords[t.text] {
			return t.text
		}
		return "IDENTIFIER"
	case tString:
		return "STRING"
	case tNumber:
		return "NUMBER"
	case tDuration:
		return "DURATION"
	case tBytes:
		return "BYTES"
	case tRange:
		return "RANGE"
	case tFlag:
		return "PARSER_FLAG"
	}
	return t.text
}

// lexer reads the tokens of src one at a time, so that the parser holds
// a few tokens at once, never the whole query's: lexed whole, a 4 MB
// query of one-byte tokens took about 100 times its size (a 72-byte
// token per byte, and the slice growing to twice that). The last token
// is a tEOF, or a tErr at the first lexical error; either is returned
// again on every later call.
type lexer struct {
	src  string
	off  int
	last token // the tEOF or tErr once reached
	done bool
}

func (l *lexer) next() token {
	if l.done {
		return l.last
	}
	src, i := l.src, l.off
	// Skip blanks and comments.
	for i < len(src) {
		c := src[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
		} else if c == '#' {
			for i < len(src) && src[i] != '\n' {
				i++
			}
		} else {
			break
		}
	}
	if i >= len(src) {
		l.off, l.last, l.done = i, token{kind: tEOF, pos: i}, true
		return l.last
	}
	t, n := lexOne(src, i)
	l.off = n
	if t.kind == tErr {
		l.last, l.done = t, true
	}
	return t
}

// lex splits src into tokens, the last a tEOF or a tErr at the first
// lexical error: the parser reports that error only if it gets that far,
// so an earlier syntax error wins, as in Loki.
func lex(src string) []token {
	l := lexer{src: src}
	var toks []token
	for {
		t := l.next()
		toks = append(toks, t)
		if t.kind == tEOF || t.kind == tErr {
			return toks
		}
	}
}

// lexOne reads the token at src[i], which is not blank, and returns it
// with the offset just past it.
func lexOne(src string, i int) (token, int) {
	c := src[i]
	switch {
	case isIdentStart(c):
		j := i + 1
		for j < len(src) && isIdentByte(src[j]) {
			j++
		}
		return token{kind: tIdent, pos: i, text: src[i:j]}, j
	case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
		return lexNumber(src, i)
	case c == '"' || c == '`':
		return lexString(src, i)
	case c == '[':
		return lexRange(src, i)
	case c == '-' && i+2 < len(src) && src[i+1] == '-' && isIdentStart(src[i+2]):
		j := i + 2
		for j < len(src) && (isIdentByte(src[j]) || src[j] == '-') {
			j++
		}
		return token{kind: tFlag, pos: i, text: src[i:j]}, j
	}
	two := ""
	if i+1 < len(src) {
		two = src[i : i+2]
	}
	if k, ok := twoCharOps[two]; ok {
		return token{kind: k, pos: i, text: two}, i + 2
	}
	if k, ok := oneCharOps[c]; ok {
		return token{kind: k, pos: i, text: src[i : i+1]}, i + 1
	}
	_, size := utf8.DecodeRuneInString(src[i:])
	return errToken(i, fmt.Sprintf("syntax error: unexpected character %q", src[i:i+size])), i
}

var twoCharOps = map[string]tokKind{
	"!=": tNeq, "=~": tRe, "!~": tNre, "==": tCmpEq, ">=": tGte, "<=": tLte,
	"|=": tPipeEq, "|~": tPipeRe, "|>": tPipePat, "!>": tNpa,
}

var oneCharOps = map[byte]tokKind{
	'{': tLBrace, '}': tRBrace, '(': tLParen, ')': tRParen, ',': tComma,
	'=': tEq, '>': tGt, '<': tLt, '|': tPipe, '+': tAdd, '-': tSub,
	'*': tMul, '/': tDiv, '%': tMod, '^': tPow,
}

func errToken(pos int, msg string) token { return token{kind: tErr, pos: pos, text: msg} }

// lexNumber reads a number (1, 1.5, .5, 1e3, 2.5e-3) or, when letters
// follow it directly, a duration (5m, 1h30m, 1.5s, 2d) or a byte size
// (20MB, 1.5KiB).
func lexNumber(src string, i int) (token, int) {
	j := i
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	if j < len(src) && src[j] == '.' {
		j++
		for j < len(src) && isDigit(src[j]) {
			j++
		}
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < len(src) && isDigit(src[k]) {
			for k < len(src) && isDigit(src[k]) {
				k++
			}
			j = k
		}
	}
	if j < len(src) && (isUnitByte(src[j]) || strings.HasPrefix(src[j:], "µ") || strings.HasPrefix(src[j:], "μ")) {
		return lexUnit(src, i)
	}
	text := src[i:j]
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(v, 0) {
		return errToken(i, fmt.Sprintf("unable to parse literal as a float: %s", text)), i
	}
	return token{kind: tNumber, pos: i, text: text, num: v}, j
}

// lexUnit reads a number with a unit suffix at src[i]: a duration or a
// byte size.
func lexUnit(src string, i int) (token, int) {
	j := i
	for j < len(src) {
		if c := src[j]; isDigit(c) || c == '.' || isUnitByte(c) {
			j++
		} else if strings.HasPrefix(src[j:], "µ") || strings.HasPrefix(src[j:], "μ") {
			j += 2
		} else {
			break
		}
	}
	text := src[i:j]
	if d, ok := parseDuration(text); ok {
		return token{kind: tDuration, pos: i, text: text, dur: d}, j
	}
	if b, ok := parseBytes(text); ok {
		return token{kind: tBytes, pos: i, text: text, bytes: b}, j
	}
	if c := text[len(text)-1]; c == 'b' || c == 'B' {
		return errToken(i, fmt.Sprintf("not a valid bytes string: %q", text)), i
	}
	return errToken(i, fmt.Sprintf("not a valid duration string: %q", text)), i
}

// lexString reads a double-quoted string with Go escapes or a
// backquoted raw string.
func lexString(src string, i int) (token, int) {
	q := src[i]
	j := i + 1
	for j < len(src) && src[j] != q {
		if q == '"' && src[j] == '\n' {
			return errToken(i, "literal not terminated"), i
		}
		if q == '"' && src[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(src) {
		return errToken(i, "literal not terminated"), i
	}
	raw := src[i : j+1]
	if q == '`' {
		// As Go (and Loki, which unquotes with Go) does, carriage
		// returns are dropped from raw strings.
		s := strings.ReplaceAll(raw[1:len(raw)-1], "\r", "")
		return token{kind: tString, pos: i, text: raw, str: s}, j + 1
	}
	s, err := strconv.Unquote(raw)
	if err != nil {
		return errToken(i, "invalid char escape"), i
	}
	return token{kind: tString, pos: i, text: raw, str: s}, j + 1
}

// lexRange reads a range [5m]: the brackets and the duration are one
// token, as in Loki.
func lexRange(src string, i int) (token, int) {
	end := strings.IndexByte(src[i:], ']')
	if end < 0 {
		return errToken(i, "missing closing ']' in duration"), i
	}
	text := src[i : i+end+1]
	inner := strings.TrimSpace(text[1 : len(text)-1])
	d, ok := parseDuration(inner)
	if !ok {
		return errToken(i, fmt.Sprintf("not a valid duration string: %q", inner)), i
	}
	return token{kind: tRange, pos: i, text: text, dur: d}, i + end + 1
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentByte(c byte) bool  { return isIdentStart(c) || isDigit(c) }
func isUnitByte(c byte) bool   { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isLabelName reports whether s is a valid label name.
func isLabelName(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return true
}

var durationUnits = map[string]uint64{
	"ns": uint64(time.Nanosecond),
	"us": uint64(time.Microsecond),
	"µs": uint64(time.Microsecond), // U+00B5
	"μs": uint64(time.Microsecond), // U+03BC
	"ms": uint64(time.Millisecond),
	"s":  uint64(time.Second),
	"m":  uint64(time.Minute),
	"h":  uint64(time.Hour),
	"d":  uint64(24 * time.Hour),
	"w":  uint64(7 * 24 * time.Hour),
	"y":  uint64(365 * 24 * time.Hour),
}

// parseDuration parses a sequence of decimal numbers, each with an
// optional fraction and a unit: Go's units (ns us µs ms s m h) and
// Prometheus' d, w and y. It accepts what Loki accepts from either of
// time.ParseDuration and Prometheus' model.ParseDuration.
func parseDuration(s string) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	var total uint64
	for s != "" {
		i := 0
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		whole := s[:i]
		frac := ""
		if i < len(s) && s[i] == '.' {
			j := i + 1
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			frac, i = s[i+1:j], j
		}
		if whole == "" && frac == "" {
			return 0, false
		}
		j := i
		for j < len(s) && !isDigit(s[j]) && s[j] != '.' {
			j++
		}
		unit, ok := durationUnits[s[i:j]]
		if !ok {
			return 0, false
		}
		s = s[j:]
		v, ok := scaleUnit(whole, frac, unit)
		if !ok || v > math.MaxInt64-total {
			return 0, false
		}
		total += v
	}
	return time.Duration(total), true
}

// scaleUnit returns whole.frac times unit, false on overflow.
func scaleUnit(whole, frac string, unit uint64) (uint64, bool) {
	var n uint64
	if whole != "" {
		var err error
		if n, err = strconv.ParseUint(whole, 10, 64); err != nil {
			return 0, false
		}
	}
	if n > math.MaxUint64/unit {
		return 0, false
	}
	v := n * unit
	if frac != "" {
		f, err := strconv.ParseFloat("0."+frac, 64)
		if err != nil {
			return 0, false
		}
		add := uint64(f * float64(unit))
		if v > math.MaxUint64-add {
			return 0, false
		}
		v += add
	}
	return v, true
}

// formatDuration prints d as parseDuration reads it, in the largest
// units first as Prometheus does: 5m, 1h30m, 1d, 2w.
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		d = -d // the most negative duration prints as garbage; a parser never makes one
	}
	n := uint64(d)
	for _, u := range [...]struct {
		name  string
		exact bool
	}{{"y", true}, {"w", true}, {"d", false}, {"h", false}, {"m", false}, {"s", false}, {"ms", false}, {"us", false}, {"ns", false}} {
		mult := durationUnits[u.name]
		if n < mult || u.exact && n%mult != 0 {
			continue
		}
		b.WriteString(strconv.FormatUint(n/mult, 10))
		b.WriteString(u.name)
		n %= mult
	}
	return b.String()
}

type byteUnit struct {
	name string
	mult uint64
}

// byteUnits are the byte size units, matched without regard to case:
// kB and KB are 1000 bytes, KiB 1024, as go-humanize (which Loki uses)
// reads them. The order is the printer's preference.
var byteUnits = []byteUnit{
	{"EiB", 1 << 60}, {"PiB", 1 << 50}, {"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"EB", 1e18}, {"PB", 1e15}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3},
	{"B", 1},
}

// parseBytes parses a byte size: a decimal number with an optional
// fraction and a unit (42MB, 1.5KiB, 20B).
func parseBytes(s string) (uint64, bool) {
	i := 0
	for i < len(s) && (isDigit(s[i]) || s[i] == '.') {
		i++
	}
	num, unit := s[:i], s[i:]
	var mult uint64
	for _, u := range byteUnits {
		if strings.EqualFold(unit, u.name) {
			mult = u.mult
			break
		}
	}
	if mult == 0 || num == "" {
		return 0, false
	}
	whole, frac, _ := strings.Cut(num, ".")
	if strings.Contains(frac, ".") || !allDigits(whole) || !allDigits(frac) || whole == "" && frac == "" {
		return 0, false
	}
	return scaleUnit(whole, frac, mult)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// formatBytes prints n as parseBytes reads it, in the unit that gives
// the shortest exact text.
func formatBytes(n uint64) string {
	best := strconv.FormatUint(n, 10) + "B"
	if n == 0 {
		return best
	}
	for _, u := range byteUnits {
		if n%u.mult == 0 {
			if s := strconv.FormatUint(n/u.mult, 10) + u.name; len(s) < len(best) {
				best = s
			}
		}
	}
	return best
}

// formatFloat prints a number so that the lexer reads it back exactly.
func formatFloat(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}
