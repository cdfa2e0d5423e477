package timestamp

import (
	"math"
	"strconv"
)

// The largest magnitudes that fit int64 nanoseconds in each unit.
const (
	maxSec = math.MaxInt64 / 1_000_000_000 // 2262-04-11
	maxMs  = math.MaxInt64 / 1_000_000
	maxUs  = math.MaxInt64 / 1_000
)

// unitOf returns the nanoseconds per unit of the coarsest unit (s, ms, µs,
// ns) in which an epoch of magnitude mag fits int64 nanoseconds.
func unitOf(mag uint64) int64 {
	switch {
	case mag <= maxSec:
		return 1e9
	case mag <= maxMs:
		return 1e6
	case mag <= maxUs:
		return 1e3
	}
	return 1
}

// FromEpoch interprets an integer Unix epoch by magnitude: seconds,
// milliseconds, microseconds or nanoseconds, and returns Unix nanoseconds.
//
// The unit is the coarsest in which v fits int64 nanoseconds, so the
// result never overflows. For every time from 1970-04-17 to 2262 this is
// the unit the digit count suggests: 10 digits are seconds, 13
// milliseconds, 16 microseconds and 19 nanoseconds; 11 or 12 digits are
// milliseconds (seconds would be past 2262), and small values are seconds.
// Negative values are scaled by their magnitude.
func FromEpoch(v int64) int64 {
	mag := uint64(v)
	if v < 0 {
		mag = -mag
	}
	return v * unitOf(mag)
}

// FromEpochFloat interprets a float epoch by magnitude, as FromEpoch does
// with its integer part (1768464000.123 seconds, 1768464000123.5
// milliseconds). It returns false for NaN, ±Inf and magnitudes beyond
// int64 nanoseconds.
//
// The fraction is read from the shortest decimal that identifies f, the
// digits a JSON encoder wrote, so 1768464000.123 gives .123000000 s
// exactly rather than the .122999907 s its binary value holds. That costs
// a float formatting (tens of ns); callers holding the text should call
// Parse on it instead. From 2^53 on, where every float is an integer, its
// exact value is used.
func FromEpochFloat(f float64) (int64, bool) {
	if math.IsNaN(f) {
		return 0, false
	}
	neg := f < 0
	if neg {
		f = -f
	}
	if f >= 1<<63 { // also +Inf
		return 0, false
	}
	var ns int64
	switch {
	case f < 1:
		// Seconds, and formatting a tiny float in 'f' form would take
		// hundreds of digits.
		ns = int64(math.Round(f * 1e9))
	case f >= 1<<53:
		// An integer, exactly: its own value beats its shortest
		// decimal's trailing zeros.
		ns = FromEpoch(int64(f))
	default:
		// INVARIANT: 1 <= f < 2^53 formats in at most 16 integer
		// digits, a '.' and at most 16 more: well within buf, so
		// AppendFloat never allocates.
		var buf [48]byte
		var ok bool
		if ns, ok = parseEpoch(strconv.AppendFloat(buf[:0], f, 'f', -1, 64)); !ok {
			return 0, false
		}
	}
	if neg {
		ns = -ns
	}
	return ns, true
}

// parseEpoch reads a whole unsigned epoch in decimal, 1–19 digits with an
// optional '.' and fraction, scaled by the magnitude of its integer part
// as FromEpoch does. Fraction digits finer than a nanosecond are checked
// and dropped.
func parseEpoch(b []byte) (int64, bool) {
	var v uint64
	i := 0
	for ; i < len(b) && isDigit(b[i]); i++ {
		if i == 19 {
			return 0, false
		}
		v = v*10 + uint64(b[i]-'0')
	}
	if i == 0 || v > math.MaxInt64 {
		return 0, false
	}
	unit := unitOf(v)
	ns := int64(v) * unit
	if i == len(b) {
		return ns, true
	}
	if b[i] != '.' || i+1 == len(b) {
		return 0, false
	}
	var f int64
	scale := unit
	for _, c := range b[i+1:] {
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		if scale > 1 {
			scale /= 10
			f += int64(d) * scale
		}
	}
	if ns > math.MaxInt64-f {
		return 0, false
	}
	return ns + f, true
}
