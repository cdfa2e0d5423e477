package json

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
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
// searched for its closing quote with bytes.IndexByte, which is vectorized,
// and only then checked for escapes and control bytes.
func scanString(data []byte, i, end int) (close int, escaped, high bool, code errCode) {
	// Up to 32 bytes, eight at a time: most values end there.
	var hi uint64
	j := i
	for n := 0; n < 4 && j+8 <= end; n++ {
		x := binary.LittleEndian.Uint64(data[j:])
		if m := specialBytes(x); m != 0 {
			k := bits.TrailingZeros64(m) >> 3
			if data[j+k] == '"' && (hi|x&(uint64(1)<<(k*8)-1))&msb == 0 {
				return j + k, false, false, 0
			}
			return scanStringSlow(data, i, end)
		}
		hi |= x
		j += 8
	}
	if hi&msb != 0 || j+8 > end {
		return scanStringSlow(data, i, end)
	}
	// A long string: find its end with the vectorized IndexByte, then
	// check what it spans for escapes and control bytes.
	q := bytes.IndexByte(data[j:end], '"')
	if q < 0 {
		return scanStringSlow(data, i, end)
	}
	close = j + q
	seg := data[j:close]
	if bytes.IndexByte(seg, '\\') >= 0 {
		return scanStringSlow(data, i, end)
	}
	// Any byte < 0x20 or >= 0x80 sets its lane's top bit (a borrow can set
	// more lanes, but only after such a byte).
	var acc uint64
	k := 0
	for ; k+8 <= len(seg); k += 8 {
		y := binary.LittleEndian.Uint64(seg[k:])
		acc |= ((y - lsb*0x20) | y) & msb
	}
	for ; k < len(seg); k++ {
		if c := seg[k]; c < 0x20 || c >= 0x80 {
			acc |= msb
		}
	}
	if acc != 0 {
		return scanStringSlow(data, i, end)
	}
	return close, false, false, 0
}

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
