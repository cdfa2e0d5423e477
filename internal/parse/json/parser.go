package json

import (
	"fmt"
	"math"
	"strconv"
	"unsafe"

	"github.com/sluicelog/sluice/internal/record"
)

// DefaultMaxDepth is the nesting limit unless configured.
const DefaultMaxDepth = 64

// Parser parses JSON lines. The zero value is ready to use.
//
// Concurrency: one goroutine; use a Parser per goroutine.
type Parser struct {
	// MaxDepth limits nesting of objects and arrays; 0 means DefaultMaxDepth.
	MaxDepth int

	data []byte
	bl   *record.Builder
	b    *record.Batch
	sh   shapes
	last uint32 // the slot of the key read last in this line
	cur  uint32 // the slot of the field being parsed

	// The first error of the current line: where and what.
	errPos   int
	errCode  errCode
	errField []byte // the name of the field whose value failed, if any
	errByte  byte
}

type errCode uint8

const (
	errNone errCode = iota
	errUnexpectedEnd
	errUnexpectedByte
	errUnterminatedString
	errBadEscape
	errBadUnicodeEscape
	errControlChar
	errBadNumber
	errTooDeep
	errTrailing
	errTooManyNames
)

// ParseLine parses one line into a record. See the package doc for what a
// line becomes.
func (p *Parser) ParseLine(bl *record.Builder, line record.Span) {
	b := bl.Batch()
	p.bl, p.b, p.data = bl, b, b.Data
	p.errCode = errNone
	if p.sh.owner != bl || p.sh.gen != bl.Generation() || len(p.sh.slots) > maxSlots {
		p.sh.reset(bl)
	}
	p.last = rootSlot
	i, end := int(line.Off), int(line.End())
	i = skipSpace(p.data, i, end)
	if i == end {
		return // a line of whitespace holds no record
	}
	bl.Begin(line)
	if p.data[i] == '{' {
		i = p.object(i+1, end, 1, rootSlot)
	} else {
		i = p.topValue(i, end)
	}
	if i >= 0 {
		if i = skipSpace(p.data, i, end); i != end {
			p.fail(i, errTrailing)
		}
	}
	if p.errCode != errNone {
		p.reportError(bl, int(line.Off))
		return
	}
	bl.End()
}

func (p *Parser) maxDepth() int {
	if p.MaxDepth > 0 {
		return p.MaxDepth
	}
	return DefaultMaxDepth
}

// fail records the line's first error and returns -1, which every parsing
// function returns to unwind.
func (p *Parser) fail(pos int, code errCode) int {
	if p.errCode == errNone {
		p.errPos, p.errCode = pos, code
		p.errField = p.errField[:0]
		if pos < len(p.data) {
			p.errByte = p.data[pos]
		}
	}
	return -1
}

// failIn is fail inside the value of the field of slot p.cur.
func (p *Parser) failIn(pos int, code errCode) int {
	if p.errCode == errNone {
		p.fail(pos, code)
		p.errField = p.sh.appendName(p.errField[:0], p.cur)
	}
	return -1
}

// object parses the members of an object whose '{' precedes i, adding a
// field for each leaf; parent is the slot of the object's own key.
// It returns the index after the closing '}', or -1.
func (p *Parser) object(i, end, depth int, parent uint32) int {
	data := p.data
	if depth > p.maxDepth() {
		return p.fail(i-1, errTooDeep)
	}
	i = skipSpace(data, i, end)
	if i < end && data[i] == '}' {
		return i + 1
	}
	for {
		if i >= end {
			return p.fail(i, errUnexpectedEnd)
		}
		if data[i] != '"' {
			return p.fail(i, errUnexpectedByte)
		}
		// The key: the one the shape cache expects, or else scanned and
		// looked up.
		slots := p.sh.slots
		s := slots[p.last].next[0]
		if s < uint32(len(slots)) && slots[s].parent == parent && slots[s].match(data, i+1, end) {
			i += len(slots[s].key) + 2
		} else if s = p.sh.guess(p.last, parent, data, i+1, end); s != noSlot {
			i += len(p.sh.slots[s].key) + 2
		} else {
			kstart := i + 1
			kend, escaped, high, code := scanString(data, kstart, end)
			if code != 0 {
				return p.fail(kend, code)
			}
			s = p.sh.find(parent, data[kstart:kend], flagsOf(escaped, high))
			p.sh.follows(p.last, s)
			i = kend + 1
		}
		p.last, p.cur = s, s
		// The colon.
		if i < end && data[i] == ':' {
			i++
		} else {
			i = skipSpace(data, i, end)
			if i >= end || data[i] != ':' {
				return p.fail(i, errUnexpectedByte)
			}
			i++
		}
		if i < end && data[i] == ' ' {
			i++
		}
		if i < end && isSpace(data[i]) {
			i = skipSpace(data, i, end)
		}
		if i >= end {
			return p.fail(i, errUnexpectedEnd)
		}
		// The value: a nested object's keys get this key as their parent,
		// anything else is a field.
		switch data[i] {
		case '"':
			// Strings are most values: handled here, without a call.
			close, escaped, high, code := scanString(data, i+1, end)
			if code != 0 {
				return p.failIn(close, code)
			}
			flags := flagsOf(escaped, false)
			if high && !validUTF8(data[i+1:close]) {
				flags |= record.BadUTF8
				p.b.BadUTF8++
			}
			if p.add(record.String, flags, i+1, close, 0) < 0 {
				return -1
			}
			i = close + 1
		case '{':
			j := skipSpace(data, i+1, end)
			if j < end && data[j] == '}' {
				i = p.add(record.JSON, 0, i, j+1, 0)
			} else {
				i = p.object(i+1, end, depth+1, s)
			}
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			i = p.number(i, end)
		default:
			i = p.value(i, end, depth)
		}
		if i < 0 {
			return -1
		}
		// A ',' or the '}'.
		if i < end && data[i] == ',' {
			i++
		} else {
			i = skipSpace(data, i, end)
			if i >= end {
				return p.fail(i, errUnexpectedEnd)
			}
			if data[i] == '}' {
				return i + 1
			}
			if data[i] != ',' {
				return p.fail(i, errUnexpectedByte)
			}
			i++
		}
		if i < end && data[i] == ' ' {
			i++
		}
		if i < end && data[i] != '"' {
			i = skipSpace(data, i, end)
		}
	}
}

// value parses a value other than a string or an object at i and adds
// it as the field of slot p.cur.
func (p *Parser) value(i, end, depth int) int {
	data := p.data
	switch c := data[i]; c {
	case '[':
		j := p.skipArray(i+1, end, depth+1)
		if j < 0 {
			return -1
		}
		return p.add(record.JSON, 0, i, j, 0)
	case 't':
		if end-i >= 4 && string(data[i:i+4]) == "true" {
			return p.add(record.Bool, 0, i, i+4, 1)
		}
	case 'f':
		if end-i >= 5 && string(data[i:i+5]) == "false" {
			return p.add(record.Bool, 0, i, i+5, 0)
		}
	case 'n':
		if end-i >= 4 && string(data[i:i+4]) == "null" {
			return p.add(record.Null, 0, i, i+4, 0)
		}
	default:
		if c == '-' || c-'0' < 10 {
			return p.number(i, end)
		}
	}
	return p.failIn(i, errUnexpectedByte)
}

// number parses a number at i and adds it as the field of slot p.cur.
func (p *Parser) number(i, end int) int {
	data := p.data
	start := i
	neg := data[i] == '-'
	if neg {
		i++
	}
	// Integer part: "0" or [1-9][0-9]*.
	if i >= end || data[i]-'0' >= 10 {
		return p.failIn(i, errBadNumber)
	}
	var u uint64
	digits := 0
	if data[i] == '0' {
		i++
		digits = 1
	} else {
		u, digits, i = digitRun(data, i, end, 0)
	}
	isFloat, hasExp := false, false
	fracDigits := 0
	if i < end && data[i] == '.' {
		isFloat = true
		i++
		if i >= end || data[i]-'0' >= 10 {
			return p.failIn(i, errBadNumber)
		}
		// The fraction's digits extend the mantissa, for the fast path.
		u, fracDigits, i = digitRun(data, i, end, u)
	}
	if i < end && data[i]|0x20 == 'e' {
		isFloat, hasExp = true, true
		i++
		if i < end && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= end || data[i]-'0' >= 10 {
			return p.failIn(i, errBadNumber)
		}
		for i < end && data[i]-'0' < 10 {
			i++
		}
	}
	text := data[start:i]
	if !isFloat {
		// Up to 18 digits cannot overflow; longer ones are checked exactly.
		if digits <= 18 {
			v := int64(u)
			if neg {
				v = -v
			}
			return p.add(record.Int, 0, start, i, uint64(v))
		}
		if v, err := strconv.ParseInt(unsafeString(text), 10, 64); err == nil {
			return p.add(record.Int, 0, start, i, uint64(v))
		}
		return p.add(record.BigInt, 0, start, i, 0)
	}
	// Clinger's fast path: a mantissa below 2^53 and a power of ten up to
	// 22 are both exact in float64, so one division is correctly rounded.
	// Log values (latencies, ratios) nearly always take it.
	if !hasExp && digits+fracDigits <= 15 && fracDigits <= 22 {
		f := float64(u) / pow10[fracDigits]
		if neg {
			f = -f
		}
		return p.add(record.Float, 0, start, i, math.Float64bits(f))
	}
	// A range error leaves ±Inf or 0 in f; the text stays exact in Raw.
	f, _ := strconv.ParseFloat(unsafeString(text), 64)
	return p.add(record.Float, 0, start, i, math.Float64bits(f))
}

var pow10 = [23]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// add appends the field of slot p.cur with raw bytes data[from:to] and
// returns to.
func (p *Parser) add(kind record.Kind, flags record.Flags, from, to int, num uint64) int {
	sl := &p.sh.slots[p.cur]
	if !sl.named {
		if _, ok := p.sh.nameOf(p.bl, p.cur); !ok {
			return p.failIn(from, errTooManyNames)
		}
		sl = &p.sh.slots[p.cur]
	}
	p.bl.Add(record.Field{
		Name:  sl.name,
		Kind:  kind,
		Flags: flags,
		Raw:   record.Span{Off: uint32(from), Len: uint32(to - from)},
		Num:   num,
	})
	return to
}

// topValue parses a line holding a value other than an object: it becomes
// the record's message.
func (p *Parser) topValue(i, end int) int {
	data := p.data
	if data[i] == '"' {
		close, escaped, high, code := scanString(data, i+1, end)
		if code != 0 {
			return p.fail(close, code)
		}
		flags := flagsOf(escaped, false)
		if high && !validUTF8(data[i+1:close]) {
			flags |= record.BadUTF8
			p.b.BadUTF8++
		}
		p.bl.SetMsg(record.Span{Off: uint32(i + 1), Len: uint32(close - i - 1)}, flags)
		return close + 1
	}
	j := p.skipValue(i, end, 0)
	if j >= 0 {
		p.bl.SetMsg(record.Span{Off: uint32(i), Len: uint32(j - i)}, 0)
	}
	return j
}

func flagsOf(escaped, high bool) record.Flags {
	var f record.Flags
	if escaped {
		f |= record.Escaped
	}
	if high {
		f |= record.BadUTF8
	}
	return f
}

func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// reportError fails the current record with the line's first error.
func (p *Parser) reportError(bl *record.Builder, lineStart int) {
	kind := record.ErrSyntax
	switch p.errCode {
	case errTooDeep:
		kind = record.ErrTooDeep
	case errTooManyNames:
		kind = record.ErrTooManyNames
	}
	bl.Fail(kind, p.errPos-lineStart+1, p.message())
}

func (p *Parser) message() string {
	var what string
	switch p.errCode {
	case errUnexpectedEnd:
		what = "unexpected end of line"
	case errUnexpectedByte:
		what = fmt.Sprintf("unexpected %s", quoteByte(p.errByte))
	case errUnterminatedString:
		what = "unterminated string"
	case errBadEscape:
		what = fmt.Sprintf("invalid escape '\\%c' in string", p.data[p.errPos+1])
	case errBadUnicodeEscape:
		what = `invalid \u escape in string: want four hex digits`
	case errControlChar:
		what = fmt.Sprintf("control character 0x%02x in string: must be escaped", p.errByte)
	case errBadNumber:
		what = "invalid number"
	case errTooDeep:
		what = fmt.Sprintf("nesting deeper than %d", p.maxDepth())
	case errTrailing:
		what = fmt.Sprintf("unexpected %s after the JSON value", quoteByte(p.errByte))
	case errTooManyNames:
		what = "too many distinct field names"
	default:
		what = "invalid JSON"
	}
	if len(p.errField) > 0 {
		return fmt.Sprintf("json: %s in the value of field %q", what, p.errField)
	}
	return "json: " + what
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("'%c'", c)
	}
	return fmt.Sprintf("byte 0x%02x", c)
}
