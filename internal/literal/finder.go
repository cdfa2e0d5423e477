package literal

import "bytes"

// Finder finds one literal in texts, as bytes.Index does, but scans for
// the literal's rarest byte in log text rather than its first: in an
// access log's lines `/login` starts with a slash, which every path and
// date holds, so a scan for it stops every few bytes, and bytes.Index
// starts that scan again at each call (a search of a column's values end
// to end calls it once per match). A finder that meets too many false
// candidates hands the rest of the text to bytes.Index.
//
// A folding finder (NewFoldFinder) matches ASCII letters in either case:
// it scans for both cases of the rare byte, and its fallback lowers the
// text a chunk at a time on the stack.
//
// With AVX2, a literal of two bytes or more whose rare byte is not rare
// in the text is found by its rarest pair of bytes one after the other,
// 32 places at a time (IndexPairs): a pair is rarer than either of its
// bytes (BenchmarkFinder/escaped: 4.6 -> 12.5 GB/s).
type Finder struct {
	lit  []byte // lowercased when fold
	rare int    // the index in lit of the byte scanned for
	pair int    // the index in lit of the pair scanned for, with AVX2
	fold bool
}

// NewFinder returns a finder of lit; it keeps lit.
func NewFinder(lit []byte) Finder {
	f := Finder{lit: lit}
	for i, c := range lit {
		if byteRank[c] < byteRank[lit[f.rare]] {
			f.rare = i
		}
		if i+1 < len(lit) && int(byteRank[c])+int(byteRank[lit[i+1]]) < int(byteRank[lit[f.pair]])+int(byteRank[lit[f.pair+1]]) {
			f.pair = i
		}
	}
	return f
}

// NewFoldFinder returns a finder of lit whose ASCII letters match either
// case (other bytes exactly); it keeps a lowercased copy.
func NewFoldFinder(lit []byte) Finder {
	f := NewFinder(AppendLower(nil, lit))
	f.fold = true
	return f
}

// Index returns the index of the first instance of the literal in s, or
// -1; an empty literal is at 0.
func (f *Finder) Index(s []byte) int {
	n := len(f.lit)
	c, r := byte(0), f.rare
	if n > 0 {
		c = f.lit[r]
	}
	up := c // the rare byte's other case, when the finder folds
	if f.fold && c-'a' < 26 {
		up = c - 'a' + 'A'
	}
	switch {
	case n == 0:
		return 0
	case n == 1 && up == c:
		return bytes.IndexByte(s, c)
	case len(s) < n:
		return -1
	}
	// Candidates are found at i+r: the last start that fits is len(s)-n.
	last := len(s) - n
	fails := 0
	for i := 0; i <= last; {
		w := s[i+r : last+r+1]
		j := bytes.IndexByte(w, c)
		if up != c {
			if j >= 0 {
				w = w[:j] // the other case only before it
			}
			if k := bytes.IndexByte(w, up); k >= 0 {
				j = k
			}
		}
		if j < 0 {
			return -1
		}
		i += j
		if cand := s[i : i+n]; !f.fold && bytes.Equal(cand, f.lit) || f.fold && equalLower(cand, f.lit) {
			return i
		}
		i++
		// Many candidates per byte scanned: the rare byte is not rare
		// in this text, and a vectorised search wins: by the rarest
		// pair when the byte comes more than once in 256 (each restart
		// of the byte's scan costs what the pairs' takes for a few
		// hundred bytes), or bytes.Index's past one in 16.
		pairs := useAVX2 && n >= 2
		if fails++; pairs && fails > 4+i>>8 || fails > 4+i>>4 {
			k := -1
			if pairs {
				k = f.indexPairs(s[i:])
			} else {
				k = f.fallback(s[i:])
			}
			if k >= 0 {
				return i + k
			}
			return -1
		}
	}
	return -1
}

// indexPairs is Index by the literal's pair f.pair.
func (f *Finder) indexPairs(s []byte) int {
	n, k := len(f.lit), f.pair
	p := PairOf(f.lit, k, f.fold)
	// Candidates are found at i+k: the last start that fits is len(s)-n.
	last := len(s) - n
	for i := 0; i <= last; i++ {
		j := IndexPairs(s[i+k:last+k+2], p, p)
		if j < 0 {
			return -1
		}
		i += j
		if cand := s[i : i+n]; !f.fold && bytes.Equal(cand, f.lit) || f.fold && equalLower(cand, f.lit) {
			return i
		}
	}
	return -1
}

// equalLower reports whether b lowercased (ASCII letters) is low.
func equalLower(b, low []byte) bool {
	for i, c := range b {
		if c-'A' < 26 {
			c |= 0x20
		}
		if c != low[i] {
			return false
		}
	}
	return true
}

// fallback is bytes.Index of the literal in s, or, folding, in s
// lowercased a chunk at a time on the stack, the chunks overlapping by
// the literal but one byte (a literal of more than half a chunk: s
// lowercased whole).
func (f *Finder) fallback(s []byte) int {
	if !f.fold {
		return bytes.Index(s, f.lit)
	}
	if len(f.lit) > foldChunk/2 {
		return bytes.Index(AppendLower(nil, s), f.lit)
	}
	var buf [foldChunk]byte
	for off := 0; ; off += foldChunk - (len(f.lit) - 1) {
		end := min(off+foldChunk, len(s))
		if k := bytes.Index(AppendLower(buf[:0], s[off:end]), f.lit); k >= 0 {
			return off + k
		}
		if end == len(s) {
			return -1
		}
	}
}

// foldChunk is how much of a text a folding finder's fallback lowers at
// a time.
const foldChunk = 512

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
