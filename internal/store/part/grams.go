package part

import "math/bits"

// A text column's gram filter says which three-byte sequences (grams) its
// values hold, so that a search for a literal skips, without
// decompressing it, a column whose values lack one of the literal's
// grams. The block's token filter cannot: the words at a literal's edges
// may be parts of longer words ("payment declined" is in "repayment
// declined"), and a block's longest word is usually longer than them.
//
// Grams are taken inside each value (none across two values), ASCII
// letters lowercased, so that one filter serves exact and case-folding
// searches. A gram g (bytes g0 g1 g2) has the hash
//
//	h = uint32((g0 | g1<<8 | g2<<16) * 0x9e3779b1) >> 16
//
// and sets bit h mod m of the filter, m bits long (a power of two, 64 to
// maxGramBits), bit i in byte i/8 at position i%8. FROZEN with format
// version 3. The writer sizes m to about gramBitsPer bits per distinct
// gram: each gram the values lack then tests positive about one time in
// nine, and a literal is ruled out when any of its grams tests negative.

const (
	gramSpace   = 1 << 16 // the hash's range: the filter before folding
	gramBitsPer = 8
	minGramBits = 64
	maxGramBits = 1 << 15 // a column with more distinct grams gets no filter
)

func gramHash(g uint32) uint32 { return g * 0x9e3779b1 >> 16 }

// lowerASCII maps ASCII capitals to small letters and every other byte to
// itself.
var lowerASCII = func() (t [256]byte) {
	for c := range 256 {
		t[c] = byte(c)
		if c >= 'A' && c <= 'Z' {
			t[c] = byte(c) | 0x20
		}
	}
	return t
}()

// gramSet collects the grams of a column's values in a bitset of the
// hash's whole range, folded to the filter's size at the end.
type gramSet struct {
	words [gramSpace / 64]uint64
}

func (s *gramSet) reset() { clear(s.words[:]) }

func (s *gramSet) add(v []byte) {
	if len(v) < 3 {
		return
	}
	g := uint32(lowerASCII[v[0]]) | uint32(lowerASCII[v[1]])<<8
	for _, c := range v[2:] {
		g |= uint32(lowerASCII[c]) << 16
		h := gramHash(g)
		s.words[h/64] |= 1 << (h % 64)
		g >>= 8
	}
}

// appendFilter appends the filter of the grams added, or reports false
// (appending nothing) when there are too many for a useful one.
func (s *gramSet) appendFilter(dst []byte) ([]byte, bool) {
	n := 0
	for _, w := range s.words {
		n += bits.OnesCount64(w)
	}
	m := minGramBits
	for m < n*gramBitsPer && m < gramSpace {
		m <<= 1
	}
	if m > maxGramBits {
		return dst, false
	}
	// h mod m of a filter m bits long is bit h of the full set folded:
	// each half ORed onto the one below until m bits are left.
	w := s.words[:]
	for len(w) > m/64 {
		half := len(w) / 2
		for i := range half {
			w[i] |= w[half+i]
		}
		w = w[:half]
	}
	for _, x := range w {
		for range 8 {
			dst = append(dst, byte(x))
			x >>= 8
		}
	}
	return dst, true
}

// validGramFilter reports whether f has a filter's size.
func validGramFilter(f []byte) bool {
	m := len(f) * 8
	return m >= minGramBits && m <= maxGramBits && bits.OnesCount(uint(m)) == 1
}

// gramsMayHold reports whether a column whose values have the gram filter
// f may hold lit (folding ASCII case or not: the filter does). A literal
// shorter than a gram may be anywhere.
func gramsMayHold(f, lit []byte) bool {
	if len(lit) < 3 {
		return true
	}
	mask := uint32(len(f)*8 - 1)
	g := uint32(lowerASCII[lit[0]]) | uint32(lowerASCII[lit[1]])<<8
	for _, c := range lit[2:] {
		g |= uint32(lowerASCII[c]) << 16
		h := gramHash(g) & mask
		if f[h/8]&(1<<(h%8)) == 0 {
			return false
		}
		g >>= 8
	}
	return true
}
