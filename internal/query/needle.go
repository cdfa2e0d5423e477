package query

import (
	"bytes"
	"strings"

	"github.com/sluicelog/sluice/internal/literal"
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
}

func newNeedleScan(text string) needleScan {
	ns := needleScan{text: text, one: len(text) == 1}
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

// unescaped reports whether v, the text of a well-formed JSON string,
// holds the text at a place no escape begins (not after an odd run of
// backslashes) and no `\u` comes before (whose hex digits it could be
// part of): the string's unescaped value holds it there too, as the text
// holds no byte an escape other than \u makes
// (stage.Pipeline.LineNeedle).
func (ns *needleScan) unescaped(v []byte) bool {
	if ns.one {
		for i := 0; ; i++ {
			j := bytes.IndexByte(v[i:], ns.text[0])
			if j < 0 {
				return false
			}
			if i += j; evenBackslashes(v[:i]) {
				return !bytes.Contains(v[:i], []byte(`\u`))
			}
		}
	}
	for i := 0; ; i++ {
		j := literal.IndexPairs(v[i:], ns.pair, backslashU)
		if j < 0 {
			return false
		}
		i += j
		if v[i] == '\\' {
			return false // a \u first
		}
		if s := i - ns.k; s >= 0 && s+len(ns.text) <= len(v) && string(v[s:s+len(ns.text)]) == ns.text && evenBackslashes(v[:s]) {
			return true
		}
	}
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
