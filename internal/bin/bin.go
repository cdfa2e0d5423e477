// Package bin reads the varint-based encodings of sluice's binary formats
// (rows blocks, parts) safely: every read is bounds-checked, the first
// failure sticks, and counts are checked against the bytes left so that a
// corrupt length never causes a huge allocation. It never panics on input.
package bin

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
)

// Reader reads a byte region front to back.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a reader of b.
func NewReader(b []byte) Reader { return Reader{b: b} }

// At returns a reader of b positioned at off.
func At(b []byte, off int) Reader {
	r := Reader{b: b, off: off}
	if off < 0 || off > len(b) {
		r.Fail("offset")
	}
	return r
}

// Err returns the first failure, naming what was being read and where.
func (r *Reader) Err() error { return r.err }

// Off returns the offset of the next read.
func (r *Reader) Off() int { return r.off }

// Len returns how many bytes are left.
func (r *Reader) Len() int { return len(r.b) - r.off }

// Fail records a failure to read what at the current offset.
func (r *Reader) Fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at byte %d", what, r.off)
	}
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.Fail(what)
		return 0
	}
	r.off += n
	return v
}

// Varint reads a signed (zigzag) varint.
func (r *Reader) Varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.Fail(what)
		return 0
	}
	r.off += n
	return v
}

// Varints appends n signed (zigzag) varints to dst, as n calls of
// Varint would (zeros for those after a failure), in one loop: a column
// of numbers is decoded this way, a value of one byte without a call.
func (r *Reader) Varints(dst []int64, n int, what string) []int64 {
	b, off := r.b, r.off
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	out := dst[start:]
	for i := 0; i < n; {
		if r.err != nil {
			clear(out[i:])
			break
		}
		// With 8 bytes at hand and the varint's last among them, its
		// length is where the first byte without the continuation bit
		// is (gather7).
		for i < n && off+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[off:])
			stops := ^w & 0x8080808080808080
			if stops == 0 {
				break // nine bytes or ten: the loop below
			}
			l := bits.TrailingZeros64(stops)/8 + 1
			u := gather7(w & (1<<(8*uint(l)) - 1))
			off += l
			out[i] = int64(u>>1) ^ -int64(u&1)
			i++
		}
		if i == n {
			break
		}
		// One varint as binary.Uvarint reads it, inline: near the end of
		// the bytes, or of nine bytes or more.
		var u uint64
		var shift uint
		j, ok := off, false
		for j < len(b) && j-off < binary.MaxVarintLen64 {
			c := b[j]
			j++
			if c < 0x80 {
				ok = j-off < binary.MaxVarintLen64 || c <= 1
				u |= uint64(c) << shift
				break
			}
			u |= uint64(c&0x7f) << shift
			shift += 7
		}
		if !ok {
			r.off = off
			r.Fail(what)
			out[i] = 0
			i++
			continue
		}
		off = j
		out[i] = int64(u>>1) ^ -int64(u&1)
		i++
	}
	r.off = off
	return dst
}

// Count reads a count of items of at least min bytes each, which the rest
// of the region must be able to hold.
func (r *Reader) Count(what string, min int) int {
	n := r.Uvarint(what)
	if r.err == nil && n > uint64(r.Len())/uint64(min) {
		r.Fail(what)
		return 0
	}
	return int(n)
}

// gather7 joins the 7-bit groups of the bytes of x, least significant
// first: a varint of the bytes up to the first without the continuation
// bit, read without a branch per byte (a loop over the bytes that ends
// after 1, 2, 3 or 4 of them, as the numbers of log lines do in no order,
// mispredicts: 14.7 ns a value against 9.5).
func gather7(x uint64) uint64 {
	return x&0x7f | x>>1&(0x7f<<7) | x>>2&(0x7f<<14) | x>>3&(0x7f<<21) |
		x>>4&(0x7f<<28) | x>>5&(0x7f<<35) | x>>6&(0x7f<<42) | x>>7&(0x7f<<49)
}

// Ends reads n unsigned varints, the lengths of n values stored end to
// end, each at most limit, and appends their running sums (each value's
// end) to dst; it returns the sum as well, which a uint32 end may not
// hold. It reads and fails as n calls of Bounded would. Lengths of short
// values are one byte each: eight such bytes at hand are summed without
// a branch apiece.
func (r *Reader) Ends(dst []uint32, n int, limit uint64, what string) ([]uint32, uint64) {
	b, off := r.b, r.off
	var end uint64
	i := 0
	dst = slices.Grow(dst, n)
	for i < n && r.err == nil {
		if limit >= 0x7f {
			for i+8 <= n && off+8 <= len(b) {
				w := binary.LittleEndian.Uint64(b[off:])
				if w&0x8080808080808080 != 0 {
					break
				}
				for range 8 {
					end += w & 0x7f
					w >>= 8
					dst = append(dst, uint32(end))
				}
				off += 8
				i += 8
			}
			if i == n {
				break
			}
		}
		// Lengths of longer values (two bytes from 128): every varint
		// that ends in the eight bytes at hand is read from them, as
		// Varints reads one; one that does not (near the end of b, or
		// longer than seven bytes) by binary.Uvarint.
		var w, stops uint64
		if off+8 <= len(b) {
			w = binary.LittleEndian.Uint64(b[off:])
			stops = ^w & 0x8080808080808080
		}
		for {
			var v uint64
			var l int
			if stops != 0 {
				l = bits.TrailingZeros64(stops)/8 + 1
				switch l {
				case 1:
					v = w & 0x7f
				case 2:
					v = w&0x7f | w>>1&(0x7f<<7)
				default:
					v = gather7(w & (1<<(8*uint(l)) - 1))
				}
				w >>= 8 * uint(l)
				stops >>= 8 * uint(l)
			} else if v, l = binary.Uvarint(b[off:]); l <= 0 {
				r.off = off // where Uvarint fails
				r.Fail(what)
				break
			}
			if v > limit {
				r.off = off + l // after the value Bounded refuses
				r.Fail(what)
				break
			}
			off += l
			end += v
			dst = append(dst, uint32(end))
			i++
			if stops == 0 || i == n {
				break
			}
		}
	}
	if r.err != nil {
		for ; i < n; i++ {
			dst = append(dst, uint32(end))
		}
		return dst, end
	}
	r.off = off
	return dst, end
}

// Bounded reads an unsigned varint that must be at most limit.
func (r *Reader) Bounded(what string, limit uint64) uint64 {
	n := r.Uvarint(what)
	if r.err == nil && n > limit {
		r.Fail(what)
		return 0
	}
	return n
}

// Bytes reads n bytes, returned as a view with its capacity capped.
func (r *Reader) Bytes(n uint64, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(r.Len()) {
		r.Fail(what)
		return nil
	}
	v := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return v
}

// Byte reads one byte.
func (r *Reader) Byte(what string) byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.Fail(what)
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

// Uint32 reads a little-endian uint32.
func (r *Reader) Uint32(what string) uint32 {
	if v := r.Bytes(4, what); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

// Uint64 reads a little-endian uint64.
func (r *Reader) Uint64(what string) uint64 {
	if v := r.Bytes(8, what); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

// BytesN reads a uvarint length and that many bytes.
func (r *Reader) BytesN(what string) []byte { return r.Bytes(r.Uvarint(what), what) }

// String reads a uvarint length and that many bytes as a string.
func (r *Reader) String(what string) string { return string(r.BytesN(what)) }

// Done fails unless every byte was read.
func (r *Reader) Done(what string) {
	if r.err == nil && r.off != len(r.b) {
		r.Fail(what + ": trailing bytes")
	}
}

// AppendString appends s with its uvarint length.
func AppendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendBytes appends b with its uvarint length.
func AppendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}
