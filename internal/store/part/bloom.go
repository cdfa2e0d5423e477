package part

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// A block's token filter is a Bloom filter of the lowercased tokens of its
// lines, so that a query for a word skips the blocks that cannot hold it
// without decompressing them. A token is a maximal run of ASCII letters,
// digits and '_', or a maximal run of bytes >= 0x80 (UTF-8 text other
// than ASCII): "abcé" is two tokens, "abc" and "é". (Format version 1
// made one token of both kinds together; its filters are not used to
// prune.) Tokens are lowercased (ASCII only) so that case-insensitive searches can
// use the filter too. Tokens made only of digits are not indexed: numbers
// (sizes, ids, parts of timestamps) are mostly distinct, would double the
// filters' size, and are searched through typed fields; a query must not
// prune by them (Indexed says which tokens are).
//
// Layout (docs/format/part.md): a byte k (probes), from version 8 with
// bit 7 set and followed by a 64-bit salt, then the bit array, bit b in
// byte b/8 at position b%8; its length in bits is a power of two. Probe i
// of token hash h (TokenHash) tests bit (h1 + i*h2) mod m, where h1 =
// uint32(x) and h2 = uint32(x>>32)|1, x being h, or in a salted filter
// saltHash(h, salt).
//
// Why a salt: the words every block has ("info", "GET", a host) set the
// same bits in every block of a size when the probes depend on the token
// alone, so a token whose probes fall partly on those bits is a false
// "maybe" in many blocks at once. On the 20M-line app store a trace id
// passed 17 of 984 blocks where the filters' fill promised 3, and random
// tokens passed up to 18. A salt of the block's own makes each block's
// false positives independent of the others'.

const (
	bloomBitsPerToken = 8 // 8 to 16 bits a token: 2% to 0.05% false positives
	bloomProbes       = 5 // the probes of every filter before version 8
	maxBloomProbes    = 12
	saltedFilter      = 0x80 // in k: a salt follows (version 8 on)
	saltLen           = 8
	minBloomBits      = 512
	maxBloomBits      = 1 << 23
	maxTokenLen       = 256 // longer runs are cut; the query side cuts alike
)

// tokenSet collects the distinct token hashes of one block: an open
// addressing set, cheaper than a map on this path.
type tokenSet struct {
	slots   []uint64 // 0 is empty; a hash of 0 is stored as 1
	n       int
	longest int // the length of the longest token run seen
}

func (s *tokenSet) reset() {
	if len(s.slots) > 1<<16 {
		s.slots = nil // don't keep a huge table for every later block
	}
	clear(s.slots)
	s.n, s.longest = 0, 0
}

func (s *tokenSet) add(h uint64) {
	if h == 0 {
		h = 1
	}
	if 4*(s.n+1) > 3*len(s.slots) {
		s.grow()
	}
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case h:
			return
		case 0:
			s.slots[i] = h
			s.n++
			return
		}
	}
}

func (s *tokenSet) grow() {
	old := s.slots
	s.slots = make([]uint64, max(1024, 2*len(old)))
	s.n = 0
	for _, h := range old {
		if h != 0 {
			s.add(h)
		}
	}
}

// tokenClass says which kind of token a byte belongs to: 0 none, 1 ASCII
// letters, digits and '_', 2 bytes >= 0x80.
var tokenClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_':
			t[c] = 1
		case c >= 0x80:
			t[c] = 2
		}
	}
	return t
}()

// nextToken returns the bounds of the first token of text at or after i,
// or start == len(text) when there is none.
func nextToken(text []byte, i int) (start, end int) {
	for i < len(text) && tokenClass[text[i]] == 0 {
		i++
	}
	if i == len(text) {
		return i, i
	}
	k := tokenClass[text[i]]
	j := i + 1
	for j < len(text) && tokenClass[text[j]] == k {
		j++
	}
	return i, j
}

// addText adds the tokens of text (lines joined by newlines, say).
func (s *tokenSet) addText(text []byte) {
	for i, j := nextToken(text, 0); i < len(text); i, j = nextToken(text, j) {
		if Indexed(text[i:j]) {
			s.add(TokenHash(text[i:j]))
		}
		if tokenClass[text[i]] == 1 {
			s.longest = max(s.longest, j-i)
		}
	}
}

// Indexed reports whether a token is in the filters: it has a byte that
// is not a digit.
func Indexed(tok []byte) bool {
	for _, c := range tok {
		if c < '0' || c > '9' {
			return true
		}
	}
	return false
}

// TokenHash returns the filter hash of a token (its first maxTokenLen
// bytes). FROZEN with the format: the token is read as little-endian 64-bit
// words, the last one zero-padded; each of the token's bytes (not the
// padding) is ORed with 0x20,
// which lowercases ASCII letters (and maps '_' and bytes >= 0x80 to other
// token bytes: a few more collisions, never a missed token); then
//
//	h = len * k1
//	for each word w: h = rotl(h ^ (w * k2), 31) * k1
//	h ^= h >> 33; h *= k3; h ^= h >> 29
//
// with the constants below. One multiply per 8 bytes: the filter is
// built from every line of every block written.
func TokenHash(tok []byte) uint64 {
	const (
		k1 = 0x9e3779b97f4a7c15
		k2 = 0xc2b2ae3d27d4eb4f
		k3 = 0x165667b19e3779f9
	)
	tok = tok[:min(len(tok), maxTokenLen)]
	h := uint64(len(tok)) * k1
	for len(tok) >= 8 {
		w := binary.LittleEndian.Uint64(tok) | 0x2020202020202020
		h = bits.RotateLeft64(h^(w*k2), 31) * k1
		tok = tok[8:]
	}
	if len(tok) > 0 {
		var w uint64
		for i, c := range tok {
			w |= uint64(c|0x20) << (8 * i)
		}
		h = bits.RotateLeft64(h^(w*k2), 31) * k1
	}
	h ^= h >> 33
	h *= k3
	h ^= h >> 29
	return h
}

// appendFilter appends the filter of the set's tokens: salted, with the
// number of probes that makes the fewest false positives for its bits a
// token (ln 2 times it, rounded).
func (s *tokenSet) appendFilter(dst []byte) []byte {
	m := uint64(minBloomBits)
	for m < uint64(s.n)*bloomBitsPerToken && m < maxBloomBits {
		m <<= 1
	}
	k := uint32(maxBloomProbes)
	if s.n > 0 {
		k = uint32(min(max(math.Round(math.Ln2*float64(m)/float64(s.n)), 1), maxBloomProbes))
	}
	// The salt is the block's own, from its tokens (the same blocks get
	// the same filter), so that parts are written alike every time.
	sum := uint64(s.n) * 0x9e3779b97f4a7c15
	for _, h := range s.slots {
		sum += h
	}
	salt := saltHash(sum, 0)
	start := len(dst)
	dst = append(dst, byte(k)|saltedFilter)
	dst = binary.LittleEndian.AppendUint64(dst, salt)
	dst = append(dst, make([]byte, m/8)...)
	words := dst[start+1+saltLen:]
	for _, h := range s.slots {
		if h == 0 {
			continue
		}
		x := saltHash(h, salt)
		h1, h2 := uint32(x), uint32(x>>32)|1
		for i := range k {
			bit := uint64(h1+i*h2) & (m - 1)
			words[bit/8] |= 1 << (bit % 8)
		}
	}
	return dst
}

// saltHash mixes a token's hash with a filter's salt: the finalizer of
// MurmurHash3's 64-bit hash applied to h XOR salt. FROZEN with format
// version 8.
func saltHash(h, salt uint64) uint64 {
	x := h ^ salt
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Filter is a block's token filter.
type Filter []byte

// MayContain reports whether the block may hold a line with the token
// whose hash (TokenHash) is h; false means it certainly does not. An
// empty or malformed filter may contain anything.
func (f Filter) MayContain(h uint64) bool {
	if len(f) == 0 {
		return true
	}
	if h == 0 {
		h = 1
	}
	k, words := uint32(f[0]), f[1:]
	if k&saltedFilter != 0 {
		if len(words) < saltLen {
			return true
		}
		k &^= saltedFilter
		h = saltHash(h, binary.LittleEndian.Uint64(words))
		words = words[saltLen:]
	}
	if len(words) < minBloomBits/8 || bits.OnesCount(uint(len(words))) != 1 {
		return true
	}
	m := uint64(len(words)) * 8
	h1, h2 := uint32(h), uint32(h>>32)|1
	for i := range k {
		bit := uint64(h1+i*h2) & (m - 1)
		if words[bit/8]&(1<<(bit%8)) == 0 {
			return false
		}
	}
	return true
}

// Needle is an ASCII token at an edge of a searched literal: a text
// containing the literal holds an ASCII token that contains it, which is
// the token itself when no ASCII token of the text is longer than Len. A
// block whose longest ASCII token is at most Len and whose filter lacks
// Hash cannot hold the literal.
type Needle struct {
	Hash uint64
	Len  int
}

// AppendLiteralNeedles appends the needles of lit: its ASCII edge tokens
// (the ones AppendLiteralTokens leaves out) that the filters index.
func AppendLiteralNeedles(dst []Needle, lit []byte) []Needle {
	for i, j := nextToken(lit, 0); i < len(lit); i, j = nextToken(lit, j) {
		if (i == 0 || j == len(lit)) && tokenClass[lit[i]] == 1 && j-i <= maxTokenLen && Indexed(lit[i:j]) {
			dst = append(dst, Needle{Hash: TokenHash(lit[i:j]), Len: j - i})
		}
	}
	return dst
}

// AppendLiteralTokens appends the hashes of the tokens that any text
// containing lit holds: the tokens of lit with a non-token byte, or a
// token byte of the other kind, on both sides inside lit (an edge token
// may be part of a longer token of the text). Digit-only tokens are left
// out, as Indexed says.
func AppendLiteralTokens(dst []uint64, lit []byte) []uint64 {
	for i, j := nextToken(lit, 0); i < len(lit); i, j = nextToken(lit, j) {
		if i > 0 && j < len(lit) && Indexed(lit[i:j]) {
			dst = append(dst, TokenHash(lit[i:j]))
		}
	}
	return dst
}
