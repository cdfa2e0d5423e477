package logfmt

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/sluicelog/sluice/internal/record"
)

// Parser parses logfmt lines. It holds no state, so its zero value is
// ready and one Parser may serve any number of goroutines.
type Parser struct{}

// ParseLine parses one line into a record. See the package doc for the
// grammar and for what fails a line.
func (Parser) ParseLine(bl *record.Builder, line record.Span) {
	b := bl.Batch()
	data := b.Data[line.Off:line.End():line.End()]
	base := line.Off
	bl.Begin(line)
	bad := 0 // values with invalid UTF-8, counted once the line is kept
	i := 0
	for {
		for i < len(data) && data[i] <= ' ' {
			i++
		}
		if i >= len(data) {
			break
		}
		ks := i
		i = scanKey(data, i)
		keyHigh := false
		for i < len(data) && data[i] >= utf8.RuneSelf {
			// A key holding non-ASCII bytes: rare; it is validated whole.
			keyHigh = true
			i = scanKey(data, i+1)
		}
		if i == ks {
			if data[i] == '=' {
				bl.Fail(record.ErrSyntax, i+1, "logfmt: '=' with no key before it")
			} else {
				bl.Fail(record.ErrSyntax, i+1, `logfmt: unexpected '"' where a key should start`)
			}
			return
		}
		key := data[ks:i]
		if i < len(data) && data[i] == '"' {
			bl.Fail(record.ErrSyntax, i+1, fmt.Sprintf(`logfmt: unexpected '"' in key %s`, quote(key)))
			return
		}
		if keyHigh && !utf8.Valid(key) {
			bl.Fail(record.ErrSyntax, ks+1, fmt.Sprintf("logfmt: key %s is not valid UTF-8", quote(key)))
			return
		}
		id, ok := bl.Name(key)
		if !ok {
			bl.Fail(record.ErrTooManyNames, ks+1, fmt.Sprintf("logfmt: field name table full at key %s", quote(key)))
			return
		}
		// The field is passed to Add whole, from locals: a Field built up
		// in memory and then copied stalls on store forwarding.
		if i >= len(data) || data[i] != '=' {
			// A bare key: the empty string, as in Loki.
			bl.Add(record.Field{Name: id, Kind: record.String, Raw: record.Span{Off: base + uint32(i)}})
			continue
		}
		i++ // '='
		if i >= len(data) || data[i] <= ' ' {
			bl.Add(record.Field{Name: id, Kind: record.String, Raw: record.Span{Off: base + uint32(i)}})
			continue
		}
		if data[i] == '"' {
			q := i
			i++
			vs := i
			esc, high := false, false
			for {
				i = scanQuoted(data, i)
				if i >= len(data) {
					bl.Fail(record.ErrSyntax, q+1, fmt.Sprintf("logfmt: unterminated quoted value for key %s", quote(key)))
					return
				}
				c := data[i]
				if c == '"' {
					break
				}
				if c == '\\' {
					// The escaped byte is skipped, but may be non-ASCII.
					esc = true
					high = high || i+1 < len(data) && data[i+1] >= utf8.RuneSelf
					i += 2
				} else {
					high = true
					i++
				}
			}
			v := data[vs:i]
			var flags record.Flags
			if esc {
				flags |= record.Escaped
			}
			if high && !utf8.Valid(v) {
				flags |= record.BadUTF8
				bad++
			}
			i++ // closing '"'
			if i < len(data) && data[i] > ' ' {
				bl.Fail(record.ErrSyntax, i+1, fmt.Sprintf("logfmt: unexpected %q after the quoted value of key %s", data[i], quote(key)))
				return
			}
			bl.Add(record.Field{Name: id, Kind: record.String, Flags: flags, Raw: record.Span{Off: base + uint32(vs), Len: uint32(len(v))}})
			continue
		}
		vs := i
		i = scanUnquoted(data, i)
		high := false
		for i < len(data) && data[i] >= utf8.RuneSelf {
			high = true
			i = scanUnquoted(data, i+1)
		}
		v := data[vs:i]
		kind, flags, num := record.String, record.Flags(0), uint64(0)
		if high {
			if !utf8.Valid(v) {
				flags = record.BadUTF8
				bad++
			}
		} else if typed[v[0]] {
			kind, num = classify(v)
		}
		bl.Add(record.Field{Name: id, Kind: kind, Flags: flags, Raw: record.Span{Off: base + uint32(vs), Len: uint32(len(v))}, Num: num})
	}
	b.BadUTF8 += bad
	bl.End()
}

// typed marks the bytes that may start a value other than a string: most
// values are rejected by this one lookup, without a call.
var typed = func() (t [256]bool) {
	for _, c := range "-0123456789tf" {
		t[c] = true
	}
	return t
}()

// classify types an unquoted value: a JSON integer is Int (BigInt when it
// overflows int64), a JSON number with a fraction or exponent is Float,
// true and false are Bool, anything else String.
// REQUIRES: len(v) > 0.
func classify(v []byte) (record.Kind, uint64) {
	c := v[0]
	switch {
	case c == 't':
		if string(v) == "true" {
			return record.Bool, 1
		}
		return record.String, 0
	case c == 'f':
		if string(v) == "false" {
			return record.Bool, 0
		}
		return record.String, 0
	case c != '-' && (c < '0' || c > '9'):
		return record.String, 0
	}
	// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
	j := 0
	neg := c == '-'
	if neg {
		j++
	}
	if j >= len(v) {
		return record.String, 0
	}
	var u uint64
	big := false
	switch d := v[j]; {
	case d == '0':
		j++
	case d >= '1' && d <= '9':
		for ; j < len(v); j++ {
			d := v[j] - '0'
			if d > 9 {
				break
			}
			if u > (math.MaxUint64-9)/10 {
				big = true
			}
			u = u*10 + uint64(d)
		}
	default:
		return record.String, 0
	}
	if j == len(v) {
		switch {
		case big:
			return record.BigInt, 0
		case neg && u <= 1<<63:
			return record.Int, -u
		case !neg && u <= math.MaxInt64:
			return record.Int, u
		}
		return record.BigInt, 0
	}
	if v[j] == '.' {
		j++
		if j >= len(v) || v[j]-'0' > 9 {
			return record.String, 0
		}
		for j < len(v) && v[j]-'0' <= 9 {
			j++
		}
	}
	if j < len(v) && v[j]|0x20 == 'e' {
		j++
		if j < len(v) && (v[j] == '+' || v[j] == '-') {
			j++
		}
		if j >= len(v) || v[j]-'0' > 9 {
			return record.String, 0
		}
		for j < len(v) && v[j]-'0' <= 9 {
			j++
		}
	}
	if j != len(v) {
		return record.String, 0
	}
	// ParseFloat keeps no reference to its argument (it copies into its
	// error), so a view of v is safe and saves a copy.
	x, err := strconv.ParseFloat(unsafe.String(&v[0], len(v)), 64)
	if err != nil {
		// Out of float64 range: keep the text.
		return record.String, 0
	}
	return record.Float, math.Float64bits(x)
}

// quote quotes a key for an error message, cut short if it is long.
func quote(key []byte) string {
	const max = 64
	if len(key) > max {
		return strconv.Quote(string(key[:max])) + "..."
	}
	return strconv.Quote(string(key))
}
