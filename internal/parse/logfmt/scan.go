package logfmt

import (
	"encoding/binary"
	"math/bits"
)

// The scanners below look at eight bytes at a time (SWAR). Each builds a
// word whose byte has its high bit set where the byte stops the scan; only
// the lowest flagged byte is exact (a borrow can flag bytes above it), and
// the lowest is all that is used.

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// eqMask flags the bytes of x equal to c (exact for the lowest).
func eqMask(x uint64, c byte) uint64 {
	y := x ^ (lsb * uint64(c))
	return (y - lsb) &^ y
}

// byte classes for the tail loops.
const (
	clSpace = 1 << iota // <= ' '
	clHigh              // >= 0x80
	clEq                // '='
	clQuote             // '"'
	clEsc               // '\\'
)

var class = func() (t [256]uint8) {
	for c := 0; c <= ' '; c++ {
		t[c] = clSpace
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = clHigh
	}
	t['='] = clEq
	t['"'] = clQuote
	t['\\'] = clEsc
	return t
}()

// scanKey returns the index of the first byte at or after i that is
// whitespace, '=', '"' or >= 0x80, or len(b).
func scanKey(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := ((x - 0x21*lsb) | x | eqMask(x, '=') | eqMask(x, '"')) & msb; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if class[b[i]]&(clSpace|clHigh|clEq|clQuote) != 0 {
			return i
		}
	}
	return i
}

// scanUnquoted returns the index of the first byte at or after i that is
// whitespace or >= 0x80, or len(b).
func scanUnquoted(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := ((x - 0x21*lsb) | x) & msb; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if class[b[i]]&(clSpace|clHigh) != 0 {
			return i
		}
	}
	return i
}

// scanQuoted returns the index of the first byte at or after i that is
// '"', '\\' or >= 0x80, or len(b).
func scanQuoted(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := (eqMask(x, '"') | eqMask(x, '\\') | x) & msb; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if class[b[i]]&(clQuote|clEsc|clHigh) != 0 {
			return i
		}
	}
	return i
}
