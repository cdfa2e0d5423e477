package logfmt

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/sluicelog/sluice/internal/parse/swar"
	"github.com/sluicelog/sluice/internal/record"
)

// Parser parses logfmt lines. It holds no state, so its zero value is
// ready and one Parser may serve any number of goroutines.
type Parser struct {
	swar bool // for tests: scan as on machines without AVX2
}

// ParseLine parses one line into a record. See the package doc for the
// grammar and for what fails a line.
//
// With AVX2, it finds the end of each token by a bit scan of the masks of
// a structural pass over the line (see scan.go); without, by a SWAR scan
// of the token's bytes, which costs less than a structural pass without
// vector instructions would.
func (p Parser) ParseLine(bl *record.Builder, line record.Span) {
	vec := useAVX2 && !p.swar
	b := bl.Batch()
	data := b.Data[line.Off:line.End():line.End()]
	base := line.Off
	rest := b.Data[line.Off:] // the line and what follows it: whole words may be read
	bl.Begin(line)
	var small [smallBlocks]block
	var m []block
	// high is set when a byte >= 0x80 has been seen: with vec, anywhere in
	// the line; without, in a token scanned so far. Either way it is set
	// before the check of a token that holds one, and a token without one
	// is valid UTF-8 anyway.
	var high bool
	if vec {
		if nb := numBlocks(len(data)); nb <= smallBlocks {
			m = small[:nb]
		} else {
			bp := getBlocks(nb)
			defer putBlocks(bp)
			m = *bp
		}
		high = structural(rest, len(data), m)
	}
	bad := 0 // values with invalid UTF-8, counted once the line is kept
	i := 0
	for {
		// i is at the line's start or just after a field. Fields are most
		// often one space apart: a test that is almost always right costs
		// less than a bit scan, whose result the next scans wait for.
		if i < len(data) && data[i] <= ' ' {
			i++
		}
		if i >= len(data) || data[i] <= ' ' {
			if vec {
				i = next(m, mStart, i)
			} else {
				i = skipSpace(data, i)
			}
			if i >= len(data) {
				break
			}
		}
		ks := i
		if vec {
			i = next(m, mKeyEnd, i)
		} else {
			i = scanKey(data, i)
			for i < len(data) && data[i] >= utf8.RuneSelf {
				// A key holding non-ASCII bytes: rare; it is validated whole.
				high = true
				i = scanKey(data, i+1)
			}
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
		if high && !utf8.Valid(key) {
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
			esc := false
			for {
				if vec {
					i = next(m, mQuoted, i)
				} else {
					i = scanQuoted(data, i)
				}
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
					// A byte >= 0x80, where the SWAR scan stops.
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
		if vec {
			i = next(m, mSpace, i)
		} else {
			i = scanUnquoted(data, i)
			for i < len(data) && data[i] >= utf8.RuneSelf {
				high = true
				i = scanUnquoted(data, i+1)
			}
		}
		v := data[vs:i]
		kind, flags, num := record.String, record.Flags(0), uint64(0)
		if typed[v[0]] {
			// A value holding a byte >= 0x80 is never typed.
			if vs+8 <= len(rest) {
				kind, num = classifyWord(v, binary.LittleEndian.Uint64(rest[vs:]))
			} else {
				kind, num = classify(v)
			}
		}
		if kind == record.String && high && !utf8.Valid(v) {
			flags = record.BadUTF8
			bad++
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

// classifyWord is classify given x, the value's first eight bytes
// (little-endian; the bytes past its end may be anything): most values
// are typed, or rejected, by SWAR steps on x alone.
// REQUIRES: len(v) > 0, typed[v[0]].
func classifyWord(v []byte, x uint64) (record.Kind, uint64) {
	n := len(v)
	switch byte(x) {
	case 't':
		if n == 4 && uint32(x) == 't'|'r'<<8|'u'<<16|'e'<<24 {
			return record.Bool, 1
		}
		return record.String, 0
	case 'f':
		if n == 5 && x&(1<<40-1) == 'f'|'a'<<8|'l'<<16|'s'<<24|'e'<<32 {
			return record.Bool, 0
		}
		return record.String, 0
	}
	if v[n-1]-'0' > 9 {
		// A number ends with a digit: 1.5ms, 2026-01-15T08:00:00Z.
		return record.String, 0
	}
	neg := 0
	if byte(x) == '-' {
		neg = 1
	}
	w := x >> (8 * neg) // the digits, from the first (w's top byte is 0 after a '-')
	l := n - neg        // their count, if all are digits
	d := swar.LeadingDigits(w)
	switch {
	case l == 0:
		return record.String, 0
	case d >= l:
		// -?[0-9]{1,8}: an Int unless it has a leading zero.
		if l > 1 && byte(w) == '0' {
			return record.String, 0
		}
		u := swar.Parse8(w, l)
		if neg != 0 {
			return record.Int, -u
		}
		return record.Int, u
	case d < min(l, 8-neg):
		// The first byte that is not a digit is in w: a number has a digit
		// before it and goes on with a fraction or an exponent, and a
		// number ends with a digit. 1.5ms and 2026-01-15T08:00:00Z stop here.
		c := byte(w >> (8 * d))
		if d == 0 || c != '.' && c|0x20 != 'e' || d > 1 && byte(w) == '0' {
			return record.String, 0
		}
	}
	return classify(v)
}

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
