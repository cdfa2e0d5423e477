package sdk

import (
	"math"
	"slices"
	"strconv"
)

// appendInt appends n in decimal, as strconv.AppendInt(dst, n, 10) does,
// two digits at a time.
func appendInt(dst []byte, n int64) []byte {
	u := uint64(n)
	if n < 0 {
		dst = append(dst, '-')
		u = -u
	}
	return appendUint(dst, u)
}

// appendUint appends u in decimal, as strconv.AppendUint(dst, u, 10)
// does: its digits counted first, then written in place, two at a time.
func appendUint(dst []byte, u uint64) []byte {
	if u < 10 {
		return append(dst, byte('0'+u))
	}
	if u < 100 {
		return append(dst, digitPairs[2*u], digitPairs[2*u+1])
	}
	n := 3
	for p := uint64(1000); n < 20 && u >= p; p *= 10 {
		n++
	}
	i := len(dst)
	dst = slices.Grow(dst, n)[:i+n]
	d := dst[i:]
	for u >= 100 {
		q := u / 100
		r := u - q*100
		n -= 2
		d[n], d[n+1] = digitPairs[2*r], digitPairs[2*r+1]
		u = q
	}
	if u >= 10 {
		d[0], d[1] = digitPairs[2*u], digitPairs[2*u+1]
	} else {
		d[0] = byte('0' + u)
	}
	return dst
}

// appendFloat appends f as strconv.AppendFloat(dst, f, 'g', -1, 64)
// does, byte for byte.
//
// Most logged floats (ratios, seconds, sizes) have a few decimal digits
// and a magnitude printed without an exponent; for those it avoids
// strconv's general shortest-digits search. If |f| is in [1e-4, 1e6),
// 'g' prints it as a plain decimal (its exponent is from -4 to 5), and
// the decimals of at most 8 fractional digits near f are 1e-8 apart
// while f's neighbours are at most 2^-33 (about 1.2e-10) away: at most
// one of them reads back as f. If n/1e8 (n = f*1e8 rounded, exact below
// 2^53) reads back as f, then it is that one, every shorter decimal that
// reads back as f is it with trailing zeros cut, and so the shortest is
// n with its trailing zeros cut, which strconv prints. Otherwise
// strconv does the work.
func appendFloat(dst []byte, f float64) []byte {
	a := math.Abs(f)
	if f == 0 {
		if math.Signbit(f) {
			return append(dst, '-', '0')
		}
		return append(dst, '0')
	}
	if !(a >= 1e-4 && a < 1e6) { // NaN too
		return strconv.AppendFloat(dst, f, 'g', -1, 64)
	}
	n := uint64(a*1e8 + 0.5)
	if float64(n)/1e8 != a {
		return strconv.AppendFloat(dst, f, 'g', -1, 64)
	}
	if f < 0 {
		dst = append(dst, '-')
	}
	whole, frac := n/1e8, n%1e8
	dst = appendUint(dst, whole)
	if frac == 0 {
		return dst
	}
	var d [9]byte
	d[0] = '.'
	for i := 7; i > 0; i -= 2 {
		q := frac / 100
		r := frac - q*100
		d[i], d[i+1] = digitPairs[2*r], digitPairs[2*r+1]
		frac = q
	}
	end := len(d)
	for d[end-1] == '0' {
		end--
	}
	return append(dst, d[:end]...)
}
