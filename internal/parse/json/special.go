package json

import (
	"encoding/binary"
	"math/bits"
)

// specialIndex returns the index of the first byte of data[i:end] that is
// '"', '\\', < 0x20 or >= 0x80, or end when there is none: where a string
// scan must look closer. 32 bytes at a time with AVX2, else (and for the
// tail) 8 at a time.
func specialIndex(data []byte, i, end int) int {
	if useAVX2 && end-i >= 32 {
		k := specialBlocks(data[i:end])
		if k < (end-i)&^31 {
			return i + k
		}
		i += k
	}
	for ; i+8 <= end; i += 8 {
		x := binary.LittleEndian.Uint64(data[i:])
		if m := specialBytes(x) | x&msb; m != 0 {
			return i + trailingByte(m)
		}
	}
	for ; i < end; i++ {
		if c := data[i]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			return i
		}
	}
	return end
}

// trailingByte is the index of the lowest byte of m with its top bit set.
func trailingByte(m uint64) int { return bits.TrailingZeros64(m) >> 3 }
