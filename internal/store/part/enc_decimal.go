package part

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/sluicelog/sluice/internal/bin"
	"github.com/sluicelog/sluice/internal/timestamp"
)

// The decimal encoding (encDecimal): decimal fractions of at most 18
// digits, stored as a varint mantissa and a scale byte each, rebuilt
// byte for byte (and so always JSON numbers).

func decimalsExact(c *column) bool {
	var buf [32]byte
	for i := range c.ends {
		v := c.value(i)
		m, scale, ok := parseDecimal(v)
		if !ok || !bytes.Equal(appendDecimal(buf[:0], m, scale), v) {
			return false
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.Float64bits(f) != c.nums[i] {
			return false
		}
	}
	return true
}

// parseDecimal reads -?digits[.digits] with at most 18 digits as a
// mantissa and a count of fraction digits.
func parseDecimal(v []byte) (int64, byte, bool) {
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		v = v[1:]
	}
	var m int64
	digits, scale := 0, -1
	for i, ch := range v {
		switch {
		case ch >= '0' && ch <= '9':
			m = m*10 + int64(ch-'0')
			digits++
			if scale >= 0 {
				scale++
			}
		case ch == '.' && scale < 0 && i > 0:
			scale = 0
		default:
			return 0, 0, false
		}
	}
	if digits == 0 || digits > 18 || scale <= 0 {
		return 0, 0, false
	}
	if neg {
		m = -m
	}
	return m, byte(scale), true
}

// appendDecimal writes m with scale fraction digits: 5 and 2 give 0.05.
func appendDecimal(dst []byte, m int64, scale byte) []byte {
	if m < 0 {
		dst = append(dst, '-')
		m = -m
	}
	var buf [24]byte
	digits := strconv.AppendInt(buf[:0], m, 10)
	whole := len(digits) - int(scale)
	if whole <= 0 {
		dst = append(dst, '0', '.')
		for range -whole {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:whole]...)
	dst = append(dst, '.')
	return append(dst, digits[whole:]...)
}

// decimalLen is the length of appendDecimal's text for m and scale.
func decimalLen(m int64, scale byte) int {
	n := timestamp.IntLen(m) // its sign and digits
	digits := n
	if m < 0 {
		digits--
	}
	if whole := digits - int(scale); whole <= 0 {
		return n - digits + 2 + int(scale) // 0.<zeros><digits>
	}
	return n + 1
}

// appendDecimals appends a decimal column's mantissas as varints, then
// their scales (s is scratch, returned grown).
func appendDecimals(col []byte, c *column, s []byte) (_, _ []byte) {
	s = s[:0]
	scales := make([]byte, 0, len(c.ends))
	for i := range c.ends {
		m, scale, _ := parseDecimal(c.value(i))
		s = binary.AppendVarint(s, m)
		scales = append(scales, scale)
	}
	return bin.AppendBytes(bin.AppendBytes(col, s), scales), s
}

// decimalValue appends value i of a decimal column to dst and returns it
// with its number (none with linesOnly).
func (c *colData) decimalValue(i int, dst []byte, linesOnly bool) (v, out []byte, num uint64, err error) {
	n, err := c.intAt(i)
	if err != nil {
		return nil, dst, 0, err
	}
	start := len(dst)
	dst = appendDecimal(dst, n, c.scales[i])
	v = dst[start:]
	if linesOnly {
		return v, dst, 0, nil
	}
	f, perr := strconv.ParseFloat(string(v), 64)
	if perr != nil {
		return nil, dst, 0, fmt.Errorf("value %d: decimal %q", i, v)
	}
	return v, dst, math.Float64bits(f), nil
}

// decimalAlphabet holds every byte a decimal's text may have.
var decimalAlphabet = asciiSet("-.0123456789")
