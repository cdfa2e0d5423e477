package timestamp

import (
	"math/bits"
	"strconv"
)

// Shape is how a timestamp was written: enough to write the same text
// again from its Unix nanoseconds. The store keeps a record's time once, as
// a number, and rebuilds the time field's text from it and its Shape.
//
// A Shape is a guess from the text's layout; only the round trip proves it,
// so callers compare Append's output with the original and keep the text
// when they differ.
type Shape struct {
	Kind    ShapeKind
	Sep     byte  // Civil: between date and time, 'T' or ' '
	FracSep byte  // Civil: before the fraction, '.' or ','; 0 without one
	Digits  uint8 // Civil: fraction digits, 0–9
	Zone    ZoneKind
	Offset  int16 // Civil with ZoneColon or ZoneNoColon: minutes east of UTC
}

// ShapeKind tells the family of a Shape.
type ShapeKind uint8

const (
	// Civil is 2006-01-02T15:04:05[.frac][zone].
	Civil ShapeKind = iota + 1
	// EpochS, EpochMs, EpochUs and EpochNs are a decimal integer count of
	// seconds, milliseconds, microseconds or nanoseconds.
	EpochS
	EpochMs
	EpochUs
	EpochNs
)

// ZoneKind is how a Civil shape ends.
type ZoneKind uint8

const (
	ZoneNone    ZoneKind = iota // no zone: the text is UTC
	ZoneZ                       // Z
	ZoneColon                   // +07:00
	ZoneNoColon                 // +0700
)

// DetectShape guesses the shape of a timestamp's text.
func DetectShape(b []byte) (Shape, bool) {
	if n := len(b); n > 0 && allDigits(b) {
		switch {
		case n <= 10:
			return Shape{Kind: EpochS}, true
		case n <= 13:
			return Shape{Kind: EpochMs}, true
		case n <= 16:
			return Shape{Kind: EpochUs}, true
		case n <= 19:
			return Shape{Kind: EpochNs}, true
		}
		return Shape{}, false
	}
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || b[13] != ':' || b[16] != ':' || (b[10] != 'T' && b[10] != ' ') {
		return Shape{}, false
	}
	s := Shape{Kind: Civil, Sep: b[10]}
	rest := b[19:]
	if len(rest) > 0 && (rest[0] == '.' || rest[0] == ',') {
		s.FracSep = rest[0]
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i-1 > 9 {
			return Shape{}, false
		}
		s.Digits = uint8(i - 1)
		rest = rest[i:]
	}
	switch {
	case len(rest) == 0:
		s.Zone = ZoneNone
	case len(rest) == 1 && rest[0] == 'Z':
		s.Zone = ZoneZ
	case (len(rest) == 6 && rest[3] == ':' || len(rest) == 5) && (rest[0] == '+' || rest[0] == '-'):
		s.Zone = ZoneNoColon
		mm := rest[3:5]
		if len(rest) == 6 {
			s.Zone, mm = ZoneColon, rest[4:6]
		}
		if !allDigits(rest[1:3]) || !allDigits(mm) {
			return Shape{}, false
		}
		off := int16((rest[1]-'0')*10+rest[2]-'0')*60 + int16((mm[0]-'0')*10+mm[1]-'0')
		if rest[0] == '-' {
			off = -off
		}
		s.Offset = off
	default:
		return Shape{}, false
	}
	return s, true
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Append appends ns written in shape s.
func (s Shape) Append(dst []byte, ns int64) []byte {
	switch s.Kind {
	case EpochS:
		return strconv.AppendInt(dst, ns/1e9, 10)
	case EpochMs:
		return strconv.AppendInt(dst, ns/1e6, 10)
	case EpochUs:
		return strconv.AppendInt(dst, ns/1e3, 10)
	case EpochNs:
		return strconv.AppendInt(dst, ns, 10)
	case Civil:
	default:
		return dst
	}
	days, sod, nsec := splitNano(ns + int64(s.Offset)*60*nsPerSec)
	year, month, day := civilFromDays(days)
	var b [35]byte
	put2(b[0:], year/100)
	put2(b[2:], year%100)
	b[4], b[7], b[10], b[13], b[16] = '-', '-', s.Sep, ':', ':'
	put2(b[5:], month)
	put2(b[8:], day)
	put2(b[11:], sod/3600)
	put2(b[14:], sod/60%60)
	put2(b[17:], sod%60)
	n := 19
	if s.FracSep != 0 {
		b[n] = s.FracSep
		n++
		div := nsPerSec / 10
		for range s.Digits {
			b[n] = byte('0' + nsec/div%10)
			div /= 10
			n++
		}
	}
	switch s.Zone {
	case ZoneZ:
		b[n] = 'Z'
		n++
	case ZoneColon, ZoneNoColon:
		off := int(s.Offset)
		b[n] = '+'
		if off < 0 {
			b[n], off = '-', -off
		}
		put2(b[n+1:], off/60%100)
		n += 3
		if s.Zone == ZoneColon {
			b[n] = ':'
			n++
		}
		put2(b[n:], off%60)
		n += 2
	}
	return append(dst, b[:n]...)
}

// Len returns the length of the text Append writes for ns, without
// writing it: a civil shape's is the same for every time.
func (s Shape) Len(ns int64) int {
	switch s.Kind {
	case EpochS:
		return IntLen(ns / 1e9)
	case EpochMs:
		return IntLen(ns / 1e6)
	case EpochUs:
		return IntLen(ns / 1e3)
	case EpochNs:
		return IntLen(ns)
	case Civil:
	default:
		return 0
	}
	n := 19
	if s.FracSep != 0 {
		n += 1 + int(s.Digits)
	}
	switch s.Zone {
	case ZoneZ:
		n++
	case ZoneColon:
		n += 6
	case ZoneNoColon:
		n += 5
	}
	return n
}

// IntLen is the length of strconv.AppendInt(nil, v, 10): an epoch's
// text, or any integer's.
func IntLen(v int64) int {
	n, u := 0, uint64(v)
	if v < 0 {
		n, u = 1, -u
	}
	if u == 0 {
		return 1
	}
	// u has d or d+1 digits, d from its bit length (1233/4096 ≈ log10 2).
	d := bits.Len64(u) * 1233 >> 12
	if u >= decimalPow[d] {
		d++
	}
	return n + d
}

// decimalPow holds 10^i for i from 0 to 19.
var decimalPow = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// Valid reports whether s is a shape Append can write.
func (s Shape) Valid() bool {
	switch s.Kind {
	case EpochS, EpochMs, EpochUs, EpochNs:
		return true
	case Civil:
		return (s.Sep == 'T' || s.Sep == ' ') && s.Digits <= 9 && (s.FracSep == 0 && s.Digits == 0 || s.FracSep == '.' || s.FracSep == ',') &&
			s.Zone <= ZoneNoColon && s.Offset > -24*60 && s.Offset < 24*60
	}
	return false
}
