package query

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sluicelog/sluice/internal/literal"
	"github.com/sluicelog/sluice/internal/record"
)

// needleScan finds in a stored value either a text or `\u` (see
// stage.PrefixRead.Needle) in one pass: positions, 32 at a time
// (literal.IndexPairs), checked for the start of `\u` and for one byte
// pair of the text (the rarest by letterRank), and only the positions
// that pass are compared. Values of escaped JSON hold a backslash every
// few bytes and text like "error" holds common letters, which kept
// bytes.Contains jumping from one false start to the next (half of a
// question's time).
type needleScan struct {
	text string
	k    int          // the pair text[k], text[k+1]
	pair literal.Pair // that pair
	one  bool         // the text is one byte: no pair
	// ascii: the text is; decide then tells a \u escape that cannot make
	// a byte of it.
	ascii bool
}

func newNeedleScan(text string) needleScan {
	ns := needleScan{text: text, one: len(text) == 1, ascii: strings.IndexFunc(text, func(r rune) bool { return r >= utf8.RuneSelf }) < 0}
	for i := 1; i+1 < len(text); i++ {
		if letterRank(text[i])+letterRank(text[i+1]) < letterRank(text[ns.k])+letterRank(text[ns.k+1]) {
			ns.k = i
		}
	}
	if !ns.one {
		ns.pair = literal.Pair{A: text[ns.k], B: text[ns.k+1]}
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
	for i := 0; ; {
		j := literal.IndexPairs(v[i:], ns.pair, backslashU)
		if j < 0 {
			return false
		}
		if ns.at(v, i+j) {
			return true
		}
		i += j + 1
	}
}

// needleVerdict is what needleScan.decide makes of a JSON string's text.
type needleVerdict uint8

const (
	needleMiss needleVerdict = iota // its unescaped value holds not the text
	needleHit                       // it holds it, where the stored text does
	needleRead                      // an escape may make some of it: unescape and see
)

// decide tells whether v, the text of a well-formed JSON string, holds
// the text once unescaped, for a text that holds no byte an escape other
// than \u makes (stage.Pipeline.LineNeedle). The unescaped value is the
// stored bytes between escapes and the escapes' bytes; none of the
// latter is a byte of an ASCII text when every \u escape makes a rune
// the text has not, so the text is in it exactly where the stored text
// holds it outside any escape: no odd run of backslashes before it, and
// not in a \u escape's hex digits. A \u escape that makes one of the
// text's bytes (or any, for a text of other than ASCII) is needleRead.
func (ns *needleScan) decide(v []byte) needleVerdict {
	if ns.one {
		return ns.decideByte(v)
	}
	escEnd := 0 // past the last \u escape seen
	for i := 0; ; i++ {
		j := literal.IndexPairs(v[i:], ns.pair, backslashU)
		if j < 0 {
			return needleMiss
		}
		i += j
		if v[i] == '\\' && v[i+1] == 'u' && evenBackslashes(v[:i]) {
			if !ns.harmless(v[i:]) {
				return needleRead
			}
			escEnd = i + 6
			i = escEnd - 1 // a text does not start in its hex digits
			continue
		}
		if s := i - ns.k; s >= escEnd && s+len(ns.text) <= len(v) && string(v[s:s+len(ns.text)]) == ns.text && evenBackslashes(v[:s]) {
			return needleHit
		}
	}
}

// decideAll sets dst to decide's verdict of each value of a column of
// strings (data end to end, ends[i] where value i ends) and returns it:
// one search of the column's bytes for the values where the text or
// `\u` may be, and decide on those alone; the text of one byte is
// decided value by value.
func (ns *needleScan) decideAll(data []byte, ends []uint32, dst []needleVerdict) []needleVerdict {
	dst = slices.Grow(dst[:0], len(ends))[:len(ends)]
	clear(dst) // needleMiss
	start := 0
	for v, i := 0, 0; v < len(ends); {
		if ns.one {
			dst[v] = ns.decideByte(data[start:ends[v]])
			start = int(ends[v])
			v++
			continue
		}
		j := literal.IndexPairs(data[i:], ns.pair, backslashU)
		if j < 0 {
			break
		}
		for i += j; int(ends[v]) <= i; v++ {
			start = int(ends[v])
		}
		// The value the place is in, decided whole; the search goes
		// on at the next one.
		dst[v] = ns.decide(data[start:ends[v]])
		i, start = int(ends[v]), int(ends[v])
		v++
	}
	return dst
}

// decideByte is decide for a text of one byte, with any `\u` a read.
func (ns *needleScan) decideByte(v []byte) needleVerdict {
	c := ns.text[0]
	for i := 0; ; i++ {
		j := bytes.IndexByte(v[i:], c)
		if j < 0 {
			if bytes.Contains(v, []byte(`\u`)) {
				return needleRead
			}
			return needleMiss
		}
		if i += j; evenBackslashes(v[:i]) {
			if bytes.Contains(v[:i], []byte(`\u`)) {
				return needleRead
			}
			return needleHit
		}
	}
}

// harmless reports whether the \u escape that starts e makes a rune
// that is none of the text's bytes: its text is ASCII and the rune is not
// (a surrogate half, or a lone one made U+FFFD, is not either).
func (ns *needleScan) harmless(e []byte) bool {
	r, ok := record.HexEscape(e)
	return ok && ns.ascii && (r >= utf8.RuneSelf || strings.IndexByte(ns.text, byte(r)) < 0)
}

// evenBackslashes reports whether v ends in an even run of backslashes
// (none counts).
func evenBackslashes(v []byte) bool {
	n := 0
	for n < len(v) && v[len(v)-1-n] == '\\' {
		n++
	}
	return n%2 == 0
}

// backslashU is the pair that starts a \u escape.
var backslashU = literal.Pair{A: '\\', B: 'u'}

// at reports whether `\u` starts at v[j], or the text at v[j-k].
func (ns *needleScan) at(v []byte, j int) bool {
	if v[j] == '\\' && v[j+1] == 'u' {
		return true
	}
	s := j - ns.k
	return s >= 0 && s+len(ns.text) <= len(v) && string(v[s:s+len(ns.text)]) == ns.text
}
