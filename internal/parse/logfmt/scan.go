package logfmt

import (
	"encoding/binary"
	"math/bits"
	"sync"
)

// With AVX2, the parser finds the end of every token by a bit scan. A
// structural pass first classifies each byte of the line, 32 at a time,
// into masks of one bit per byte, per 64-byte block; scanning to the next
// byte of a class is then a shift and a trailing-zero count, without a
// loop over the token's bytes or a branch that depends on its length.

// block holds the masks of 64 bytes of a line, indexed by mStart...
// Each mask also has the bits of the bytes at and past the line's end
// set, so that every scan stops there.
type block [4]uint64

const (
	mStart  = iota // not whitespace: where a key starts
	mSpace         // whitespace (<= ' '): where an unquoted value ends
	mKeyEnd        // whitespace, '=' or '"': where a key ends
	mQuoted        // '"' or '\\': where a quoted value may end
)

// numBlocks is the number of blocks next needs for a line of n bytes: it
// may be asked for positions up to n+1.
func numBlocks(n int) int { return (n+1)>>6 + 1 }

// smallBlocks is the number of blocks a line's masks can have on the
// stack: lines of up to 254 bytes.
const smallBlocks = 4

// next returns the index of the first byte at or after i that has mask x
// set in m: at most n+1 for a line of n bytes when i <= n+1.
// REQUIRES: m holds the masks of the line (see structural).
func next(m []block, x, i int) int {
	k := i >> 6
	w := m[k][x&3] >> (i & 63)
	for w == 0 {
		k++
		w = m[k][x&3]
		i = k << 6
	}
	return i + bits.TrailingZeros64(w)
}

// structural fills m, numBlocks(n) blocks, with the masks of the line
// data[:n], and reports whether the line has a byte >= 0x80. Bytes of
// data past the line, if any, are read but mean nothing.
// REQUIRES: useAVX2.
func structural(data []byte, n int, m []block) bool {
	// Whole blocks are read where data has them; the last, short, from a
	// copy.
	k := min(len(data)>>6, len(m))
	h := false
	if k > 0 {
		h = structuralAVX2(&data[0], n, &m[0], k)
	}
	if k < len(m) {
		h = tailAVX2(data[min(64*k, n):n], n-64*k, &m[k], len(m)-k) || h
	}
	return h
}

// tailAVX2 runs the AVX2 pass on a copy of tail, the last rem bytes of a
// line (none if rem <= 0), too close to the end of the batch's data to be
// read as a whole block.
// REQUIRES: len(tail) < 64.
func tailAVX2(tail []byte, rem int, m *block, nblk int) bool {
	var buf [64]byte
	copy(buf[:], tail)
	return structuralAVX2(&buf[0], rem, m, nblk)
}

// blockPool holds the masks of lines too long for the stack.
var blockPool = sync.Pool{New: func() any { return new([]block) }}

// maxPooledBlocks bounds the masks kept in blockPool: those of a 1 MiB
// line.
const maxPooledBlocks = 1 << 14

// getBlocks returns room for the masks of n blocks, from blockPool.
func getBlocks(n int) *[]block {
	p := blockPool.Get().(*[]block)
	if cap(*p) < n {
		*p = make([]block, n)
	}
	*p = (*p)[:n]
	return p
}

// putBlocks returns what getBlocks gave to blockPool, unless it is large.
func putBlocks(p *[]block) {
	if cap(*p) > maxPooledBlocks {
		return
	}
	blockPool.Put(p)
}

// Without AVX2, the scanners below look at eight bytes at a time (SWAR).
// Each builds a word whose byte has its high bit set where the byte stops
// the scan; only the lowest flagged byte is exact (a borrow can flag bytes
// above it), and the lowest is all that is used. Unlike the masks, they
// stop at bytes >= 0x80 too: that is how the parser learns of them.

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

// skipSpace returns the index of the first byte at or after i that is not
// whitespace, or len(b) (or i, if more).
func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' {
		i++
	}
	return i
}

// scanKey returns the index of the first byte at or after i that is
// whitespace, '=', '"' or >= 0x80, or len(b) (or i, if more).
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
// whitespace or >= 0x80, or len(b) (or i, if more).
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
// '"', '\\' or >= 0x80, or len(b) (or i, if more).
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
