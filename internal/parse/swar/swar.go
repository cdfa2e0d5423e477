// Package swar holds the word-at-a-time (SIMD within a register) helpers
// that more than one parser uses: reading runs of ASCII digits eight bytes
// at a time. Bytes are in little-endian order: the first byte of the input
// is the lowest byte of the word.
package swar

import "math/bits"

const lsb = 0x0101010101010101

// LeadingDigits counts the ASCII digits at the start (lowest bytes) of x.
// A lane is a digit when its high nibble is 3 and adding 6 keeps it so; a
// carry out of a non-digit lane can only disturb lanes after it.
func LeadingDigits(x uint64) int {
	const hi = 0xF0F0F0F0F0F0F0F0
	m := (x&hi ^ lsb*0x30) | ((x+lsb*0x06)&hi ^ lsb*0x30)
	return bits.TrailingZeros64(m) >> 3
}

// Parse8 returns the value of the first n (1-8) ASCII digits of x: they
// are shifted to the top, the lanes below become leading zeros, and pairs,
// quads and octets are combined by multiplication.
func Parse8(x uint64, n int) uint64 {
	x <<= 8 * uint(8-n)
	x = (x & 0x0F0F0F0F0F0F0F0F) * 2561 >> 8
	x = (x & 0x00FF00FF00FF00FF) * 6553601 >> 16
	return (x & 0x0000FFFF0000FFFF) * 42949672960001 >> 32
}
