// Package regexscan matches, without backtracking, the regular
// expressions log queries most often extract with: a chain of literals
// and greedy character-class runs, each run ended by what follows it,
// such as `"(?P<method>[A-Z]+) (?P<path>[^ ]+) HTTP` or
// `Failed password for (?P<user>\S+) from (?P<ip>[0-9.]+)`.
//
// In such a chain every run stops at the first byte its class does not
// hold, and that byte must begin what follows (the class and what may
// follow it are disjoint), so a match from a given start is found in one
// pass, with no choice to undo; the leftmost start is found by trying
// the candidates the first piece allows (each place its literal occurs,
// or the start of each run of its class). Go's regexp package runs the
// same expressions through its backtracker, which tries every position
// and keeps a visited set: several times slower on log lines.
//
// Compile reports whether an expression is of that form; Go's regexp
// stays the reference and the fallback: for any other expression, and
// for a line on which the scan would do more than a bounded amount of
// work (a pathological line can make the candidates overlap), the
// caller runs regexp. Matching is byte-wise: a class is accepted only
// when it holds either every non-ASCII character or none, and counted
// repetitions only of ASCII classes, so that bytes and characters
// agree. FuzzSameAsRegexp holds it to regexp.
//
// The package knows nothing of queries or records: it takes an
// expression and bytes.
package regexscan

import (
	"bytes"
	"regexp/syntax"
	"unicode/utf8"
)

// Matcher matches one expression. It holds no state between calls:
// safe for concurrent use.
type Matcher struct {
	pieces     []piece
	groups     int  // capture groups, as regexp's NumSubexp
	begin, end bool // anchored at the text's start, end
}

// piece is one link of the chain: a literal, or a run of min to max
// (-1: any number of) bytes of a class. Captures open before it and close
// after it.
type piece struct {
	lit      []byte
	class    *[256]bool
	min, max int
	open     []int // capture groups that start here
	close    []int // capture groups that end after it
}

// Compile returns a matcher for the expression src (regexp's syntax),
// or false when it is not a chain this package matches.
func Compile(src string) (*Matcher, bool) {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, false
	}
	m := &Matcher{groups: re.MaxCap()}
	var pending []int // groups opened before the next piece
	if !m.walk(re, &pending) || len(m.pieces) == 0 {
		return nil, false
	}
	if len(pending) > 0 {
		// Groups opened at the very end: an empty piece would hold them.
		return nil, false
	}
	for i := range m.pieces {
		p := &m.pieces[i]
		if p.lit != nil || p.min == p.max {
			continue // fixed length: nothing to decide
		}
		if i == len(m.pieces)-1 {
			continue // greedy: the longest run, as regexp takes it
		}
		next := &m.pieces[i+1]
		if next.lit == nil && next.min == 0 {
			return nil, false // what ends the run could be absent
		}
		if overlaps(p.class, next) {
			return nil, false // the run could end in more than one place
		}
	}
	return m, true
}

// walk appends re's pieces, reporting false for what is not a chain.
func (m *Matcher) walk(re *syntax.Regexp, pending *[]int) bool {
	switch re.Op {
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !m.walk(sub, pending) {
				return false
			}
		}
		return true
	case syntax.OpEmptyMatch:
		return true
	case syntax.OpBeginText:
		if len(m.pieces) > 0 || len(*pending) > 0 || m.begin {
			return false
		}
		m.begin = true
		return true
	case syntax.OpEndText:
		m.end = true
		return true
	case syntax.OpCapture:
		if m.end {
			return false
		}
		*pending = append(*pending, re.Cap)
		first := len(m.pieces)
		if !m.walk(re.Sub[0], pending) || len(m.pieces) == first {
			return false // an empty group has no piece to hang on
		}
		last := &m.pieces[len(m.pieces)-1]
		last.close = append(last.close, re.Cap)
		return true
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return false
		}
		var b []byte
		for _, r := range re.Rune {
			if r == utf8.RuneError {
				return false // regexp matches it to any invalid byte
			}
			b = utf8.AppendRune(b, r)
		}
		return m.add(piece{lit: b}, pending)
	case syntax.OpCharClass, syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return m.run(re, 1, 1, pending)
	case syntax.OpStar:
		return re.Flags&syntax.NonGreedy == 0 && m.run(re.Sub[0], 0, -1, pending)
	case syntax.OpPlus:
		return re.Flags&syntax.NonGreedy == 0 && m.run(re.Sub[0], 1, -1, pending)
	case syntax.OpQuest:
		return re.Flags&syntax.NonGreedy == 0 && m.run(re.Sub[0], 0, 1, pending)
	case syntax.OpRepeat:
		return re.Flags&syntax.NonGreedy == 0 && m.run(re.Sub[0], re.Min, re.Max, pending)
	}
	return false
}

// run appends a run of min to max of sub, which must be one character
// of a class.
func (m *Matcher) run(sub *syntax.Regexp, min, max int, pending *[]int) bool {
	if m.end || max == 0 {
		return false
	}
	var ranges []rune
	switch sub.Op {
	case syntax.OpCharClass:
		ranges = sub.Rune
	case syntax.OpAnyCharNotNL:
		ranges = []rune{0, '\n' - 1, '\n' + 1, utf8.MaxRune}
	case syntax.OpAnyChar:
		ranges = []rune{0, utf8.MaxRune}
	case syntax.OpLiteral:
		if len(sub.Rune) != 1 || sub.Flags&syntax.FoldCase != 0 {
			return false
		}
		ranges = []rune{sub.Rune[0], sub.Rune[0]}
	default:
		return false
	}
	class, high, ok := byteClass(ranges)
	if !ok {
		return false
	}
	// Over non-ASCII text a count of bytes is not a count of characters:
	// a class holding them takes runs of any length from 0 or 1 only.
	if high && !(max == -1 && min <= 1) {
		return false
	}
	return m.add(piece{class: class, min: min, max: max}, pending)
}

func (m *Matcher) add(p piece, pending *[]int) bool {
	if m.end {
		return false
	}
	p.open, *pending = *pending, nil
	m.pieces = append(m.pieces, p)
	return true
}

// byteClass returns the bytes of a class given as rune ranges, and
// whether it holds the non-ASCII characters: ok only when it holds all
// of them (utf8.RuneError, which an invalid byte reads as, included) or
// none.
func byteClass(ranges []rune) (*[256]bool, bool, bool) {
	var c [256]bool
	var high int64 // how many runes >= 0x80 the class holds
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		for r := lo; r <= hi && r < utf8.RuneSelf; r++ {
			c[r] = true
		}
		if hi >= utf8.RuneSelf {
			high += int64(hi - max(lo, utf8.RuneSelf) + 1)
		}
	}
	switch high {
	case 0:
		return &c, false, true
	case utf8.MaxRune - utf8.RuneSelf + 1:
		for b := utf8.RuneSelf; b < 256; b++ {
			c[b] = true
		}
		return &c, true, true
	}
	return nil, false, false
}

// overlaps reports whether a byte of class may begin next.
func overlaps(class *[256]bool, next *piece) bool {
	if next.lit != nil {
		return class[next.lit[0]]
	}
	for b := range 256 {
		if class[b] && next.class[b] {
			return true
		}
	}
	return false
}

// Groups returns the number of capture groups, as regexp's NumSubexp.
func (m *Matcher) Groups() int { return m.groups }

// FindSubmatchIndex appends to dst[:0] the match's and each group's
// start and end in b, as regexp's FindSubmatchIndex returns them (nil
// when there is no match). ok is false when b would take the scan more
// work than its bound: then the caller asks regexp.
func (m *Matcher) FindSubmatchIndex(dst []int, b []byte) (idx []int, ok bool) {
	budget := 8*len(b) + 64
	first := &m.pieces[0]
	for s := 0; s <= len(b); {
		// The next candidate start.
		switch {
		case m.begin:
			// The one candidate: the text's start.
		case first.lit != nil:
			i := bytes.Index(b[s:], first.lit)
			if i < 0 {
				return nil, true
			}
			s += i
		case first.min > 0:
			for s < len(b) && !first.class[b[s]] {
				s++
			}
			if s == len(b) {
				return nil, true
			}
		}
		idx = grow(dst, 2*(m.groups+1))
		end, runEnd, matched := m.from(b, s, idx, &budget)
		if budget < 0 {
			return nil, false
		}
		if matched {
			idx[0], idx[1] = s, end
			return idx, true
		}
		if m.begin {
			return nil, true
		}
		// Every start inside the first piece's run ends it where this
		// one did and fails alike (an unbounded run only).
		if first.lit == nil && first.max == -1 && runEnd > s {
			s = runEnd
		}
		s++
	}
	return nil, true
}

// Match reports whether b holds a match; ok as for FindSubmatchIndex.
func (m *Matcher) Match(b []byte) (matched, ok bool) {
	var buf [16]int
	i, ok := m.FindSubmatchIndex(buf[:0], b)
	return i != nil, ok
}

// from tries a match starting at s, setting the groups' places in idx;
// it returns where the match ends and where the first piece's run ended.
func (m *Matcher) from(b []byte, s int, idx []int, budget *int) (end, runEnd int, ok bool) {
	for i := range idx {
		idx[i] = -1
	}
	pos := s
	runEnd = s
	for i := range m.pieces {
		p := &m.pieces[i]
		for _, g := range p.open {
			idx[2*g] = pos
		}
		if p.lit != nil {
			*budget -= len(p.lit)
			if !bytes.HasPrefix(b[pos:], p.lit) {
				return 0, runEnd, false
			}
			pos += len(p.lit)
		} else {
			n, limit := 0, len(b)-pos
			if p.max >= 0 && p.max < limit {
				limit = p.max
			}
			for n < limit && p.class[b[pos+n]] {
				n++
			}
			*budget -= n + 1
			if i == 0 {
				runEnd = pos + n
			}
			if n < p.min {
				return 0, runEnd, false
			}
			pos += n
		}
		for _, g := range p.close {
			idx[2*g+1] = pos
		}
		if *budget < 0 {
			return 0, runEnd, false
		}
	}
	if m.end && pos != len(b) {
		return 0, runEnd, false
	}
	return pos, runEnd, true
}

func grow(dst []int, n int) []int {
	if cap(dst) < n {
		return make([]int, n)
	}
	return dst[:n]
}
