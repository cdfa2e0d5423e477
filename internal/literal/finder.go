package literal

import "bytes"

// Finder finds one literal in texts, as bytes.Index does, but scans for
// the literal's rarest byte in log text rather than its first: in an
// access log's lines `/login` starts with a slash, which every path and
// date holds, so a scan for it stops every few bytes, and bytes.Index
// starts that scan again at each call (a search of a column's values end
// to end calls it once per match). A finder that meets too many false
// candidates hands the rest of the text to bytes.Index.
type Finder struct {
	lit  []byte
	rare int // the index in lit of the byte scanned for
}

// NewFinder returns a finder of lit; it keeps lit.
func NewFinder(lit []byte) Finder {
	f := Finder{lit: lit}
	for i, c := range lit {
		if byteRank[c] < byteRank[lit[f.rare]] {
			f.rare = i
		}
	}
	return f
}

// Index returns the index of the first instance of the literal in s, or
// -1; an empty literal is at 0.
func (f *Finder) Index(s []byte) int {
	n := len(f.lit)
	switch {
	case n == 0:
		return 0
	case n == 1:
		return bytes.IndexByte(s, f.lit[0])
	case len(s) < n:
		return -1
	}
	c, r := f.lit[f.rare], f.rare
	// Candidates are found at i+r: the last start that fits is len(s)-n.
	last := len(s) - n
	fails := 0
	for i := 0; i <= last; {
		j := bytes.IndexByte(s[i+r:last+r+1], c)
		if j < 0 {
			return -1
		}
		i += j
		if bytes.Equal(s[i:i+n], f.lit) {
			return i
		}
		i++
		// Many candidates per byte scanned: the rare byte is not rare
		// in this text, and bytes.Index's vectorised search wins.
		if fails++; fails > 4+i>>4 {
			if k := bytes.Index(s[i:], f.lit); k >= 0 {
				return i + k
			}
			return -1
		}
	}
	return -1
}

// byteRank orders bytes by how often they occur in log text, the most
// frequent highest: lowercase letters, digits, spaces and the punctuation
// of JSON, paths, times and key=value pairs; then uppercase letters;
// then the rest. The ranks are a rough guess, not measured counts: a
// finder only needs a byte rarer than most, and falls back when it is not.
var byteRank = func() (r [256]uint8) {
	// From the most frequent down.
	const order = ` e"tsaoirn:l0c1,2d/u.m-p5h3g48_96=7fybwvkTxESAq{}IRNOCLDPzUMjHGF[]WBVYKXJQZ'\();&+*?!@#$%^<>|~` + "`"
	for i := range order {
		r[order[i]] = uint8(len(order) - i + 1)
	}
	r['\n'], r['\t'] = 20, 20
	return r
}()
