package stage

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// nearScan is how many bytes indexNear looks at eight at a time before
// it hands the rest of the line to bytes.Index: a pattern's literal (a
// space, `] "`, `" `) is mostly a few bytes after the capture before it,
// where bytes.Index's setup costs more than the scan (BenchmarkIndexNear).
const nearScan = 32

const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// indexNear returns the index of the first occurrence of lit in s, or
// -1, as bytes.Index does (FuzzIndexNear holds it to it), for a lit of at
// least one byte that is likely to be near the start of s: the first
// nearScan bytes are searched eight at a time for lit's first byte
// (SWAR), each candidate checked whole, and the rest by bytes.Index.
func indexNear(s, lit []byte) int {
	c := lit[0]
	pat := uint64(c) * lowBits
	i := 0
	for ; i < nearScan && i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:]) ^ pat
		// A byte of x is zero where s has c: the lowest such byte sets
		// the lowest bit of m; bits above it may be set by the borrow
		// without a c there, so each candidate after the first is
		// checked.
		m := (x - lowBits) &^ x & highBits
		if m == 0 {
			continue
		}
		k := i + bits.TrailingZeros64(m)/8
		if len(lit) == 1 {
			return k
		}
		for {
			if s[k] == c && hasRest(s[k:], lit) {
				return k
			}
			if m &= m - 1; m == 0 {
				break
			}
			k = i + bits.TrailingZeros64(m)/8
		}
	}
	if i < nearScan {
		// Fewer than eight bytes left within the near part: the end of s.
		for ; i < len(s); i++ {
			if s[i] == c && hasRest(s[i:], lit) {
				return i
			}
		}
		return -1
	}
	// No occurrence starts before i.
	if j := bytes.Index(s[i:], lit); j >= 0 {
		return i + j
	}
	return -1
}

// hasRest reports whether s, which starts with lit's first byte, starts
// with lit (a literal is short: a loop costs less than a call).
func hasRest(s, lit []byte) bool {
	if len(s) < len(lit) {
		return false
	}
	s = s[:len(lit)]
	for t := 1; t < len(lit); t++ {
		if s[t] != lit[t] {
			return false
		}
	}
	return true
}
