package literal

import (
	"encoding/binary"
	"slices"
)

// AppendLower appends b to dst with its ASCII capitals lowercased, the
// other bytes (UTF-8 sequences among them) unchanged: what a search
// that folds ASCII case compares. Eight bytes are lowered at a time, a
// folding search of a column's values lowering them end to end. b must
// not overlap dst's spare capacity.
func AppendLower(dst, b []byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, len(b))[:n+len(b)]
	out := dst[n:]
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// Each byte's low seven bits plus 63 reach 128 from 'A' on,
		// plus 37 from '['; no sum carries into the next byte.
		h := x & 0x7f7f7f7f7f7f7f7f
		upper := (h + 63*lsb) &^ (h + 37*lsb) &^ x & msb
		binary.LittleEndian.PutUint64(out[i:], x|upper>>2)
	}
	for ; i < len(b); i++ {
		c := b[i]
		if c-'A' < 26 {
			c |= 0x20
		}
		out[i] = c
	}
	return dst
}

const (
	lsb = 0x0101010101010101 // the lowest bit of each byte
	msb = 0x8080808080808080 // the highest bit of each byte
)
