package record

import (
	"encoding/binary"
)

// timeMemo remembers the last time value the builder read that has the
// shape "2006-01-02T15:04:05.999999999" followed by a zone of at most 8
// bytes (or none). Busy logs write many lines a second, and a value that
// differs from the remembered one only in the fraction's digits is the
// same second with another fraction: its time is read from those digits
// alone, with no need to parse the date, the time of day and the zone
// again.
//
// That gives exactly what timestamp.Parse gives: Parse reads the
// fraction after the '.' at offset 19 as up to 9 digits, and the result
// is the second's time plus the fraction in nanoseconds, the rest
// depending only on the bytes before the '.' and after the digits, which
// are the same. TestTimeMemoRandom and FuzzTimeMemo hold the memo to
// Parse.
//
// The zero value remembers nothing.
type timeMemo struct {
	head  [2]uint64 // the value's first 16 bytes
	head2 uint32    // and the next 4, up to and including the '.'
	tail  uint64    // its last 8 bytes
	tmask uint64    // covers the zone's bytes in tail
	dmask uint64    // covers the fraction's last digits (up to 8) in the word that ends with them
	scale int64     // nanoseconds per unit of those digits
	n, j  int       // its length and the end of its fraction; n == 0: none
	base  int64     // its time, less the fraction
}

const (
	memoFrac = 20 // where the fraction's digits start
	memoZone = 8  // the longest zone remembered
)

// read returns the time of b if it differs from the remembered value only
// in the fraction's digits.
func (m *timeMemo) read(b []byte) (int64, bool) {
	n, j := m.n, m.j
	if len(b) != n || n == 0 ||
		binary.LittleEndian.Uint64(b) != m.head[0] ||
		binary.LittleEndian.Uint64(b[8:]) != m.head[1] ||
		binary.LittleEndian.Uint32(b[16:]) != m.head2 ||
		(binary.LittleEndian.Uint64(b[n-8:])^m.tail)&m.tmask != 0 {
		return 0, false
	}
	// The fraction's last digits, up to 8, are the top bytes of the word
	// that ends with them; the bytes below are masked to 0: leading zeros.
	// INVARIANT (remember): 8 <= j and 1 <= j-memoFrac <= 9.
	x := binary.LittleEndian.Uint64(b[j-8:]) & m.dmask
	const zeros, nibbles, six = 0x3030303030303030, 0xf0f0f0f0f0f0f0f0, 0x0606060606060606
	if x&nibbles != zeros&m.dmask || (x+six&m.dmask)&nibbles != zeros&m.dmask {
		return 0, false
	}
	v := x - zeros&m.dmask
	v = (v*10 + v>>8) & 0x00ff00ff00ff00ff
	v = (v*100 + v>>16) & 0x0000ffff0000ffff
	v = (v*10000 + v>>32) & 0xffffffff
	frac := int64(v) * m.scale
	if j-memoFrac == 9 {
		d := b[memoFrac] - '0'
		if d > 9 {
			return 0, false
		}
		frac += int64(d) * 1e8
	}
	return m.base + frac, true
}

var pow10 = [10]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// remember makes b, whose time timestamp.Parse read as ns, the remembered
// value if it has the shape, and forgets the last one if not.
func (m *timeMemo) remember(b []byte, ns int64) {
	m.n = 0
	n := len(b)
	if n <= memoFrac || b[4] != '-' || b[7] != '-' || b[10] != 'T' && b[10] != 't' && b[10] != ' ' ||
		b[13] != ':' || b[16] != ':' || b[19] != '.' {
		return
	}
	j := memoFrac
	for j < n && b[j]-'0' <= 9 {
		j++
	}
	k := j - memoFrac
	if k < 1 || k > 9 || n-j > memoZone {
		return
	}
	m.head[0] = binary.LittleEndian.Uint64(b)
	m.head[1] = binary.LittleEndian.Uint64(b[8:])
	m.head2 = binary.LittleEndian.Uint32(b[16:])
	m.tail = binary.LittleEndian.Uint64(b[n-8:])
	m.tmask = ^(^uint64(0) >> (8 * (n - j))) // shifts by 64 give 0
	m.dmask = ^uint64(0) << (8 * (8 - min(k, 8)))
	m.scale = pow10[max(9-k, 0)]
	m.n, m.j, m.base = n, j, 0
	frac, ok := m.read(b)
	if !ok {
		m.n = 0
		return
	}
	m.base = ns - frac
}
