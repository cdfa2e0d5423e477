package rules

import (
	"bytes"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"unsafe"

	"github.com/sluicelog/sluice/internal/literal"
)

// A detector finds one kind of secret in a text. find returns the spans
// [start, end) to replace, in order and not overlapping; pre is a cheap
// test a text must pass for find to be worth running.
type detector struct {
	re *regexp.Regexp
	// group is the submatch to replace (0: the whole match).
	group int
	// valid, if set, checks a candidate: text is the whole input and
	// [s, e) the candidate, so that it can look at what borders it.
	valid func(text []byte, s, e int) bool
	pre   func(text []byte) bool
	// anchor and class, if set, say that every match is a run of bytes
	// of class holding anchor, and the regexp has nothing that looks
	// beyond its match (no \b, ^, $): the regexp then runs only on the
	// runs of class bytes around each anchor, not over the whole text
	// (an e-mail address in a 400-byte line: 30 bytes, not 400).
	anchor byte
	class  *[256]bool
	// scan, if set, finds the spans itself, without re.
	scan func(spans [][2]int, text []byte) [][2]int
}

var detectors = map[string]*detector{
	"email": {
		re:     regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}`),
		pre:    func(t []byte) bool { return bytes.IndexByte(t, '@') >= 0 },
		anchor: '@',
		class:  byteClass("A-Za-z0-9._%+@-"),
		valid: func(t []byte, s, e int) bool {
			local := t[s : bytes.IndexByte(t[s:e], '@')+s]
			// A local part neither starts nor ends with a dot, and a
			// domain label is not glued to more word characters.
			return local[0] != '.' && local[len(local)-1] != '.' && !bytes.Contains(local, []byte("..")) &&
				(e == len(t) || !isWord(t[e]))
		},
	},
	"ipv4": {
		re:  regexp.MustCompile(`[0-9]{1,3}(?:\.[0-9]{1,3}){3}`),
		pre: func(t []byte) bool { return bytes.IndexByte(t, '.') >= 0 },
		valid: func(t []byte, s, e int) bool {
			if s > 0 && (isDigit(t[s-1]) || t[s-1] == '.') {
				return false // part of a longer dotted number (a version 1.2.3.4.5)
			}
			if e < len(t) && (isDigit(t[e]) || (t[e] == '.' && e+1 < len(t) && isDigit(t[e+1]))) {
				return false
			}
			a, err := netip.ParseAddr(string(t[s:e]))
			return err == nil && a.Is4()
		},
	},
	"ipv6": {
		re:  regexp.MustCompile(`[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:%[0-9A-Za-z]+)?`),
		pre: func(t []byte) bool { return bytes.Count(t, []byte{':'}) >= 2 },
		valid: func(t []byte, s, e int) bool {
			if s > 0 && (isWord(t[s-1]) || t[s-1] == ':') || e < len(t) && (isWord(t[e]) || t[e] == ':') {
				return false
			}
			c := t[s:e]
			if len(c) < 3 || bytes.Equal(c, []byte("::")) {
				return false
			}
			a, err := netip.ParseAddr(string(c))
			return err == nil && a.Is6()
		},
	},
	"card": {
		re:  regexp.MustCompile(`[0-9](?:[ \-]?[0-9]){12,18}`),
		pre: func(t []byte) bool { return bytes.IndexAny(t, "0123456789") >= 0 },
		valid: func(t []byte, s, e int) bool {
			if s > 0 && isWordOrDigit(t[s-1]) || e < len(t) && isWordOrDigit(t[e]) {
				return false
			}
			return cardPrefix(t[s:e]) && luhn(t[s:e])
		},
	},
	"jwt": {
		re:  regexp.MustCompile(`eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*`),
		pre: func(t []byte) bool { return bytes.Contains(t, []byte("eyJ")) },
	},
	"bearer": {
		re:    regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{8,}=*)`),
		group: 1,
		pre:   func(t []byte) bool { return containsFold(t, "bearer") },
	},
	"aws_key": {
		re:  regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[A-Z0-9]{16}\b`),
		pre: func(t []byte) bool { return bytes.IndexByte(t, 'A') >= 0 },
	},
	// secret_pairs finds the value of key=value, key: value and
	// "key":"value" pairs (logfmt, text, JSON) whose key names a secret
	// (see redact_pairs.go).
	"secret_pairs": {
		scan: scanSecretPairs,
		pre: func(t []byte) bool {
			return (bytes.IndexByte(t, '=') >= 0 || bytes.IndexByte(t, ':') >= 0) && secretWords.Match(t)
		},
	},
}

// secretWords holds a word of every secretKey, so that a text without
// one skips the regexp.
var secretWords = literal.NewSet([][]byte{[]byte("passw"), []byte("pwd"), []byte("secret"), []byte("token"),
	[]byte("key"), []byte("credential")}, true)

// detectorNames lists the built-in detectors, sorted.
func detectorNames() []string {
	names := make([]string, 0, len(detectors))
	for n := range detectors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c)
}
func isWordOrDigit(c byte) bool { return isWord(c) }

func containsFold(t []byte, low string) bool {
	for i := 0; i+len(low) <= len(t); i++ {
		if bytes.EqualFold(t[i:i+len(low)], []byte(low)) {
			return true
		}
	}
	return false
}

// cardPrefix reports whether digits start as a card network's numbers
// do (Visa, Mastercard, American Express, Discover, Diners, JCB,
// UnionPay, Maestro): a long number that passes Luhn by chance (one in
// ten: nanosecond timestamps, ids) mostly does not.
func cardPrefix(s []byte) bool {
	var d []byte
	for _, c := range s {
		if isDigit(c) {
			d = append(d, c)
			if len(d) == 4 {
				break
			}
		}
	}
	if len(d) < 4 {
		return false
	}
	n2 := int(d[0]-'0')*10 + int(d[1]-'0')
	n4 := n2*100 + int(d[2]-'0')*10 + int(d[3]-'0')
	switch {
	case d[0] == '4': // Visa
		return true
	case n2 >= 51 && n2 <= 55, n4 >= 2221 && n4 <= 2720: // Mastercard
		return true
	case n2 == 34 || n2 == 37: // American Express
		return true
	case n4 == 6011, n2 == 65, n4 >= 6440 && n4 <= 6499, n2 == 62: // Discover, UnionPay
		return true
	case n2 == 36 || n2 == 38 || n2 == 39 || n4 >= 3000 && n4 <= 3059: // Diners
		return true
	case n2 == 35: // JCB
		return true
	case n2 == 50 || n2 >= 56 && n2 <= 58 || n2 == 67: // Maestro
		return true
	}
	return false
}

// luhn reports whether s, digits with optional spaces or dashes, holds
// 13 to 19 digits that pass the Luhn check (as card numbers do).
func luhn(s []byte) bool {
	sum, n := 0, 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c == ' ' || c == '-' {
			continue
		}
		d := int(c - '0')
		if n%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		n++
	}
	return n >= 13 && n <= 19 && sum%10 == 0
}

// byteClass returns the bytes of ranges ("a-z" or one byte each; a '-'
// last is itself).
func byteClass(ranges string) *[256]bool {
	var c [256]bool
	for i := 0; i < len(ranges); i++ {
		if i+2 < len(ranges) && ranges[i+1] == '-' {
			for b := int(ranges[i]); b <= int(ranges[i+2]); b++ {
				c[b] = true
			}
			i += 2
			continue
		}
		c[ranges[i]] = true
	}
	return &c
}

// find appends to spans the places in text that d replaces.
func (d *detector) find(spans [][2]int, text []byte) [][2]int {
	if d.pre != nil && !d.pre(text) {
		return spans
	}
	if d.scan != nil {
		return d.scan(spans, text)
	}
	if d.class == nil {
		return d.findIn(spans, text, 0, len(text))
	}
	// Every match lies in one run of class bytes holding the anchor:
	// the regexp runs on those runs alone, each found from an anchor.
	for i := 0; i < len(text); {
		k := bytes.IndexByte(text[i:], d.anchor)
		if k < 0 {
			break
		}
		s, e := i+k, i+k+1
		for s > i && d.class[text[s-1]] {
			s--
		}
		for e < len(text) && d.class[text[e]] {
			e++
		}
		spans = d.findIn(spans, text, s, e)
		i = e
	}
	return spans
}

// findIn appends to spans the places in text[from:to] that d replaces.
func (d *detector) findIn(spans [][2]int, text []byte, from, to int) [][2]int {
	for _, m := range d.re.FindAllSubmatchIndex(text[from:to], -1) {
		s, e := m[2*d.group], m[2*d.group+1]
		if s >= 0 {
			s, e = s+from, e+from
		}
		if s < 0 {
			continue
		}
		if d.valid != nil && !d.valid(text, s, e) {
			continue
		}
		spans = appendSpan(spans, text, s, e)
	}
	return spans
}

// appendSpan appends [s, e) of text to spans: without its quotes when it
// is quoted (so that the line stays well formed), and not at all when
// nothing is left.
func appendSpan(spans [][2]int, text []byte, s, e int) [][2]int {
	if e > s+1 && (text[s] == '"' && text[e-1] == '"' || text[s] == '\'' && text[e-1] == '\'') {
		s, e = s+1, e-1
	}
	if s < e {
		spans = append(spans, [2]int{s, e})
	}
	return spans
}

// redactor is a rule's redact action, compiled.
//
// Concurrency: immutable; safe for concurrent use.
type redactor struct {
	detectors   []*detector
	replacement []byte
	secretNames bool // secret_pairs: a field whose name is a secret key is redacted whole
	patterns    []pattern
}

type pattern struct {
	re      *regexp.Regexp
	replace []byte // a template for regexp.Expand ($1, ${name})
}

func newRedactor(s *redactSpec) *redactor {
	r := &redactor{replacement: []byte(s.replacement)}
	for _, name := range s.detectors {
		r.detectors = append(r.detectors, detectors[name])
		if name == "secret_pairs" {
			r.secretNames = true
		}
	}
	for _, p := range s.patterns {
		r.patterns = append(r.patterns, pattern{re: regexp.MustCompile(p.regex), replace: []byte(p.replace)})
	}
	return r
}

// redact appends text with every secret replaced to dst, and returns
// how many replacements it made; with none, it appends nothing: the text
// stands as it is, and nobody copies it. spans is scratch.
func (r *redactor) redact(dst, text []byte, spans [][2]int) ([]byte, int, [][2]int) {
	n := 0
	cur := text
	start := len(dst)
	// Patterns first, in order, each over the result of the one before.
	var tmp []byte
	for _, p := range r.patterns {
		ms := p.re.FindAllSubmatchIndex(cur, -1)
		if len(ms) == 0 {
			continue
		}
		tmp = tmp[:0]
		last := 0
		for _, m := range ms {
			tmp = append(tmp, cur[last:m[0]]...)
			tmp = p.re.Expand(tmp, p.replace, cur, m)
			last = m[1]
		}
		tmp = append(tmp, cur[last:]...)
		n += len(ms)
		cur = slices.Clone(tmp)
	}
	spans = spans[:0]
	for _, d := range r.detectors {
		spans = d.find(spans, cur)
	}
	if len(spans) == 0 {
		if n == 0 {
			return dst[:start], 0, spans
		}
		return append(dst[:start], cur...), n, spans
	}
	// Detectors may overlap (an e-mail address in a password= pair):
	// merge them, and replace each merged span once.
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	last := 0
	for i := 0; i < len(spans); {
		s, e := spans[i][0], spans[i][1]
		j := i + 1
		for j < len(spans) && spans[j][0] < e {
			e = max(e, spans[j][1])
			j++
		}
		dst = append(dst, cur[last:s]...)
		dst = append(dst, r.replacement...)
		last = e
		n++
		i = j
	}
	dst = append(dst, cur[last:]...)
	return dst, n, spans
}

// field redacts a field's value, knowing its name: a value whose name is
// a secret key is replaced whole. As redact, it appends nothing when it
// replaces nothing.
func (r *redactor) field(dst []byte, name string, value []byte, spans [][2]int) ([]byte, int, [][2]int) {
	if r.secretNames && len(value) > 0 && secretWords.Match(unsafeBytes(name)) && isSecretName(unsafeBytes(name)) {
		return append(dst, r.replacement...), 1, spans
	}
	return r.redact(dst, value, spans)
}

// unsafeBytes views s as bytes, for a read-only matcher.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
