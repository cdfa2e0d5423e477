package json

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/parse/swar"
)

// SWAR constants: a byte broadcast to all eight lanes of a uint64.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasZero sets the top bit of the lowest zero byte of v (and possibly of
// higher bytes, which callers ignore by taking the lowest set bit).
func hasZero(v uint64) uint64 { return (v - lsb) & ^v & msb }

// scanString scans string content starting at i (just past the opening
// quote) and returns the index of the closing quote, whether the content
// holds escapes, whether it holds bytes >= 0x80, and an error code. Escapes
// are validated here; UTF-8 is validated by the caller only when high is
// set, which ASCII logs never pay for.
//
// Most strings in logs are short keys and values without escapes, so the
// first eight bytes are checked with one SWAR step; a longer string is
// searched 32 bytes at a time (specialIndex). Strings with escapes, control
// bytes or non-ASCII text are left to scanStringSlow.
func scanString(data []byte, i, end int) (close int, escaped, high bool, code errCode) {
	if i+8 <= end {
		x := binary.LittleEndian.Uint64(data[i:])
		if m := specialBytes(x) | x&msb; m != 0 {
			if k := i + trailingByte(m); data[k] == '"' {
				return k, false, false, 0
			}
			return scanStringSlow(data, i, end)
		}
		// A longer string: find the first byte that needs a closer look.
		if k := specialIndex(data, i+8, end); k < end && data[k] == '"' {
			return k, false, false, 0
		}
	}
	return scanStringSlow(data, i, end)
}

// digitRun reads the run of decimal digits at data[i:end], eight at a time,
// appending them to u (u*10^n + run). It returns the new u, the run's
// length n and the index after it. u is exact while the total number of
// digits stays within 19; callers that need more check n.
func digitRun(data []byte, i, end int, u uint64) (uint64, int, int) {
	start := i
	for i+8 <= end {
		x := binary.LittleEndian.Uint64(data[i:])
		n := swar.LeadingDigits(x)
		if n > 0 {
			u = u*pow10u[n] + swar.Parse8(x, n)
			i += n
		}
		if n < 8 {
			return u, i - start, i
		}
	}
	for i < end && data[i]-'0' < 10 {
		u = u*10 + uint64(data[i]-'0')
		i++
	}
	return u, i - start, i
}

var pow10u = [9]uint64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000}

// specialBytes sets the top bit of the lowest byte of x that is '"', '\\'
// or a control byte (and maybe of higher bytes).
func specialBytes(x uint64) uint64 {
	return hasZero(x^(lsb*'"')) | hasZero(x^(lsb*'\\')) | ((x - lsb*0x20) & ^x & msb)
}

// scanStringSlow is scanString for strings holding escapes, control bytes
// or bytes >= 0x80, and for the end of the line.
func scanStringSlow(data []byte, i, end int) (close int, escaped, high bool, code errCode) {
	var hi uint64
	for {
		// Eight bytes at a time: stop at '"', '\\' or a control byte.
		for i+8 <= end {
			x := binary.LittleEndian.Uint64(data[i:])
			if m := specialBytes(x); m != 0 {
				n := bits.TrailingZeros64(m) >> 3
				hi |= x & (uint64(1)<<(n*8) - 1) & msb
				i += n
				goto special
			}
			hi |= x & msb
			i += 8
		}
		for ; i < end; i++ {
			c := data[i]
			if c == '"' || c == '\\' || c < 0x20 {
				goto special
			}
			hi |= uint64(c) & 0x80
		}
		return i, escaped, hi != 0, errUnterminatedString

	special:
		switch c := data[i]; {
		case c == '"':
			return i, escaped, hi != 0, 0
		case c == '\\':
			escaped = true
			if i+1 >= end {
				return i, escaped, hi != 0, errUnterminatedString
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > end || !isHex4(data[i+2:i+6]) {
					return i, escaped, hi != 0, errBadUnicodeEscape
				}
				i += 6
			default:
				return i, escaped, hi != 0, errBadEscape
			}
		default:
			return i, escaped, hi != 0, errControlChar
		}
	}
}

func isHex4(b []byte) bool {
	return hexDigit[b[0]]&hexDigit[b[1]]&hexDigit[b[2]]&hexDigit[b[3]] != 0
}

var hexDigit = func() (t [256]uint8) {
	for _, c := range []byte("0123456789abcdefABCDEF") {
		t[c] = 1
	}
	return t
}()

// validUTF8 reports whether b is valid UTF-8.
func validUTF8(b []byte) bool { return utf8.Valid(b) }

// isSpace reports JSON whitespace. '\n' only occurs in --whole input.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func skipSpace(data []byte, i, end int) int {
	for i < end && isSpace(data[i]) {
		i++
	}
	return i
}
