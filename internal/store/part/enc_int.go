package part

import (
	"bytes"
	"encoding/binary"
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

// loadNumbers reads an integer or decimal column's numbers (and a
// decimal one's scales).
func (c *colData) loadNumbers(r *bin.Reader) {
	s := r.BytesN("column part")
	ir := bin.NewReader(s)
	c.ints = ir.Varints(slices.Grow(c.ints[:0], c.n), c.n, "integer")
	ir.Done("integers")
	if err := ir.Err(); err != nil {
		r.Fail(err.Error())
	}
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
		// At most 18 digits, as written: every value renders as a
		// JSON number (readers rely on it).
		for _, m := range c.ints {
			if m <= -1e18 || m >= 1e18 {
				r.Fail("decimal out of range")
				break
			}
		}
	}
}

// intAlphabet holds every byte an integer's text may have: a literal
// with another byte is in no value of the column.
var intAlphabet = asciiSet("-0123456789")
