package part

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"strconv"

	"github.com/sluicelog/sluice/internal/bin"
)

// The integer encoding (encInt): values that are exactly their
// number's decimal text, stored as zigzag varints.

func intsExact(c *column) bool {
	for i := range c.ends {
		if !intExact(c, i) {
			return false
		}
	}
	return true
}

// intExact reports whether value i is its number's decimal text.
func intExact(c *column, i int) bool {
	var buf [24]byte
	return bytes.Equal(strconv.AppendInt(buf[:0], int64(c.nums[i]), 10), c.value(i))
}

// appendInts appends an integer column's numbers as varints (s is
// scratch, returned grown).
func appendInts(col []byte, c *column, s []byte) (_, _ []byte) {
	s = s[:0]
	for _, n := range c.nums[:len(c.ends)] {
		s = binary.AppendVarint(s, int64(n))
	}
	return bin.AppendBytes(col, s), s
}

// loadNumbers takes an integer or decimal column's numbers (and a
// decimal one's scales). The varints are counted, not decoded: a block
// read for a few rows (a needle's, the newest lines of a filter) renders
// a value or two of each column, which intAt finds in the varints, and
// the first reader of many values decodes them all (decodeInts).
func (c *colData) loadNumbers(r *bin.Reader) {
	s := r.BytesN("column part")
	if !varintCount(s, c.n) {
		r.Fail("integers")
	}
	c.varints = s // intAt's state is reset's, as a block's columns are
	if c.enc == encDecimal {
		c.scales = r.BytesN("column part")
		if len(c.scales) != c.n {
			r.Fail("scale count")
		}
		for _, sc := range c.scales {
			if sc == 0 || sc > 18 {
				r.Fail("scale")
				break
			}
		}
	}
}

// varintCount reports whether s is n varints exactly: n bytes without
// the continuation bit, the last byte one of them.
func varintCount(s []byte, n int) bool {
	if len(s) == 0 || s[len(s)-1] >= 0x80 {
		return len(s) == 0 && n == 0
	}
	stops, i := 0, 0
	for ; i+8 <= len(s); i += 8 {
		stops += bits.OnesCount64(^binary.LittleEndian.Uint64(s[i:]) & 0x8080808080808080)
	}
	for ; i < len(s); i++ {
		if s[i] < 0x80 {
			stops++
		}
	}
	return stops == n
}

// Single reads of a column's numbers before intAt decodes them all. A
// read skips to its varint eight bytes a step, counting the bytes that
// end one rather than decoding them, and decodes it: some 25 ns a read
// walking back, where decoding the column costs some 10 ns a value
// (BenchmarkIntAtBackward, BenchmarkDecodeInts). The column is decoded
// whole once the reads have skipped its length, or made lazyIntReads
// reads each a little after the last (a walk forward through the rows),
// or an eighth as many reads as it has values.
const lazyIntReads = 32

// intAt returns number vi of an integer or decimal column.
func (c *colData) intAt(vi int) (int64, error) {
	if c.intsOK {
		return c.ints[vi], nil // inlined: a row loop's common case
	}
	return c.intAtSlow(vi)
}

// intAtSlow is intAt before the column is decoded, or after it failed.
func (c *colData) intAtSlow(vi int) (int64, error) {
	if !c.intsDone && (c.intsNext >= lazyIntReads || c.intsReads >= max(lazyIntReads, c.n/8) || c.intsSkipped > len(c.varints)) {
		c.decodeInts()
	}
	if c.intsDone {
		if c.intsErr != nil {
			return 0, c.intsErr
		}
		return c.ints[vi], nil
	}
	c.intsReads++
	// From the nearest known start: the first value's, the last read's
	// end, or the column's end (a walk from the newest row reads the
	// last values first).
	var off int
	switch back, fwd, end := c.intsAt-vi, vi-c.intsAt, c.n-vi; {
	case fwd >= 0 && fwd <= end:
		off = skipVarints(c.varints, c.intsOff, fwd)
		c.intsSkipped += off - c.intsOff
		if fwd < 64 {
			c.intsNext++ // a walk forward, as the rows of a block go
		}
	case back > 0 && back <= vi && back <= end:
		off = skipBack(c.varints, c.intsOff, back)
		c.intsSkipped += c.intsOff - off
	case vi <= end:
		off = skipVarints(c.varints, 0, vi)
		c.intsSkipped += off
	default:
		off = skipBack(c.varints, len(c.varints), end)
		c.intsSkipped += len(c.varints) - off
	}
	m, l := binary.Varint(c.varints[off:])
	if l <= 0 {
		return 0, fmt.Errorf("%w: value %d: integer", ErrCorrupt, vi)
	}
	if c.enc == encDecimal && !decimalInRange(m) {
		return 0, fmt.Errorf("%w: value %d: decimal out of range", ErrCorrupt, vi)
	}
	c.intsAt, c.intsOff = vi+1, off+l
	return m, nil
}

// skipBack returns the offset in s of the varint k before the one that
// starts at off (k > 0): the byte after the (k+1)-th byte without the
// continuation bit below off, or 0 when there are k or fewer. s holds
// varints (varintCount).
func skipBack(s []byte, off, k int) int {
	k++
	for off >= 8 {
		stops := ^binary.LittleEndian.Uint64(s[off-8:]) & 0x8080808080808080
		if n := bits.OnesCount64(stops); n < k {
			k -= n
			off -= 8
			continue
		}
		for range k - 1 {
			stops &^= 1 << (63 - bits.LeadingZeros64(stops))
		}
		return off - 8 + (63-bits.LeadingZeros64(stops))/8 + 1
	}
	for off > 0 {
		off--
		if s[off] < 0x80 {
			if k--; k == 0 {
				return off + 1
			}
		}
	}
	return 0
}

// decodeInts decodes every number of the column into c.ints (an error in
// c.intsErr).
func (c *colData) decodeInts() error {
	if c.intsDone {
		return c.intsErr
	}
	c.intsDone = true
	ir := bin.NewReader(c.varints)
	c.ints = ir.Varints(slices.Grow(c.ints[:0], c.n), c.n, "integer")
	ir.Done("integers")
	if err := ir.Err(); err != nil {
		c.intsErr = fmt.Errorf("%w: %v", ErrCorrupt, err)
		return c.intsErr
	}
	if c.enc == encDecimal && slices.ContainsFunc(c.ints, func(m int64) bool { return !decimalInRange(m) }) {
		c.intsErr = fmt.Errorf("%w: decimal out of range", ErrCorrupt)
	}
	c.intsOK = c.intsErr == nil
	return c.intsErr
}

// decimalInRange reports whether a decimal's mantissa has at most 18
// digits, as written: every value renders as a JSON number (readers rely
// on it).
func decimalInRange(m int64) bool { return m > -1e18 && m < 1e18 }

// skipVarints returns the offset in s of the varint k after the one that
// starts at off: the k-th byte without the continuation bit from off
// ends the last one passed. s holds them (varintCount).
func skipVarints(s []byte, off, k int) int {
	for k > 0 && off+8 <= len(s) {
		stops := ^binary.LittleEndian.Uint64(s[off:]) & 0x8080808080808080
		if n := bits.OnesCount64(stops); n < k {
			k -= n
			off += 8
			continue
		}
		for range k - 1 {
			stops &= stops - 1
		}
		return off + bits.TrailingZeros64(stops)/8 + 1
	}
	for ; k > 0 && off < len(s); off++ {
		if s[off] < 0x80 {
			k--
		}
	}
	return off
}

// intAlphabet holds every byte an integer's text may have: a literal
// with another byte is in no value of the column.
var intAlphabet = asciiSet("-0123456789")
