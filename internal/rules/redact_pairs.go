package rules

import (
	"bytes"
	"unicode/utf8"
)

// The secret_pairs detector finds the value of key=value, key: value and
// "key":"value" pairs (logfmt, text, JSON) whose key names a secret. It
// was a regexp over the whole line,
//
//	(?i)(?:^|[^A-Za-z0-9_.\-])"?KEY"?\s*[:=]\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^\s,;&"'}\]]+)
//
// with KEY the secretKey below, which backtracked over every run of key
// characters in the line (60-70% of redacting a logfmt line with pairs).
// scanSecretPairs finds what it finds, the same spans in the same order
// (FuzzSecretPairs checks it against the regexp), by the pairs' syntax:
// from each ':' or '=' back to the key before it, and on to the value
// after it.

// secretKey is the regexp of a key that names a secret: password,
// db_password, client_secret, access_token, api_key, apikey...: a run of
// key characters whose part after its last '.' or '-' holds one of
// secretKeyWords, case folded.
const secretKey = `[A-Za-z0-9_.\-]*(?:password|passwd|pwd|secret|token|api_?key|apikey|access_?key|private_?key|credentials?)[A-Za-z0-9_]*`

// secretKeyWords are secretKey's words, lower case ("credentials" is
// "credential" followed by a word character).
var secretKeyWords = [][]byte{
	[]byte("password"), []byte("passwd"), []byte("pwd"), []byte("secret"), []byte("token"),
	[]byte("apikey"), []byte("api_key"), []byte("accesskey"), []byte("access_key"),
	[]byte("privatekey"), []byte("private_key"), []byte("credential"),
}

var (
	// keyClass is the ASCII of [A-Za-z0-9_.\-]. Folding case as (?i)
	// does, the class holds two more runes: ſ (U+017F, an s) and K
	// (U+212A, the Kelvin sign, a k).
	keyClass = byteClass("A-Za-z0-9_.-")
	// pairSpace is \s: ASCII white space but \v.
	pairSpace = byteClass("\t\n\f\r ")
	// bareEnd ends a value without quotes.
	bareEnd = byteClass("\t\n\f\r ,;&\"'}]")
)

// keyRuneBefore returns the width of the key character that ends at
// t[:i], or 0 when the rune there is not one (or i is 0).
func keyRuneBefore(t []byte, i int) int {
	if i == 0 {
		return 0
	}
	if c := t[i-1]; c < utf8.RuneSelf {
		if keyClass[c] {
			return 1
		}
		return 0
	}
	r, w := utf8.DecodeLastRune(t[:i])
	if r == '\u017f' || r == '\u212a' {
		return w
	}
	return 0
}

// isSecretKey reports whether key, a run of key characters, names a
// secret: its part after its last '.' or '-' holds one of
// secretKeyWords, case folded.
func isSecretKey(key []byte) bool {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '.' || key[i] == '-' {
			key = key[i+1:]
			break
		}
	}
	for i := 0; i < len(key); i++ {
		// Each word starts with one of a few letters: a word is looked
		// for only where one of them (or ſ, an s) is.
		c := key[i] | 0x20 // lower case, for letters
		switch {
		case c == 'a' || c == 'c' || c == 'p' || c == 's' || c == 't':
		case key[i] >= utf8.RuneSelf:
			c = 's'
		default:
			continue
		}
		for _, w := range secretKeyWords {
			if w[0] == c && hasFoldPrefix(key[i:], w) {
				return true
			}
		}
	}
	return false
}

// hasFoldPrefix reports whether key starts with word (lower case ASCII
// letters and '_') as (?i) matches it: either case, ſ for s and the
// Kelvin sign for k.
func hasFoldPrefix(key, word []byte) bool {
	j := 0
	for _, wc := range word {
		if j == len(key) {
			return false
		}
		c := key[j]
		if c < utf8.RuneSelf {
			if c|0x20 != wc && c != wc { // c|0x20: lower case of a letter; '_' is itself
				return false
			}
			j++
			continue
		}
		r, n := utf8.DecodeRune(key[j:])
		if !(r == '\u017f' && wc == 's' || r == '\u212a' && wc == 'k') {
			return false
		}
		j += n
	}
	return true
}

// isSecretName reports whether a field's whole name names a secret, as
// (?i)^secretKey$ does.
func isSecretName(name []byte) bool {
	for i := len(name); i > 0; {
		w := keyRuneBefore(name, i)
		if w == 0 {
			return false
		}
		i -= w
	}
	return len(name) > 0 && isSecretKey(name)
}

// nextSep returns the index of the first ':' or '=' in t at or after
// from, or -1.
func nextSep(t []byte, from int) int {
	for i := from; i < len(t); i++ {
		if c := t[i]; c == ':' || c == '=' {
			return i
		}
	}
	return -1
}

// scanSecretPairs appends to spans the values of the pairs in t whose
// key names a secret (see above): what the regexp finds, searching from
// the end of each match it finds, so that a key inside a value it took
// is not a key.
func scanSecretPairs(spans [][2]int, t []byte) [][2]int {
	pos := 0 // where the regexp would search on from
	for q := nextSep(t, 0); q >= 0; q = nextSep(t, q+1) {
		// The key: back over white space and a quote, then over the run
		// of key characters.
		ke := q
		for ke > pos && pairSpace[t[ke-1]] {
			ke--
		}
		if ke > pos && t[ke-1] == '"' {
			ke--
		}
		k0 := ke
		for {
			w := keyRuneBefore(t, k0)
			if w == 0 {
				break
			}
			k0 -= w
		}
		if k0 == ke {
			continue
		}
		// The match starts at the text's start (^) or at the rune before
		// the key (any rune but a key character), and not before pos.
		if k0 == 0 {
			if pos != 0 {
				continue
			}
		} else {
			w := 1
			if t[k0-1] >= utf8.RuneSelf {
				_, w = utf8.DecodeLastRune(t[:k0])
			}
			if k0-w < pos {
				continue
			}
		}
		if !isSecretKey(t[k0:ke]) {
			continue
		}
		v, e, ok := pairValue(t, q+1)
		if !ok {
			continue
		}
		spans = appendSpan(spans, t, v, e)
		pos = e
		if q = e - 1; q < 0 {
			q = 0 // not reached: a value is not empty
		}
	}
	return spans
}

// pairValue returns the value after a pair's ':' or '=' at t[from:]
// (after white space): a double-quoted string with backslash escapes, a
// single-quoted one, or a run of bytes up to white space or one of
// ,;&"'}], as the regexp's three choices, in its order. ok is false when
// none is there.
func pairValue(t []byte, from int) (s, e int, ok bool) {
	v := from
	for v < len(t) && pairSpace[t[v]] {
		v++
	}
	if v == len(t) {
		return 0, 0, false
	}
	switch t[v] {
	case '"':
		for j := v + 1; j < len(t); {
			switch t[j] {
			case '"':
				return v, j + 1, true
			case '\\':
				// \\. : any rune but a newline after it (the rest of a
				// rune of several bytes matches [^"\\] as well).
				if j+1 == len(t) || t[j+1] == '\n' {
					return 0, 0, false
				}
				j += 2
			default:
				j++
			}
		}
		return 0, 0, false
	case '\'':
		k := bytes.IndexByte(t[v+1:], '\'')
		if k < 0 {
			return 0, 0, false
		}
		return v, v + 1 + k + 1, true
	}
	j := v
	for j < len(t) && !bareEnd[t[j]] {
		j++
	}
	return v, j, j > v
}
