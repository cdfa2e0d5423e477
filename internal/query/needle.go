package query

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
)

// needleScan finds in a stored value either a text or `\u` (see
// stage.PrefixRead.Needle) in one pass: a word of eight positions at a
// time, each checked for the start of `\u` and for one byte pair of the
// text (the rarest by letterRank), and only the positions that pass are
// compared. Values of escaped JSON hold a backslash every few bytes and
// text like "error" holds common letters, which kept bytes.Contains
// jumping from one false start to the next (half of a question's time).
type needleScan struct {
	text string
	k    int  // the pair text[k], text[k+1]
	one  bool // the text is one byte: no pair
}

func newNeedleScan(text string) needleScan {
	ns := needleScan{text: text, one: len(text) == 1}
	for i := 1; i+1 < len(text); i++ {
		if letterRank(text[i])+letterRank(text[i+1]) < letterRank(text[ns.k])+letterRank(text[ns.k+1]) {
			ns.k = i
		}
	}
	return ns
}

// letterRank orders bytes by how often they come in log text, commonest
// highest (a guess that only speeds a search up: "error" is searched by
// "rr", not "er").
func letterRank(c byte) int {
	if i := strings.IndexByte(byFrequency, c); i >= 0 {
		return len(byFrequency) - i
	}
	return 0
}

// byFrequency is the bytes of escaped JSON logs, commonest first.
const byFrequency = "\" \\e:ta,oinsrh0l1d2c3u4m5p6f7g8y9wb.-_/vkTxEjSqzIARNOCDLMP"

// in reports whether v holds the text or `\u`.
func (ns *needleScan) in(v []byte) bool {
	if ns.one {
		return bytes.IndexByte(v, ns.text[0]) >= 0 || bytes.Contains(v, []byte(`\u`))
	}
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	p0, p1 := uint64(ns.text[ns.k])*lo, uint64(ns.text[ns.k+1])*lo
	i := 0
	for ; i+9 <= len(v); i += 8 {
		a := binary.LittleEndian.Uint64(v[i:])
		b := binary.LittleEndian.Uint64(v[i+1:])
		// Zero bytes of x are found with no miss; a byte above a found
		// one may be found falsely (a borrow), which the check below
		// throws out.
		x, y := a^('\\'*lo), b^('u'*lo)
		z, w := a^p0, b^p1
		m := ((x-lo)&^x)&((y-lo)&^y) | ((z-lo)&^z)&((w-lo)&^w)
		for m &= hi; m != 0; m &= m - 1 {
			if ns.at(v, i+bits.TrailingZeros64(m)>>3) {
				return true
			}
		}
	}
	for ; i+1 < len(v); i++ {
		if ns.at(v, i) {
			return true
		}
	}
	return false
}

// at reports whether `\u` starts at v[j], or the text at v[j-k].
func (ns *needleScan) at(v []byte, j int) bool {
	if v[j] == '\\' && v[j+1] == 'u' {
		return true
	}
	s := j - ns.k
	return s >= 0 && s+len(ns.text) <= len(v) && string(v[s:s+len(ns.text)]) == ns.text
}
