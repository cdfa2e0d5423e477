package json

import (
	"errors"
	"fmt"

	"github.com/sluicelog/sluice/internal/record"
)

// skipValue validates the value at i without adding fields and returns
// the index after it, or -1.
func (p *Parser) skipValue(i, end, depth int) int {
	data := p.data
	if i >= end {
		return p.fail(i, errUnexpectedEnd)
	}
	switch c := data[i]; c {
	case '"':
		close, _, high, code := scanString(data, i+1, end)
		if code != 0 {
			return p.fail(close, code)
		}
		if high && !validUTF8(data[i+1:close]) {
			p.b.BadUTF8++
		}
		return close + 1
	case '[':
		return p.skipArray(i+1, end, depth+1)
	case '{':
		return p.skipObject(i+1, end, depth+1)
	case 't':
		if end-i >= 4 && string(data[i:i+4]) == "true" {
			return i + 4
		}
	case 'f':
		if end-i >= 5 && string(data[i:i+5]) == "false" {
			return i + 5
		}
	case 'n':
		if end-i >= 4 && string(data[i:i+4]) == "null" {
			return i + 4
		}
	default:
		if c == '-' || c-'0' < 10 {
			return p.skipNumber(i, end)
		}
	}
	return p.fail(i, errUnexpectedByte)
}

// skipArray validates the elements of an array whose '[' precedes i.
func (p *Parser) skipArray(i, end, depth int) int {
	if depth > p.maxDepth() {
		return p.fail(i-1, errTooDeep)
	}
	data := p.data
	i = skipSpace(data, i, end)
	if i < end && data[i] == ']' {
		return i + 1
	}
	for {
		i = p.skipValue(skipSpace(data, i, end), end, depth)
		if i < 0 {
			return -1
		}
		i = skipSpace(data, i, end)
		if i >= end {
			return p.fail(i, errUnexpectedEnd)
		}
		switch data[i] {
		case ',':
			i++
		case ']':
			return i + 1
		default:
			return p.fail(i, errUnexpectedByte)
		}
	}
}

// skipObject validates the members of an object whose '{' precedes i.
func (p *Parser) skipObject(i, end, depth int) int {
	if depth > p.maxDepth() {
		return p.fail(i-1, errTooDeep)
	}
	data := p.data
	i = skipSpace(data, i, end)
	if i < end && data[i] == '}' {
		return i + 1
	}
	for {
		i = skipSpace(data, i, end)
		if i >= end {
			return p.fail(i, errUnexpectedEnd)
		}
		if data[i] != '"' {
			return p.fail(i, errUnexpectedByte)
		}
		if i = p.skipValue(i, end, depth); i < 0 {
			return -1
		}
		i = skipSpace(data, i, end)
		if i >= end {
			return p.fail(i, errUnexpectedEnd)
		}
		if data[i] != ':' {
			return p.fail(i, errUnexpectedByte)
		}
		if i = p.skipValue(skipSpace(data, i+1, end), end, depth); i < 0 {
			return -1
		}
		i = skipSpace(data, i, end)
		if i >= end {
			return p.fail(i, errUnexpectedEnd)
		}
		switch data[i] {
		case ',':
			i++
		case '}':
			return i + 1
		default:
			return p.fail(i, errUnexpectedByte)
		}
	}
}

// skipNumber validates a number at i.
func (p *Parser) skipNumber(i, end int) int {
	data := p.data
	if data[i] == '-' {
		i++
	}
	if i >= end || data[i]-'0' >= 10 {
		return p.fail(i, errBadNumber)
	}
	if data[i] == '0' {
		i++
	} else {
		for i < end && data[i]-'0' < 10 {
			i++
		}
	}
	if i < end && data[i] == '.' {
		i++
		if i >= end || data[i]-'0' >= 10 {
			return p.fail(i, errBadNumber)
		}
		for i < end && data[i]-'0' < 10 {
			i++
		}
	}
	if i < end && data[i]|0x20 == 'e' {
		i++
		if i < end && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= end || data[i]-'0' >= 10 {
			return p.fail(i, errBadNumber)
		}
		for i < end && data[i]-'0' < 10 {
			i++
		}
	}
	return i
}

// SyntaxError is a JSON text's first error, at a byte offset.
type SyntaxError struct {
	Offset int64 // 0-based byte offset in the input
	Line   int   // 1-based
	Col    int   // 1-based byte column
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
}

// ErrEmpty is returned by Validate for input holding no JSON value.
var ErrEmpty = errors.New("json: no JSON value in the input")

// Validate checks that data is exactly one JSON text (RFC 8259), with
// optional surrounding whitespace and a leading UTF-8 byte order mark. It
// returns nil, ErrEmpty, or a *SyntaxError. Invalid UTF-8 inside strings
// is accepted by the package's policy; badUTF8 counts such strings.
func Validate(data []byte) (badUTF8 int, err error) {
	var p Parser
	p.b = new(record.Batch)
	p.data = data
	i := 0
	if len(data) >= 3 && string(data[:3]) == "\xEF\xBB\xBF" {
		i = 3
	}
	i = skipSpace(data, i, len(data))
	if i == len(data) {
		return 0, ErrEmpty
	}
	if j := p.skipValue(i, len(data), 0); j >= 0 {
		if j = skipSpace(data, j, len(data)); j != len(data) {
			p.fail(j, errTrailing)
		}
	}
	if p.errCode == errNone {
		return p.b.BadUTF8, nil
	}
	line, col := 1, 1
	for _, c := range data[:min(p.errPos, len(data))] {
		col++
		if c == '\n' {
			line, col = line+1, 1
		}
	}
	return p.b.BadUTF8, &SyntaxError{Offset: int64(p.errPos), Line: line, Col: col, Msg: p.message()}
}
